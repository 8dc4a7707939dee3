#!/usr/bin/env python3
"""Reference outputs of detrain's layers, computed with JAX (jax.nn, jax.lax, jax.random, optax).

Each case is a .dt function `f` using one layer, its inputs, and the output JAX computes with the
formula detrain documents for that layer (docs/language.md). tests/frontend/layers_test.cc lowers
each `f` to IR, runs it on the reference interpreter and compares.

Usage: pip install jax optax; python3 tools/jax_layer_vectors.py > tests/frontend/testdata/layer_vectors.json
"""
import json
import sys

import jax
import jax.numpy as jnp
import numpy as np
import optax

jax.config.update("jax_enable_x64", False)
rng = np.random.default_rng(2024)


def f32(*shape, scale=1.0):
    return (rng.standard_normal(shape) * scale).astype(np.float32)


def enc(a):
    a = np.asarray(a)
    if a.dtype == np.float32:
        return {"dtype": "f32", "shape": list(a.shape), "bits": [int(v) for v in a.view(np.uint32).ravel()]}
    if a.dtype in (np.int32, np.uint32):
        return {"dtype": "s32" if a.dtype == np.int32 else "u32", "shape": list(a.shape), "values": [int(v) for v in a.ravel()]}
    raise TypeError(a.dtype)


CASES = []


def case(name, signature, body, inputs, fn):
    out = fn(*[jnp.asarray(v) for v in inputs.values()])
    CASES.append({"name": name, "program": f"def f({signature}] {{\n  return {body}\n}}\n",
                  "inputs": {k: enc(v) for k, v in inputs.items()}, "output": enc(np.asarray(out))})


x23 = f32(2, 3)
case("relu", "x: f32[2, 3]) -> f32[2, 3", "relu(x)", {"x": x23}, jax.nn.relu)
case("gelu", "x: f32[2, 3]) -> f32[2, 3", "gelu(x)", {"x": x23}, lambda x: jax.nn.gelu(x, approximate=True))
case("tanh", "x: f32[2, 3]) -> f32[2, 3", "tanh(x)", {"x": x23}, jnp.tanh)
case("sigmoid", "x: f32[2, 3]) -> f32[2, 3", "sigmoid(x)", {"x": x23}, jax.nn.sigmoid)
case("softmax", "x: f32[2, 3]) -> f32[2, 3", "softmax(x)", {"x": x23}, jax.nn.softmax)
case("log_softmax", "x: f32[2, 3]) -> f32[2, 3", "log_softmax(x, axis = 0)", {"x": x23}, lambda x: jax.nn.log_softmax(x, axis=0))
labels = np.array([2, 0], dtype=np.int32)
case("softmax_cross_entropy", "x: f32[2, 3], y: s32[2]) -> f32[2", "softmax_cross_entropy(x, y)",
     {"x": x23, "y": labels}, optax.softmax_cross_entropy_with_integer_labels)
t01 = (rng.random((2, 3)) > 0.5).astype(np.float32)
case("sigmoid_binary_cross_entropy", "x: f32[2, 3], t: f32[2, 3]) -> f32[2, 3", "sigmoid_binary_cross_entropy(x, t)",
     {"x": x23, "t": t01}, optax.sigmoid_binary_cross_entropy)
case("mse", "x: f32[2, 3], t: f32[2, 3]) -> f32[", "mse(x, t)", {"x": x23, "t": f32(2, 3)}, lambda p, t: jnp.mean((p - t) ** 2))
x234 = f32(2, 3, 4)
case("mean_axes", "x: f32[2, 3, 4]) -> f32[3", "mean(x, axis = [0, -1])", {"x": x234}, lambda x: jnp.mean(x, axis=(0, 2)))
case("sum_all", "x: f32[2, 3, 4]) -> f32[", "sum(x)", {"x": x234}, jnp.sum)
case("broadcast_arith", "x: f32[2, 3, 4], b: f32[4]) -> f32[2, 3, 4", "(x - b) * 2 / (b * b + 1)",
     {"x": x234, "b": f32(4)}, lambda x, b: (x - b) * 2 / (b * b + 1))
case("matmul", "x: f32[2, 3, 4], w: f32[4, 5]) -> f32[2, 3, 5", "x @ w", {"x": x234, "w": f32(4, 5)}, lambda x, w: x @ w)


def layer_norm(x, g, b, eps=1e-5):  # two-pass variance, as detrain computes it
    mean = jnp.mean(x, axis=-1, keepdims=True)
    c = x - mean
    var = jnp.mean(c * c, axis=-1, keepdims=True)
    return c * jax.lax.rsqrt(var + eps) * g + b


case("layer_norm", "x: f32[2, 3, 4], g: f32[4], b: f32[4]) -> f32[2, 3, 4", "layer_norm(x, g, b)",
     {"x": x234, "g": f32(4), "b": f32(4)}, layer_norm)
img = f32(2, 6, 6, 3)
ker = f32(3, 3, 3, 4, scale=0.5)
for stride, pad in ((1, "SAME"), (2, "SAME"), (1, "VALID"), (2, "VALID")):
    oh = (6 + stride - 1) // stride if pad == "SAME" else (6 - 3) // stride + 1
    case(f"conv2d_s{stride}_{pad}", f"x: f32[2, 6, 6, 3], k: f32[3, 3, 3, 4]) -> f32[2, {oh}, {oh}, 4",
         f'conv2d(x, k, stride = {stride}, padding = "{pad}")', {"x": img, "k": ker},
         lambda x, k, s=stride, p=pad: jax.lax.conv_general_dilated(x, k, (s, s), p, dimension_numbers=("NHWC", "HWIO", "NHWC")))
case("max_pool", "x: f32[2, 6, 6, 3]) -> f32[2, 3, 3, 3", "max_pool(x)", {"x": img},
     lambda x: jax.lax.reduce_window(x, -jnp.inf, jax.lax.max, (1, 2, 2, 1), (1, 2, 2, 1), "VALID"))
case("avg_pool_s1", "x: f32[2, 6, 6, 3]) -> f32[2, 4, 4, 3", "avg_pool(x, window = 3, stride = 1)", {"x": img},
     lambda x: jax.lax.reduce_window(x, 0.0, jax.lax.add, (1, 3, 3, 1), (1, 1, 1, 1), "VALID") / 9)
case("reshape_flatten", "x: f32[2, 3, 4]) -> f32[2, 12", "flatten(reshape(x, [2, 4, -1]))", {"x": x234}, lambda x: x.reshape(2, 12))
table = f32(7, 5)
ids = np.array([[1, 6, 0], [3, 3, 2]], dtype=np.int32)
case("embedding", "t: f32[7, 5], i: s32[2, 3]) -> f32[2, 3, 5", "embedding(t, i)", {"t": table, "i": ids}, lambda t, i: jnp.take(t, i, axis=0))


def attention(x, wq, wk, wv, wo, heads=2):
    b, t, d = x.shape
    dh = d // heads
    split = lambda w: (x @ w).reshape(b, t, heads, dh).transpose(0, 2, 1, 3)
    q, k, v = split(wq), split(wk), split(wv)
    s = jnp.einsum("bhqd,bhkd->bhqk", q, k) / jnp.sqrt(jnp.float32(dh))
    mask = jnp.tril(jnp.ones((t, t), bool))
    s = jnp.where(mask, s, -jnp.inf)
    p = jax.nn.softmax(s, axis=-1)
    o = jnp.einsum("bhqk,bhkd->bhqd", p, v).transpose(0, 2, 1, 3).reshape(b, t, d)
    return o @ wo


case("attention", "x: f32[2, 3, 4], q: f32[4, 4], k: f32[4, 4], v: f32[4, 4], o: f32[4, 4]) -> f32[2, 3, 4",
     "attention(x, q, k, v, o, heads = 2)", {"x": x234, "q": f32(4, 4), "k": f32(4, 4), "v": f32(4, 4), "o": f32(4, 4)}, attention)
logits = f32(5, 4)
lab = np.array([0, 1, 2, 3, 1], dtype=np.int32)
case("accuracy", "x: f32[5, 4], y: s32[5]) -> f32[", "accuracy(x, y)", {"x": logits, "y": lab},
     lambda x, y: jnp.mean((jnp.argmax(x, -1) == y).astype(jnp.float32)))

# Dropout: bits from jax.random in the default (partitionable) mode; Flax's formula.
key = jax.random.key_data(jax.random.key(7))
xd = f32(4, 8)
keyarr = np.asarray(key, dtype=np.uint32)


def dropout(x, k):
    keep = 1.0 - 0.25
    mask = jax.random.bernoulli(jax.random.wrap_key_data(k), keep, x.shape)
    return jax.lax.select(mask, x / keep, jnp.zeros_like(x))


case("dropout", "x: f32[4, 8], k: key) -> f32[4, 8", "dropout(x, rate = 0.25, key = k)", {"x": xd, "k": keyarr}, dropout)
case("dropout_fold_in", "x: f32[4, 8], k: key) -> f32[4, 8", "dropout(x, rate = 0.25, key = fold_in(k, 3))",
     {"x": xd, "k": keyarr}, lambda x, k: dropout(x, jax.random.key_data(jax.random.fold_in(jax.random.wrap_key_data(k), 3))))

json.dump({"generator": "tools/jax_layer_vectors.py", "jax": jax.__version__, "optax": optax.__version__, "cases": CASES},
          sys.stdout, separators=(",", ":"), sort_keys=True)
sys.stdout.write("\n")
