#!/usr/bin/env python3
"""The compile time and first call of JAX's jitted train step (trace + compile + one step) for the models that
bench/compile_scale/gen.py writes as .dt programs, for bench/compile_scale.sh.

  jax_first_call.py transformer BLOCKS WIDTH [CONTEXT]
  jax_first_call.py mlp LAYERS WIDTH
  jax_first_call.py dense DIMS BATCH        e.g. dense 1024,4096,4096,1024,10 128 (bench/memory's)

Same shapes, layers and optimizer as the generated program (pre-norm blocks, causal attention,
tanh gelu, adam(1e-3); batch 32 of CONTEXT tokens; the MLP: 30 features, relu, 2 classes, batch
64). JAX gets the whole batch in one step (detrain's step splits it into 8 canonical shards).
Prints one line: `compile_ms MS first_call_ms MS peak_rss_kb KB` (compile: trace, lowering and
XLA's compile, `jit(...).lower(...).compile()`; first call: that and one step). Run with the peers' venv
(bench/peers/setup.sh), never from detrain.
With STEADY_STEPS=N in the environment, then also the steady state as bench/peers/models_jax.py
measures it — the step jitted with the parameters and optimizer state donated, one warm-up call,
then N timed steps — as a second line: `step_ms MEDIAN step_min_ms MIN steps N`.
"""
import os
import resource
import sys
import time

import jax
import jax.numpy as jnp
import numpy as np
import optax


def layer_norm(x, g, b, eps=1e-5):
    m = jnp.mean(x, axis=-1, keepdims=True)
    v = jnp.mean(jnp.square(x - m), axis=-1, keepdims=True)
    return (x - m) / jnp.sqrt(v + eps) * g + b


def attention(x, wq, wk, wv, wo, heads):
    n, t, d = x.shape
    split = lambda y: y.reshape(n, t, heads, d // heads).transpose(0, 2, 1, 3)
    q, k, v = split(x @ wq), split(x @ wk), split(x @ wv)
    s = q @ k.transpose(0, 1, 3, 2) / np.sqrt(d // heads)
    s = jnp.where(jnp.tril(jnp.ones((t, t), bool)), s, -jnp.inf)
    o = jax.nn.softmax(s, axis=-1) @ v
    return o.transpose(0, 2, 1, 3).reshape(n, t, d) @ wo


def transformer(blocks, width, context):
    heads, vocab = max(1, width // 64), 256
    key = jax.random.key(0)
    init = jax.nn.initializers.glorot_uniform()
    ks = iter(jax.random.split(key, 8 * blocks + 8))
    p = {"embed": 0.02 * jax.random.normal(next(ks), (vocab, width)),
         "pos": 0.02 * jax.random.normal(next(ks), (context, width)),
         "lnf_g": jnp.ones(width), "lnf_b": jnp.zeros(width),
         "unembed": init(next(ks), (width, vocab)), "blocks": []}
    for _ in range(blocks):
        p["blocks"].append({
            "ln1_g": jnp.ones(width), "ln1_b": jnp.zeros(width),
            "wq": init(next(ks), (width, width)), "wk": init(next(ks), (width, width)),
            "wv": init(next(ks), (width, width)), "wo": init(next(ks), (width, width)),
            "ln2_g": jnp.ones(width), "ln2_b": jnp.zeros(width),
            "w_up": init(next(ks), (width, 4 * width)), "b_up": jnp.zeros(4 * width),
            "w_down": init(next(ks), (4 * width, width)), "b_down": jnp.zeros(width)})

    def loss(p, x, y):
        h = p["embed"][x] + p["pos"]
        for b in p["blocks"]:
            h = h + attention(layer_norm(h, b["ln1_g"], b["ln1_b"]), b["wq"], b["wk"], b["wv"],
                              b["wo"], heads)
            u = layer_norm(h, b["ln2_g"], b["ln2_b"]) @ b["w_up"] + b["b_up"]
            h = h + jax.nn.gelu(u, approximate=True) @ b["w_down"] + b["b_down"]
        logits = layer_norm(h, p["lnf_g"], p["lnf_b"]) @ p["unembed"]
        return jnp.mean(optax.softmax_cross_entropy_with_integer_labels(logits, y))

    rng = np.random.default_rng(0)
    x = jnp.asarray(rng.integers(0, vocab, (32, context)), jnp.int32)
    y = jnp.asarray(rng.integers(0, vocab, (32, context)), jnp.int32)
    return p, loss, x, y


def mlp(layers, width):
    return dense([30] + [width] * (layers - 1) + [2], 64)


def dense(dims, batch):
    """An MLP of dims (relu between layers), glorot weights, and a batch of normal features."""
    layers = len(dims) - 1
    init = jax.nn.initializers.glorot_uniform()
    ks = jax.random.split(jax.random.key(0), layers)
    p = [(init(ks[i], (dims[i], dims[i + 1])), jnp.zeros(dims[i + 1])) for i in range(layers)]

    def loss(p, x, y):
        h = x
        for w, b in p[:-1]:
            h = jax.nn.relu(h @ w + b)
        w, b = p[-1]
        return jnp.mean(optax.softmax_cross_entropy_with_integer_labels(h @ w + b, y))

    rng = np.random.default_rng(0)
    x = jnp.asarray(rng.standard_normal((batch, dims[0])), jnp.float32)
    y = jnp.asarray(rng.integers(0, dims[-1], batch), jnp.int32)
    return p, loss, x, y


def main(argv):
    if argv[1] == "transformer":
        params, loss, x, y = transformer(int(argv[2]), int(argv[3]),
                                         int(argv[4]) if len(argv) > 4 else 32)
    elif argv[1] == "dense":
        params, loss, x, y = dense([int(d) for d in argv[2].split(",")], int(argv[3]))
    else:
        params, loss, x, y = mlp(int(argv[2]), int(argv[3]))
    opt = optax.adam(1e-3)
    state = opt.init(params)
    jax.block_until_ready((params, state))

    def step_fn(params, state, x, y):
        value, grads = jax.value_and_grad(loss)(params, x, y)
        updates, state = opt.update(grads, state, params)
        return optax.apply_updates(params, updates), state, value

    step = jax.jit(step_fn)

    start = time.perf_counter()
    compiled = step.lower(params, state, x, y).compile()  # trace, lower, XLA compile
    compile_ms = (time.perf_counter() - start) * 1e3
    out = compiled(params, state, x, y)
    jax.block_until_ready(out)
    ms = (time.perf_counter() - start) * 1e3
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(f"compile_ms {compile_ms:.0f} first_call_ms {ms:.0f} peak_rss_kb {rss}")
    steady = int(os.environ.get("STEADY_STEPS", "0"))
    if steady > 0:
        times = donated_step_times(step_fn, params, state, x, y, steady)
        print(f"step_ms {np.median(times):.1f} step_min_ms {min(times):.1f} steps {steady}")


def donated_step_times(step_fn, params, state, x, y, steps):
    """ms of each of `steps` calls of `step_fn` jitted with the parameters and state donated, as
    bench/peers/models_jax.py measures a step: after one untimed call (the compile)."""
    donated = jax.jit(step_fn, donate_argnums=(0, 1))
    p, s = jax.tree_util.tree_map(jnp.copy, (params, state))
    p, s, value = donated(p, s, x, y)  # compiles; not timed
    jax.block_until_ready(value)
    times = []
    for _ in range(steps):
        t0 = time.perf_counter()
        p, s, value = donated(p, s, x, y)
        jax.block_until_ready(value)
        times.append((time.perf_counter() - t0) * 1e3)
    return times

if __name__ == "__main__":
    main(sys.argv)
