#!/usr/bin/env python3
"""A small causal transformer over bytes, its layers run by lax.scan — exported for detrain.

Plain JAX and optax: two pre-norm blocks (single-head causal attention and an MLP) with their
parameters stacked along a leading axis and applied by jax.lax.scan, which JAX lowers to an HLO
`while` loop (detrain's unroll-while pass unrolls it: the trip count is known). The text is the
GPL-3 licence that Debian ships (/usr/share/common-licenses/GPL-3), cut into rows of 32 bytes as
detrain's `text` data source does.

    .venv-jax/bin/python examples/jax/transformer_scan/train.py
    detrain run examples/jax/transformer_scan/run.json --attest -o /tmp/tf-bundle
    detrain verify /tmp/tf-bundle
"""
import os
import sys

import jax
import jax.numpy as jnp
import optax

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "..", "tools"))
import export_jax  # noqa: E402

TEXT = "/usr/share/common-licenses/GPL-3"
CONTEXT, VOCAB, WIDTH, LAYERS, HIDDEN = 32, 256, 32, 2, 64
BATCH, STEPS, SEED = 16, 100, 0


def init_params(key):
    ks = jax.random.split(key, 6)
    normal = jax.nn.initializers.normal(0.02)
    stack = lambda k, shape: normal(k, (LAYERS,) + shape)  # noqa: E731
    return {
        "embed": normal(ks[0], (VOCAB, WIDTH)),
        "position": normal(ks[1], (CONTEXT, WIDTH)),
        "blocks": {
            "qkv": stack(ks[2], (WIDTH, 3 * WIDTH)),
            "out": stack(ks[3], (WIDTH, WIDTH)),
            "up": stack(ks[4], (WIDTH, HIDDEN)),
            "down": stack(ks[5], (HIDDEN, WIDTH)),
            "norm1": jnp.ones((LAYERS, WIDTH)),
            "norm2": jnp.ones((LAYERS, WIDTH)),
        },
        "final_norm": jnp.ones((WIDTH,)),
    }


def layer_norm(x, scale):
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    return (x - mean) * jax.lax.rsqrt(var + 1e-5) * scale


def block(h, p):
    x = layer_norm(h, p["norm1"])
    q, k, v = jnp.split(x @ p["qkv"], 3, axis=-1)
    scores = jnp.einsum("btd,bsd->bts", q, k) / jnp.sqrt(float(WIDTH))
    causal = jnp.tril(jnp.ones((CONTEXT, CONTEXT), bool))
    scores = jnp.where(causal, scores, -1e9)
    h = h + jnp.einsum("bts,bsd->btd", jax.nn.softmax(scores, axis=-1), v) @ p["out"]
    x = layer_norm(h, p["norm2"])
    return h + jax.nn.gelu(x @ p["up"], approximate=True) @ p["down"], None


def loss_fn(params, tokens, targets):
    h = params["embed"][tokens] + params["position"]
    h, _ = jax.lax.scan(block, h, params["blocks"])
    logits = layer_norm(h, params["final_norm"]) @ params["embed"].T
    return optax.softmax_cross_entropy_with_integer_labels(logits, targets).mean()


optimizer = optax.adam(1e-3)


def train_step(params, opt_state, tokens, targets):
    loss, grads = jax.value_and_grad(loss_fn)(params, tokens, targets)
    updates, opt_state = optimizer.update(grads, opt_state, params)
    return optax.apply_updates(params, updates), opt_state, loss


def main():
    x, y = export_jax.read_text(TEXT, CONTEXT)
    params = init_params(jax.random.PRNGKey(7))
    opt_state = optimizer.init(params)
    data = {"name": "text", "as": "licence", "path": TEXT, "context": CONTEXT, "validation": 0}
    export_jax.export_train_step(train_step, params, opt_state, features=x, labels=y, data=data,
                                 out_dir=HERE, batch=BATCH, steps=STEPS, seed=SEED,
                                 checkpoint_every=25, takes_key=False,
                                 function_name="train_step")
    losses = export_jax.reference_run(train_step, params, opt_state, features=x, labels=y,
                                      batch=BATCH, steps=STEPS, seed=SEED, takes_key=False)
    export_jax.write_reference(os.path.join(HERE, "jax_losses.json"), losses)
    print(f"exported to {HERE}; JAX loss {losses[0]:.4f} -> {losses[-1]:.4f}")


if __name__ == "__main__":
    main()
