#!/usr/bin/env python3
"""The MLP with dropout of ../mlp_dropout with its parameters, and so adam's state, in bfloat16.

Each bf16 tensor is stored in initial_state.safetensors as F32 of the same values (detrain holds
bf16 as f32 and rounds every bf16 op of the step to bf16: docs/ir.md "bf16 and f16"); the
matmuls promote to f32 as JAX does for an f32 input. The last lines export the step
(tools/export_jax.py) and record JAX's own losses for the same batches and keys.

    .venv-jax/bin/python examples/jax/mlp_bf16/train.py        # writes run.json and friends here
    detrain run examples/jax/mlp_bf16/run.json --attest -o /tmp/mlp-bf16-bundle
    detrain verify /tmp/mlp-bf16-bundle
"""
import os
import sys

import jax
import jax.numpy as jnp
import optax

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "..", "tools"))
import export_jax  # noqa: E402

DROPOUT = 0.2
BATCH, STEPS, SEED = 64, 200, 0


def init_params(key):
    k1, k2 = jax.random.split(key)
    glorot = jax.nn.initializers.glorot_uniform()
    return {"dense1": {"w": glorot(k1, (64, 128)), "b": jnp.zeros((128,))},
            "dense2": {"w": glorot(k2, (128, 10)), "b": jnp.zeros((10,))}}


def loss_fn(params, x, y, key):
    h = jax.nn.relu((x / 16.0) @ params["dense1"]["w"] + params["dense1"]["b"])
    keep = jax.random.bernoulli(key, 1.0 - DROPOUT, h.shape)
    h = jnp.where(keep, h / (1.0 - DROPOUT), 0.0)
    logits = h @ params["dense2"]["w"] + params["dense2"]["b"]
    return optax.softmax_cross_entropy_with_integer_labels(logits, y).mean()


optimizer = optax.adam(1e-3)


def train_step(params, opt_state, x, y, key):
    loss, grads = jax.value_and_grad(loss_fn)(params, x, y, key)
    updates, opt_state = optimizer.update(grads, opt_state, params)
    return optax.apply_updates(params, updates), opt_state, loss


def main():
    x, y = export_jax.read_csv(os.path.join(HERE, "..", "..", "digits", "digits.csv"))
    params = jax.tree_util.tree_map(lambda t: t.astype(jnp.bfloat16),
                                    init_params(jax.random.PRNGKey(42)))
    opt_state = optimizer.init(params)
    data = {"name": "csv", "as": "digits", "path": "../../digits/digits.csv", "label": -1,
            "skip_rows": 0, "standardize": False, "validation": 0}
    export_jax.export_train_step(train_step, params, opt_state, features=x, labels=y, data=data,
                                 out_dir=HERE, batch=BATCH, steps=STEPS, seed=SEED,
                                 checkpoint_every=50, function_name="train_step")
    losses = export_jax.reference_run(train_step, params, opt_state, features=x, labels=y,
                                      batch=BATCH, steps=STEPS, seed=SEED)
    export_jax.write_reference(os.path.join(HERE, "jax_losses.json"), losses)
    print(f"exported to {HERE}; JAX loss {losses[0]:.4f} -> {losses[-1]:.4f}")


if __name__ == "__main__":
    main()
