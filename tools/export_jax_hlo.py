#!/usr/bin/env python3
"""Export real HLO text from JAX, with inputs and JAX's outputs, as detrain IR test data.

Writes, for each function below, tests/compiler/interp/testdata/jax/<name>/:
  module.hlo        the pre-optimization HLO text of jax.jit(f).lower(*args) (XLA HLO dialect)
  in/p<i>.npy       the i-th entry parameter (JAX numbers parameters in flattened-argument order)
  out.npy           JAX's result, or out0.npy, out1.npy, ... when the result is a tuple
and manifest.json with the JAX/jaxlib versions. The tests in tests/compiler/interp/jax_test.cc
parse, verify and interpret each module and compare with JAX (docs/ir.md "Tests against JAX").

Usage: python3 tools/export_jax_hlo.py [--out DIR]     (needs `pip install jax` — CPU is enough)
Inputs come from numpy's PCG64 generator with fixed seeds, so the files are reproducible for a
given JAX version. This script is a generator of reference vectors, never a runtime dependency.
"""
import argparse
import json
import os
import shutil

import jax
import jax.numpy as jnp
import numpy as np

jax.config.update("jax_platforms", "cpu")


def mlp_forward(params, x):
    w1, b1, w2, b2 = params
    h = jnp.maximum(x @ w1 + b1, 0.0)
    return h @ w2 + b2


def softmax_cross_entropy(logits, labels):
    logp = jax.nn.log_softmax(logits)
    onehot = jax.nn.one_hot(labels, logits.shape[-1])
    return -jnp.mean(jnp.sum(logp * onehot, axis=-1))


def mlp_loss(params, x, labels):
    return softmax_cross_entropy(mlp_forward(params, x), labels)


def data_movement(x, n, i):
    """Only ops whose results are exact: JAX and detrain must agree bit for bit."""
    a = jnp.transpose(x)[::-1, 1:3]                          # transpose, reverse, slice
    b = jnp.pad(x, ((1, 0), (0, 2)))[:, :2]                   # pad, slice
    c = jnp.concatenate([a, b], axis=0)                       # concatenate
    d = jnp.where(c > 0, c, -c)                               # compare, select, negate
    e = jnp.maximum(jnp.floor(c * 4.0), jnp.round(c * 2.0))  # floor, round-nearest-even
    g = x[n % 4]                                              # gather (rows)
    s = jnp.zeros((5,), jnp.float32).at[n].add(1.5)           # scatter-add
    ds = jax.lax.dynamic_slice(x, (i, 1), (2, 3))             # dynamic-slice
    k = (n * 3 - 7) // 2                                      # integer arithmetic
    oh = jax.nn.one_hot(n, 5)                                 # iota, compare, convert
    # Division by a constant is avoided: XLA rewrites x / 3 as x * (1/3), which is not exact.
    return c, d, e, g, s, ds, k, oh, jnp.sqrt(jnp.abs(x)), x / (jnp.abs(x) + 1.0)


def sort_special(x):
    # Sort, stable argsort and top_k along rows holding NaN, -0 and +0, infinities and ties:
    # XLA's total order and stability, which detrain's sorting network must reproduce.
    return (jnp.sort(x, axis=1), jnp.argsort(x, axis=1, stable=True), *jax.lax.top_k(x, 5),
            jnp.sort(x, axis=0))


def special_rows(rng):
    f32 = np.float32
    x = rng.integers(-4, 5, size=(3, 70)).astype(f32)  # many ties
    x[0, [3, 40]] = np.nan
    x[0, 10] = -np.nan
    x[1, [5, 6]] = [-0.0, 0.0]
    x[1, [50, 51]] = [0.0, -0.0]
    x[1, 7] = np.inf
    x[2, 8] = -np.inf
    # Not a subnormal: JAX's CPU run treats one as zero (the comparator's x == 0 holds for
    # 1e-45 there, as with denormals-are-zero), detrain keeps IEEE semantics (docs/jax.md).
    x[2, 9] = np.float32(2e-38)
    return x


def make_cases():
    rng = np.random.default_rng(20261129)
    f32 = np.float32
    params = [
        (rng.standard_normal((16, 64)) * 0.25).astype(f32),
        (rng.standard_normal(64) * 0.1).astype(f32),
        (rng.standard_normal((64, 10)) * 0.125).astype(f32),
        (rng.standard_normal(10) * 0.1).astype(f32),
    ]
    x = rng.standard_normal((96, 16)).astype(f32)
    labels = rng.integers(0, 10, size=96).astype(np.int32)
    logits = (rng.standard_normal((96, 10)) * 2).astype(f32)
    xm = rng.standard_normal((4, 6)).astype(f32)
    n = np.array([0, 3, 1, 3, 4, 2, 7], np.int32)
    return {
        "mlp_forward": (mlp_forward, (params, x)),
        "softmax_cross_entropy": (softmax_cross_entropy, (logits, labels)),
        "mlp_grad": (jax.grad(mlp_loss), (params, x, labels)),
        "data_movement": (data_movement, (xm, n, np.int32(1))),
        "sort_special": (sort_special, (special_rows(np.random.default_rng(7)),)),
    }


def export(name, fn, args, out_dir):
    d = os.path.join(out_dir, name)
    if os.path.exists(d):
        shutil.rmtree(d)
    os.makedirs(os.path.join(d, "in"))
    lowered = jax.jit(fn).lower(*args)
    with open(os.path.join(d, "module.hlo"), "w") as f:
        f.write(lowered.as_text(dialect="hlo"))
    for i, leaf in enumerate(jax.tree_util.tree_leaves(args)):
        np.save(os.path.join(d, "in", f"p{i}.npy"), np.asarray(leaf))
    result = jax.jit(fn)(*args)
    leaves = jax.tree_util.tree_leaves(result)
    if isinstance(result, (tuple, list)):
        for i, leaf in enumerate(leaves):
            np.save(os.path.join(d, f"out{i}.npy"), np.asarray(leaf))
    else:
        np.save(os.path.join(d, "out.npy"), np.asarray(result))


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    default_out = os.path.join(here, "..", "tests", "compiler", "interp", "testdata", "jax")
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=default_out)
    out_dir = os.path.normpath(parser.parse_args().out)
    os.makedirs(out_dir, exist_ok=True)
    for name, (fn, args) in make_cases().items():
        export(name, fn, args, out_dir)
    import jaxlib
    manifest = {"generator": "tools/export_jax_hlo.py", "jax": jax.__version__,
                "jaxlib": jaxlib.__version__, "numpy": np.__version__,
                "functions": sorted(make_cases().keys())}
    with open(os.path.join(out_dir, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=2, sort_keys=True)
        f.write("\n")


if __name__ == "__main__":
    main()
