#!/usr/bin/env python3
"""Peak RSS of JAX's jitted train step for the models bench/memory/gen.py writes as .dt programs,
for bench/memory.sh.

  jax_peak.py mlp DIMS BATCH OPTIMIZER STEPS DONATE     e.g. mlp 1024,4096,4096,1024,10 128 adam 4 0
  jax_peak.py transformer BLOCKS WIDTH CONTEXT BATCH OPTIMIZER STEPS DONATE

Same shapes, layers and optimizer as the generated program, from bench/compile_scale/
jax_first_call.py: its `dense` MLP (relu, softmax cross-entropy) and its transformer (pre-norm,
causal, tanh gelu). OPTIMIZER: sgd, momentum (0.9) or adam, learning rate 1e-3. One step is a `jax.jit` of
value_and_grad + the optax update + apply_updates; with DONATE 1 the parameters and optimizer
state are donated (XLA updates them in place), with 0 they are not (JAX's default). The data is
synthetic (normal features, random labels) and the same every step. Prints
`params N peak_rss_kb KB`. Run with the peers' venv (bench/peers/setup.sh), never from detrain.
"""
import os
import resource
import sys

import jax
import jax.numpy as jnp
import numpy as np
import optax

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "compile_scale"))
import jax_first_call  # noqa: E402


def optimizer(name):
    return {"sgd": optax.sgd(1e-3), "momentum": optax.sgd(1e-3, momentum=0.9),
            "adam": optax.adam(1e-3)}[name]


def main(argv):
    if argv[1] == "mlp":
        dims = [int(d) for d in argv[2].split(",")]
        params, loss, x, y = jax_first_call.dense(dims, int(argv[3]))
        opt_name, steps, donate = argv[4], int(argv[5]), argv[6] == "1"
    else:
        blocks, width, context, batch = (int(a) for a in argv[2:6])
        params, loss, x, y = jax_first_call.transformer(blocks, width, context)
        x, y = x[:batch], y[:batch]
        opt_name, steps, donate = argv[6], int(argv[7]), argv[8] == "1"
    opt = optimizer(opt_name)
    state = opt.init(params)

    def step(params, state, x, y):
        value, grads = jax.value_and_grad(loss)(params, x, y)
        updates, state = opt.update(grads, state, params)
        return optax.apply_updates(params, updates), state, value

    step = jax.jit(step, donate_argnums=(0, 1) if donate else ())
    for _ in range(steps):
        params, state, value = step(params, state, x, y)
    jax.block_until_ready((params, state, value))
    count = sum(a.size for a in jax.tree_util.tree_leaves(params))
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(f"params {count} peak_rss_kb {rss}")


if __name__ == "__main__":
    main(sys.argv)
