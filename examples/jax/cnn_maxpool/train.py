#!/usr/bin/env python3
"""A CNN with max-pooling on the 8x8 digits, in plain JAX and optax — exported for detrain.

Two 3x3 convolutions (lax.conv_general_dilated, NHWC), each followed by a 2x2 max-pool with
stride 2 (lax.reduce_window): the pool's gradient is XLA's select-and-scatter, which detrain's
HLO reader expands into exact slices, compares and pads (docs/jax.md).

    .venv-jax/bin/python examples/jax/cnn_maxpool/train.py
    detrain run examples/jax/cnn_maxpool/run.json --attest -o /tmp/cnn-bundle
    detrain verify /tmp/cnn-bundle
"""
import os
import sys

import jax
import jax.numpy as jnp
import optax

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "..", "tools"))
import export_jax  # noqa: E402

BATCH, STEPS, SEED = 32, 150, 0


def init_params(key):
    k1, k2, k3 = jax.random.split(key, 3)
    he = jax.nn.initializers.he_normal()
    return {"conv1": {"k": he(k1, (3, 3, 1, 8)), "b": jnp.zeros((8,))},
            "conv2": {"k": he(k2, (3, 3, 8, 16)), "b": jnp.zeros((16,))},
            "dense": {"w": jax.nn.initializers.glorot_uniform()(k3, (64, 10)),
                      "b": jnp.zeros((10,))}}


def conv(x, k, b):
    y = jax.lax.conv_general_dilated(x, k, (1, 1), "SAME",
                                     dimension_numbers=("NHWC", "HWIO", "NHWC"))
    return jax.nn.relu(y + b)


def max_pool(x):
    return jax.lax.reduce_window(x, -jnp.inf, jax.lax.max, (1, 2, 2, 1), (1, 2, 2, 1), "VALID")


def loss_fn(params, images, labels):
    h = max_pool(conv(images / 16.0, params["conv1"]["k"], params["conv1"]["b"]))  # 4x4x8
    h = max_pool(conv(h, params["conv2"]["k"], params["conv2"]["b"]))              # 2x2x16
    logits = h.reshape((h.shape[0], -1)) @ params["dense"]["w"] + params["dense"]["b"]
    return optax.softmax_cross_entropy_with_integer_labels(logits, labels).mean()


optimizer = optax.adam(3e-3)


def train_step(params, opt_state, images, labels):
    loss, grads = jax.value_and_grad(loss_fn)(params, images, labels)
    updates, opt_state = optimizer.update(grads, opt_state, params)
    return optax.apply_updates(params, updates), opt_state, loss


def main():
    x, y = export_jax.read_csv(os.path.join(HERE, "..", "..", "digits", "digits.csv"))
    params = init_params(jax.random.PRNGKey(3))
    opt_state = optimizer.init(params)
    data = {"name": "csv", "as": "digits", "path": "../../digits/digits.csv", "label": -1,
            "skip_rows": 0, "standardize": False, "validation": 0}
    export_jax.export_train_step(train_step, params, opt_state, features=x, labels=y, data=data,
                                 out_dir=HERE, batch=BATCH, steps=STEPS, seed=SEED,
                                 checkpoint_every=50, takes_key=False, example_shape=(8, 8, 1),
                                 function_name="train_step")
    losses = export_jax.reference_run(train_step, params, opt_state, features=x, labels=y,
                                      batch=BATCH, steps=STEPS, seed=SEED, takes_key=False,
                                      example_shape=(8, 8, 1))
    export_jax.write_reference(os.path.join(HERE, "jax_losses.json"), losses)
    print(f"exported to {HERE}; JAX loss {losses[0]:.4f} -> {losses[-1]:.4f}")


if __name__ == "__main__":
    main()
