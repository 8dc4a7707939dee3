#!/usr/bin/env python3
"""Export a corpus of real JAX HLO text in four text forms and check which ones detrain takes.

For each function below (forward, grad and train step of common layers) this writes OUT/<name>/:
  lowered.hlo        jax.jit(f).lower(*args).as_text(dialect="hlo")              (pre-optimization)
  lowered_debug.hlo  jax.jit(f).lower(*args).as_text(dialect="hlo", debug_info=True)
                     (adds op_name metadata, stack_frame_id, and the FileNames / FunctionNames /
                     FileLocations / StackFrames tables after the HloModule line)
  compiled.hlo       jax.jit(f).lower(*args).compile().as_text()   (XLA CPU's optimized module:
                     fusions, copies, bitcasts, layouts; JAX always puts the debug tables in it)
  compiled_nodebug.hlo  the same with jax_traceback_in_locations_limit=0, which is the optimized
                     module without the FileNames/... tables and stack_frame_id (op_name stays), so
                     that what the optimizer emits can be told apart from the tables
  in/p<i>.npy        the i-th entry parameter (flattened-argument order, as export_jax_hlo.py)
  out.npy            JAX's result, or out0.npy, out1.npy, ... for several results
and OUT/manifest.json with the versions. With --detrain PATH it then runs
`detrain compile FILE --hashes` on every form and, where that passes, `detrain eval FILE --input
p<i>=... -o DIR`, compares with JAX (max ulp for floats, exact otherwise) and writes OUT/REPORT.md
and OUT/results.json.

Usage: python3 tools/export_jax_corpus.py [--out /tmp/jax_corpus] [--detrain PATH] [--only NAME,...]
       python3 tools/export_jax_corpus.py --check-only --detrain PATH   (reuse an export)
Needs jax, jaxlib (CPU), optax and flax; made with
  python3 -m venv .venv-jax && .venv-jax/bin/pip install jax==0.10.2 jaxlib==0.10.2 optax==0.2.8 \
      flax==0.12.8                  (about 30 s; numpy 2.4.6, ml_dtypes 0.7.0 come with them)
This script is a generator of reference vectors and a survey tool, never a runtime dependency.
"""
import argparse
import functools
import json
import os
import re
import shutil
import subprocess
import sys

import numpy as np

FORMS = ["lowered", "lowered_debug", "compiled", "compiled_nodebug"]


# ----------------------------------------------------------------------------------------------
# The functions
# ----------------------------------------------------------------------------------------------

def build_cases():
    import jax
    import jax.numpy as jnp
    from jax import lax
    import optax
    import flax.linen as nn

    rng = np.random.default_rng(20270101)
    f32 = np.float32

    def normal(*shape, scale=1.0):
        return (rng.standard_normal(shape) * scale).astype(f32)

    # --- dense / MLP with dict params (names like params['w1'] end up in metadata) -------------
    mlp_params = {"w1": normal(16, 32, scale=0.25), "b1": normal(32, scale=0.1),
                  "w2": normal(32, 10, scale=0.18), "b2": normal(10, scale=0.1)}
    x = normal(64, 16)
    labels = rng.integers(0, 10, size=64).astype(np.int32)
    onehot = np.eye(10, dtype=f32)[labels]

    def dense(w, b, x):
        return x @ w + b

    def mlp(p, x):
        h = jax.nn.relu(x @ p["w1"] + p["b1"])
        return h @ p["w2"] + p["b2"]

    def ce_onehot(logits, onehot):
        return -jnp.mean(jnp.sum(jax.nn.log_softmax(logits) * onehot, axis=-1))

    def ce_int_take_along(logits, labels):
        logp = jax.nn.log_softmax(logits)
        return -jnp.mean(jnp.take_along_axis(logp, labels[:, None], axis=-1))

    def ce_int_optax(logits, labels):
        return jnp.mean(optax.softmax_cross_entropy_with_integer_labels(logits, labels))

    def mlp_loss(p, x, onehot):
        return ce_onehot(mlp(p, x), onehot)

    def mlp_sgd_step(p, x, onehot):
        loss, g = jax.value_and_grad(mlp_loss)(p, x, onehot)
        return jax.tree_util.tree_map(lambda a, b: a - 0.1 * b, p, g), loss

    adam = optax.adam(1e-3)
    adam_state = jax.tree_util.tree_map(np.asarray, adam.init(mlp_params))

    def mlp_adam_step(p, s, x, labels):
        def loss_fn(p):
            return ce_int_optax(mlp(p, x), labels)
        loss, g = jax.value_and_grad(loss_fn)(p)
        upd, s = adam.update(g, s, p)
        return optax.apply_updates(p, upd), s, loss

    clip = optax.chain(optax.clip_by_global_norm(1.0), optax.sgd(0.1))
    clip_state = jax.tree_util.tree_map(np.asarray, clip.init(mlp_params))

    def mlp_clip_sgd_step(p, s, x, onehot):
        g = jax.grad(mlp_loss)(p, x, onehot)
        upd, s = clip.update(g, s, p)
        return optax.apply_updates(p, upd), s

    # --- activations -------------------------------------------------------------------------
    a = normal(8, 33, scale=3.0)

    def activations(a):
        return (jax.nn.relu(a), jax.nn.gelu(a, approximate=True), jax.nn.gelu(a, approximate=False),
                jnp.tanh(a), jax.nn.sigmoid(a), jax.nn.silu(a), jax.nn.softplus(a))

    def activations_sum(a):
        return sum(jnp.sum(t * (i + 1)) for i, t in enumerate(activations(a)))

    # --- logsumexp, layernorm ----------------------------------------------------------------
    def logsumexp(a):
        return jax.nn.logsumexp(a, axis=-1)

    ln_g, ln_b = (1 + normal(33, scale=0.1)), normal(33, scale=0.1)

    def layernorm(a, g, b):
        mu = jnp.mean(a, axis=-1, keepdims=True)
        var = jnp.mean((a - mu) ** 2, axis=-1, keepdims=True)
        return (a - mu) * lax.rsqrt(var + 1e-5) * g + b

    def layernorm_loss(a, g, b):
        return jnp.sum(jnp.sin(layernorm(a, g, b)))

    # --- conv / pooling ----------------------------------------------------------------------
    img = normal(2, 8, 8, 3)
    kern = normal(3, 3, 3, 4, scale=0.3)

    def conv2d(img, kern):
        return lax.conv_general_dilated(img, kern, (1, 1), "SAME",
                                        dimension_numbers=("NHWC", "HWIO", "NHWC"))

    def conv2d_loss(img, kern):
        return jnp.sum(jnp.tanh(conv2d(img, kern)))

    def maxpool(img):
        return lax.reduce_window(img, -jnp.inf, lax.max, (1, 2, 2, 1), (1, 2, 2, 1), "VALID")

    def maxpool_loss(img):
        return jnp.sum(maxpool(img) ** 2)

    def avgpool(img):
        return lax.reduce_window(img, 0.0, lax.add, (1, 2, 2, 1), (1, 2, 2, 1), "VALID") / 4.0

    def avgpool_loss(img):
        return jnp.sum(avgpool(img) ** 2)

    # --- flax CNN train step (conv + relu + max-pool + dense, adam) -----------------------------
    class CNN(nn.Module):
        @nn.compact
        def __call__(self, x):
            x = nn.Conv(4, (3, 3))(x)
            x = nn.relu(x)
            x = nn.max_pool(x, (2, 2), (2, 2))
            x = x.reshape((x.shape[0], -1))
            return nn.Dense(10)(x)

    cnn = CNN()
    cnn_params = jax.tree_util.tree_map(np.asarray, cnn.init(jax.random.PRNGKey(0), img))
    cnn_labels = rng.integers(0, 10, size=2).astype(np.int32)
    cnn_opt = optax.adam(1e-3)
    cnn_state = jax.tree_util.tree_map(np.asarray, cnn_opt.init(cnn_params))

    def flax_cnn_train_step(p, s, img, labels):
        def loss_fn(p):
            logits = cnn.apply(p, img)
            return jnp.mean(optax.softmax_cross_entropy_with_integer_labels(logits, labels))
        loss, g = jax.value_and_grad(loss_fn)(p)
        upd, s = cnn_opt.update(g, s, p)
        return optax.apply_updates(p, upd), s, loss

    # --- random inside jit -------------------------------------------------------------------
    key = np.asarray(jax.random.key_data(jax.random.PRNGKey(42)))  # uint32[2]

    def dropout(key, a):
        keep = jax.random.bernoulli(jax.random.wrap_key_data(key), 0.8, a.shape)
        return jnp.where(keep, a / 0.8, 0.0)

    def random_init(key):
        k1, k2 = jax.random.split(jax.random.wrap_key_data(key))
        return jax.random.normal(k1, (4, 5)), jax.random.uniform(k2, (6,))

    # --- loops -------------------------------------------------------------------------------
    rnn_wx, rnn_wh = normal(6, 8, scale=0.4), normal(8, 8, scale=0.3)
    seq = normal(5, 3, 6)   # time, batch, features

    def rnn_scan(wx, wh, seq):
        def cell(h, xt):
            h = jnp.tanh(xt @ wx + h @ wh)
            return h, h
        h0 = jnp.zeros((seq.shape[1], wh.shape[0]), jnp.float32)
        h, hs = lax.scan(cell, h0, seq)
        return h, hs

    def rnn_loss(wx, wh, seq):
        return jnp.sum(rnn_scan(wx, wh, seq)[0] ** 2)

    mat = normal(6, 6, scale=0.3)
    vec = normal(6)

    def fori_power_iteration(mat, vec):
        def body(i, v):
            w = mat @ v
            return w / jnp.sqrt(jnp.sum(w * w))
        return lax.fori_loop(0, 10, body, vec)

    def while_newton_sqrt(a):
        def cond(s):
            return jnp.logical_and(s[1] < 50, jnp.max(jnp.abs(s[0] * s[0] - a)) > 1e-4)
        def body(s):
            return (0.5 * (s[0] + a / s[0]), s[1] + 1)
        return lax.while_loop(cond, body, (jnp.ones_like(a), jnp.int32(0)))

    # --- argmax / sort / top-k / cumsum -------------------------------------------------------
    logits = normal(64, 10, scale=2.0)

    def argmax_accuracy(logits, labels):
        return jnp.mean((jnp.argmax(logits, axis=-1) == labels).astype(jnp.float32))

    def sort_topk(a):
        v, i = lax.top_k(a, 3)
        return jnp.sort(a, axis=-1), jnp.argsort(a, axis=-1), v, i

    def cumsum(a):
        return jnp.cumsum(a, axis=-1), jnp.cumprod(1.0 + 0.01 * a, axis=0)

    # --- embedding / attention ---------------------------------------------------------------
    emb = normal(50, 16, scale=0.5)
    tokens = rng.integers(0, 50, size=(4, 7)).astype(np.int32)

    def embedding(emb, tokens):
        return emb[tokens]

    def embedding_loss(emb, tokens):
        return jnp.sum(jnp.tanh(emb[tokens]))

    att = {"wq": normal(16, 16, scale=0.25), "wk": normal(16, 16, scale=0.25),
           "wv": normal(16, 16, scale=0.25), "wo": normal(16, 16, scale=0.25)}
    hx = normal(2, 7, 16)

    def attention(p, x):
        b, t, d = x.shape
        q = (x @ p["wq"]).reshape(b, t, 2, d // 2)
        k = (x @ p["wk"]).reshape(b, t, 2, d // 2)
        v = (x @ p["wv"]).reshape(b, t, 2, d // 2)
        s = jnp.einsum("bqhd,bkhd->bhqk", q, k) / np.sqrt(d // 2).astype(np.float32)
        mask = jnp.tril(jnp.ones((t, t), bool))
        s = jnp.where(mask, s, -1e9)
        w = jax.nn.softmax(s, axis=-1)
        o = jnp.einsum("bhqk,bkhd->bqhd", w, v).reshape(b, t, d)
        return layernorm(x + o @ p["wo"], 1.0, 0.0)

    att_target = normal(2, 7, 16)

    def attention_loss(p, x, target):
        # not mean(attention(p, x) ** 2): that of a layernorm output is ~1 whatever p is, and its
        # gradient is ~1e-7 of pure rounding noise
        return jnp.mean((attention(p, x) - target) ** 2)

    # --- low precision ------------------------------------------------------------------------
    w16 = normal(16, 8, scale=0.3)

    def bf16_matmul(x, w):
        y = x.astype(jnp.bfloat16) @ w.astype(jnp.bfloat16)
        return jax.nn.relu(y).astype(jnp.float32)

    def f16_casts(a):
        h = a.astype(jnp.float16)
        return (h * h + h).astype(jnp.float32), a.astype(jnp.bfloat16).astype(jnp.float32)

    def bf16_mlp_grad(p, x, onehot):
        def loss(p):
            q = jax.tree_util.tree_map(lambda t: t.astype(jnp.bfloat16), p)
            out = mlp(q, x.astype(jnp.bfloat16)).astype(jnp.float32)
            return ce_onehot(out, onehot)
        return jax.grad(loss)(p)

    # --- misc ----------------------------------------------------------------------------------
    def batchnorm_train(a, g, b):
        mu = jnp.mean(a, axis=0)
        var = jnp.var(a, axis=0)
        return (a - mu) / jnp.sqrt(var + 1e-5) * g + b, mu, var

    def sigmoid_bce(logits, targets):
        return jnp.mean(optax.sigmoid_binary_cross_entropy(logits, targets))

    targets = (rng.random((64, 10)) < 0.3).astype(f32)

    cases = {
        "dense_forward": (dense, (mlp_params["w1"], mlp_params["b1"], x)),
        "mlp_forward": (mlp, (mlp_params, x)),
        "mlp_grad": (jax.grad(mlp_loss), (mlp_params, x, onehot)),
        "mlp_sgd_step": (mlp_sgd_step, (mlp_params, x, onehot)),
        "mlp_adam_step_optax": (mlp_adam_step, (mlp_params, adam_state, x, labels)),
        "mlp_clip_global_norm_step": (mlp_clip_sgd_step, (mlp_params, clip_state, x, onehot)),
        "activations_forward": (activations, (a,)),
        "activations_grad": (jax.grad(activations_sum), (a,)),
        "ce_onehot_forward": (ce_onehot, (logits, onehot)),
        "ce_onehot_grad": (jax.grad(ce_onehot), (logits, onehot)),
        "ce_int_take_along_axis": (ce_int_take_along, (logits, labels)),
        "ce_int_take_along_axis_grad": (jax.grad(ce_int_take_along), (logits, labels)),
        "ce_int_optax": (ce_int_optax, (logits, labels)),
        "logsumexp_forward": (logsumexp, (a,)),
        "logsumexp_grad": (jax.grad(lambda a: jnp.sum(logsumexp(a))), (a,)),
        "layernorm_forward": (layernorm, (a, ln_g, ln_b)),
        "layernorm_grad": (jax.grad(layernorm_loss, argnums=(0, 1, 2)), (a, ln_g, ln_b)),
        "conv2d_forward": (conv2d, (img, kern)),
        "conv2d_grad": (jax.grad(conv2d_loss, argnums=(0, 1)), (img, kern)),
        "maxpool_forward": (maxpool, (img,)),
        "maxpool_grad": (jax.grad(maxpool_loss), (img,)),
        "avgpool_forward": (avgpool, (img,)),
        "avgpool_grad": (jax.grad(avgpool_loss), (img,)),
        "flax_cnn_train_step": (flax_cnn_train_step, (cnn_params, cnn_state, img, cnn_labels)),
        "dropout_random": (dropout, (key, a)),
        "random_init": (random_init, (key,)),
        "rnn_scan_forward": (rnn_scan, (rnn_wx, rnn_wh, seq)),
        "rnn_scan_grad": (jax.grad(rnn_loss, argnums=(0, 1)), (rnn_wx, rnn_wh, seq)),
        "fori_loop_power_iteration": (fori_power_iteration, (mat, vec)),
        "while_loop_newton": (while_newton_sqrt, (np.abs(vec) + 0.5,)),
        "argmax_accuracy": (argmax_accuracy, (logits, labels)),
        "sort_topk": (sort_topk, (logits[:8],)),
        "cumsum_cumprod": (cumsum, (a,)),
        "embedding_forward": (embedding, (emb, tokens)),
        "embedding_grad": (jax.grad(embedding_loss), (emb, tokens)),
        "attention_forward": (attention, (att, hx)),
        "attention_grad": (jax.grad(attention_loss), (att, hx, att_target)),
        "bf16_matmul": (bf16_matmul, (x, w16)),
        "f16_bf16_casts": (f16_casts, (a,)),
        "bf16_mlp_grad": (bf16_mlp_grad, (mlp_params, x, onehot)),
        "batchnorm_train": (batchnorm_train, (a, ln_g, ln_b)),
        "sigmoid_bce": (sigmoid_bce, (logits, targets)),
    }
    return cases


# ----------------------------------------------------------------------------------------------
# Export
# ----------------------------------------------------------------------------------------------

def export(name, fn, args, out_dir):
    import jax
    d = os.path.join(out_dir, name)
    if os.path.exists(d):
        shutil.rmtree(d)
    os.makedirs(os.path.join(d, "in"))
    texts = {}
    lowered = jax.jit(fn).lower(*args)
    texts["lowered"] = lowered.as_text(dialect="hlo")
    texts["lowered_debug"] = lowered.as_text(dialect="hlo", debug_info=True)
    texts["compiled"] = lowered.compile().as_text()
    old = jax.config.jax_traceback_in_locations_limit
    jax.config.update("jax_traceback_in_locations_limit", 0)
    try:
        # A fresh function object with the same name: jit's caches would otherwise hand back the
        # lowering made above, with its locations.
        fresh = functools.wraps(fn)(lambda *a: fn(*a))
        texts["compiled_nodebug"] = jax.jit(fresh).lower(*args).compile().as_text()
    finally:
        jax.config.update("jax_traceback_in_locations_limit", old)
    for form, text in texts.items():
        with open(os.path.join(d, form + ".hlo"), "w") as f:
            f.write(text)
    leaves = jax.tree_util.tree_leaves(args)
    for i, leaf in enumerate(leaves):
        np.save(os.path.join(d, "in", f"p{i}.npy"), as_npy(np.asarray(leaf)))
    result = jax.jit(fn)(*args)
    out_leaves = jax.tree_util.tree_leaves(result)
    if len(out_leaves) == 1 and not isinstance(result, (tuple, list, dict)):
        np.save(os.path.join(d, "out.npy"), np.asarray(result))
    else:
        for i, leaf in enumerate(out_leaves):
            np.save(os.path.join(d, f"out{i}.npy"), np.asarray(leaf))
    entry_params = len(re.findall(r"parameter\(\d+\)", entry_block(texts["lowered"])))
    return {"inputs": len(leaves), "outputs": len(out_leaves), "entry_parameters": entry_params}


def as_npy(a):
    """bf16 and f16 arrays as f32 (exact): detrain holds those formats as f32 values."""
    return a.astype(np.float32) if str(a.dtype) in HALF_DTYPES else a


HALF_DTYPES = ("bfloat16", "float16")


def entry_block(text):
    m = re.search(r"^ENTRY .*?^}", text, re.S | re.M)
    return m.group(0) if m else ""


# ----------------------------------------------------------------------------------------------
# Check with detrain
# ----------------------------------------------------------------------------------------------

def ordered_int(a):
    """Floats as integers in the order of the reals, so that differences count ulps."""
    a = np.ascontiguousarray(a)
    bits = {2: np.int16, 4: np.int32, 8: np.int64}[a.dtype.itemsize]
    i = a.view(bits).astype(np.int64)
    sign_mask = np.int64(1) << (8 * a.dtype.itemsize - 1)
    return np.where(i < 0, -(i & (sign_mask - 1)), i)


def compare(got, want):
    """(max ulp, tolerance ratio of tests/compiler/interp/jax_test.cc, note) for one output."""
    if got.shape != want.shape:
        return None, None, f"shape {got.shape} vs {want.shape}"
    if str(want.dtype) in HALF_DTYPES and got.dtype == np.float32:
        # detrain's f32 values of a bf16/f16 result: exact in the format, compared in its ulps.
        back = got.astype(want.dtype)
        if not np.array_equal(back.astype(np.float32), got, equal_nan=True):
            return None, None, f"values outside {want.dtype}"
        got = back
    if got.dtype != want.dtype:
        return None, None, f"dtype {got.dtype} vs {want.dtype}"
    if want.dtype.kind != "f" and str(want.dtype) not in HALF_DTYPES:
        return (0, 0.0, "ok") if np.array_equal(got, want) else (None, None, "values differ")
    if want.size == 0:
        return 0, 0.0, "ok"
    g64, w64 = got.astype(np.float64), want.astype(np.float64)
    gn, wn = np.isnan(g64), np.isnan(w64)
    if (gn != wn).any():
        return None, None, "NaN mismatch"
    ulp = np.abs(ordered_int(got)[~wn] - ordered_int(want)[~wn])
    fin = np.isfinite(w64)
    max_abs = np.max(np.abs(w64[fin])) if fin.any() else 0.0
    bound = 2e-6 * np.abs(w64) + 2e-7 * max_abs
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(g64 == w64, 0.0, np.abs(g64 - w64) / bound)
    ratio = ratio[~wn]
    return (int(ulp.max()) if ulp.size else 0), (float(ratio.max()) if ratio.size else 0.0), "ok"


def load_outputs(d):
    if os.path.exists(os.path.join(d, "out.npy")):
        return [np.load(os.path.join(d, "out.npy"))]
    outs, i = [], 0
    while os.path.exists(os.path.join(d, f"out{i}.npy")):
        outs.append(np.load(os.path.join(d, f"out{i}.npy")))
        i += 1
    return outs


def first_error_line(p):
    for line in (p.stderr + "\n" + p.stdout).splitlines():
        if line.strip():
            return line.strip()
    return ""


def error_position(path, msg):
    """(line number, column, source line) of FILE:LINE:COLUMN in an error message."""
    m = re.search(re.escape(os.path.basename(path)) + r":(\d+):(\d+):", msg)
    if not m:
        return None, None, None
    lineno, col = int(m.group(1)), int(m.group(2))
    with open(path) as f:
        lines = f.read().splitlines()
    return lineno, col, (lines[lineno - 1] if 1 <= lineno <= len(lines) else None)


DEBUG_TABLES = ("FileNames", "FunctionNames", "FileLocations", "StackFrames")


def classify(msg, src):
    """A short cause name for one detrain error message (and the source line it points at)."""
    body = re.sub(r"^.*?\.hlo:\d+:\d+:\s*", "", msg)
    if (src is not None and src.strip() in DEBUG_TABLES) or re.search(
            r"computation '(" + "|".join(DEBUG_TABLES) + ")'", body):
        return "debug tables (FileNames/FunctionNames/FileLocations/StackFrames)"
    if "escape sequences are not supported" in body:
        return "escaped quote \\' in a metadata string"
    m = re.search(r"unknown or unsupported op '([^']+)'", body)
    if m:
        return "op " + m.group(1)
    m = re.search(r"unknown or unsupported attribute '([^']+)'", body)
    if m:
        op = re.search(r"=\s*\S+\s+([\w\-]+)\(", src or "")
        return f"attribute {m.group(1)}" + (f" ({op.group(1)})" if op else "")
    m = re.search(r"unsupported type=(\w+)", body)
    if m:
        return f"compare type={m.group(1)}"
    if "variadic reductions are not supported" in body:
        return "variadic reduce"
    m = re.search(r"expected a fusion kind .*found '(\w+)'", body)
    if m:
        return f"fusion kind={m.group(1)}"
    m = re.search(r"expected a shape \(.*element type\), found '(\w+)'", body)
    if m:
        return f"element type {m.group(1)}"
    m = re.search(r"unsupported custom_call_target \"([^\"]*)\"", body)
    if m:
        return f"custom-call target {m.group(1)}"
    m = re.search(r"plan: kernel [\w.\-]+: a scalar program cannot contain '([^']+)'", body)
    if m:
        return f"CPU plan: fusion body with {m.group(1)} (not a parser error)"
    return body


def peel(text, cause):
    """The text with one parser-level cause removed, or None when it cannot be removed."""
    if cause.startswith("debug tables"):
        out, skipping = [], False
        for line in text.split("\n"):
            if line.strip() in DEBUG_TABLES:
                skipping = True
                continue
            if skipping and line.strip() == "":
                skipping = False
                continue
            if not skipping:
                out.append(line)
        return "\n".join(out)
    if cause.startswith("escaped quote"):
        return text.replace("\\'", "'")
    return None


def run_eval(detrain, path, in_dir, n_in, ev_dir, want):
    shutil.rmtree(ev_dir, ignore_errors=True)
    os.makedirs(ev_dir)
    cmd = [detrain, "eval", path, "-o", ev_dir]
    for i in range(n_in):
        cmd += ["--input", f"p{i}=" + os.path.join(in_dir, f"p{i}.npy")]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    r = {"rc": p.returncode}
    if p.returncode != 0:
        r["error"] = first_error_line(p)
        r["cause"] = classify(r["error"], error_position(path, r["error"])[2])
        return r
    got = load_outputs(ev_dir)
    if len(got) != len(want):
        r["compare"] = f"{len(got)} outputs vs JAX {len(want)}"
        return r
    r["ulps"], r["tol_ratios"], notes = [], [], []
    for g, w in zip(got, want):
        u, t, note = compare(g, w)
        r["ulps"].append(u)
        r["tol_ratios"].append(t)
        if note != "ok":
            notes.append(note)
    r["compare"] = "; ".join(notes) if notes else "ok"
    return r


def check(out_dir, detrain, names):
    """Per function and form: parse+verify (compile --emit hlo), the whole CPU pipeline
    (compile --hashes), eval on the interpreter; and the chain of parse errors met when the
    peelable ones (debug tables, escaped quotes) are taken out one by one."""
    results = {}
    for name in names:
        d = os.path.join(out_dir, name)
        in_dir = os.path.join(d, "in")
        n_in = len([f for f in os.listdir(in_dir) if f.endswith(".npy")])
        want = load_outputs(d)
        results[name] = {}
        for form in FORMS:
            path = os.path.join(d, form + ".hlo")
            r = {}
            p = subprocess.run([detrain, "compile", path, "--emit", "hlo"], capture_output=True,
                               text=True, timeout=600)
            r["parse_rc"] = p.returncode
            if p.returncode != 0:
                msg = first_error_line(p)
                lineno, col, src = error_position(path, msg)
                r["parse_error"] = {"message": msg, "line": lineno, "col": col, "source": src,
                                    "cause": classify(msg, src)}
            p = subprocess.run([detrain, "compile", path, "--hashes"], capture_output=True,
                               text=True, timeout=600)
            r["plan_rc"] = p.returncode
            if p.returncode != 0:
                msg = first_error_line(p)
                r["plan_error"] = {"message": msg,
                                   "cause": classify(msg, error_position(path, msg)[2])}
            if r["parse_rc"] == 0:
                r["eval"] = run_eval(detrain, path, in_dir, n_in,
                                     os.path.join(out_dir, "_eval", name, form), want)
            else:
                # Peel: take out the causes that are only syntax, to find what comes next.
                chain, text = [], open(path).read()
                cause = r["parse_error"]["cause"]
                peel_dir = os.path.join(out_dir, "_peeled", name)
                os.makedirs(peel_dir, exist_ok=True)
                ppath = os.path.join(peel_dir, form + ".hlo")
                while True:
                    text = peel(text, cause)
                    if text is None:
                        break
                    chain.append(cause)
                    with open(ppath, "w") as f:
                        f.write(text)
                    p = subprocess.run([detrain, "compile", ppath, "--emit", "hlo"],
                                       capture_output=True, text=True, timeout=600)
                    if p.returncode == 0:
                        r["peeled"] = {"removed": chain, "parse": "ok",
                                       "steps": r.get("peeled", {}).get("steps", []),
                                       "eval": run_eval(
                            detrain, ppath, in_dir, n_in,
                            os.path.join(out_dir, "_eval_peeled", name, form), want)}
                        break
                    msg = first_error_line(p)
                    lineno, col, src = error_position(ppath, msg)
                    cause = classify(msg, src)
                    err = {"message": msg, "line": lineno, "col": col, "source": src,
                           "cause": cause}
                    steps = r.get("peeled", {}).get("steps", []) + [err]
                    r["peeled"] = {"removed": list(chain), "parse_error": err, "steps": steps}
            results[name][form] = r
    return results


# ----------------------------------------------------------------------------------------------
# Static census: every construct in a file that the parser source does not list
# ----------------------------------------------------------------------------------------------

INSTR = re.compile(r"^\s*(?:ROOT\s+)?%?([\w.\-]+)\s*=\s*(.+?)\s+([a-z][\w\-]*)\((.*)$")


def supported_constructs(repo):
    ir = os.path.join(repo, "src", "compiler", "ir")
    def read(name):
        with open(os.path.join(ir, name)) as f:
            return f.read()
    ops = set(re.findall(r'^(?:OP|UNARY|BINARY)\(\w+, "([^"]+)"', read("ops.def"), re.M))
    attrs = set(re.findall(r'^ATTR\(\w+, "([^"]+)"', read("attrs.def"), re.M))
    pv = read("parser_values.cc")

    def names(table):
        body = re.search(table + r"\[\] = \{(.*?)\};", pv, re.S).group(1)
        return set(re.findall(r'"([\w\-]+)"', body))
    ignored, default_only = names("kIgnoredAttrs"), names("kDefaultOnlyAttrs")
    et = read("element_type.h")
    types = set(re.findall(r'X\(k\w+, "(\w+)"', et))
    types |= set(re.findall(r'type_name == "(\w+)"', pv))  # bf16, f16: held as f32
    return ops, attrs | ignored | default_only, types


def census(text, supported):
    """{cause: first line that shows it} for the constructs the parser source does not list."""
    ops, attrs, types = supported
    found = {}

    def add(cause, line):
        found.setdefault(cause, line.strip())

    lines = text.split("\n")
    for i, line in enumerate(lines):
        if line.strip() == DEBUG_TABLES[0]:
            end = i
            while end < len(lines) and not re.match(r"^(%|ENTRY|[A-Za-z_][\w.\-]* [({])",
                                                    lines[end]):
                end += 1
            add("debug tables (FileNames/FunctionNames/FileLocations/StackFrames)",
                "\n".join(lines[i:end]).rstrip())
        if "\\'" in line:
            add("escaped quote \\' in a metadata string", line)
        m = INSTR.match(line)
        if not m:
            continue
        _, shape, op, rest = m.groups()
        for t in re.findall(r"\b([a-z]+\d+)\[", shape):
            if t not in types:
                add(f"element type {t}", line)
        if op not in ops:
            add(f"op {op}", line)
        for a in re.findall(r"(?:,\s*|\)\s*,?\s*)([a-z_\-]+)=", rest):
            if a not in attrs and op in ops:  # an unknown op's attributes go with the op
                add(f"attribute {a} ({op})", line)
        t = re.search(r"\btype=(\w+)", rest)
        if t and t.group(1) not in ("FLOAT", "SIGNED", "UNSIGNED"):
            add(f"compare type={t.group(1)}", line)
        if op == "reduce":
            operands = rest.split(")")[0]
            if len([o for o in operands.split(",") if o.strip()]) > 2:
                add("variadic reduce", line)
        k = re.search(r"kind=(k\w+)", rest)
        if op == "fusion" and k and k.group(1) not in ("kLoop", "kInput", "kOutput"):
            add(f"fusion kind={k.group(1)}", line)
        c = re.search(r'custom_call_target="([^"]*)"', rest)
        if c and c.group(1) != "detrain.threefry2x32":
            add(f"custom-call target {c.group(1)}", line)
    return found


# ----------------------------------------------------------------------------------------------
# Report
# ----------------------------------------------------------------------------------------------

def cell(r):
    def short(e):
        return re.sub(r"^.*?\.hlo:", "", e["message"]).replace("|", "\\|")

    def peeled_name(c):
        return "tables" if c.startswith("debug") else "\\'"
    if "parse_error" in r:
        s = "parse " + short(r["parse_error"])
        pe = r.get("peeled")
        if pe:
            for removed, err in zip(pe["removed"], pe["steps"]):
                s += f" ⟶ without {peeled_name(removed)}: parse " + short(err)
            if pe.get("parse") == "ok":
                s += (f" ⟶ without {peeled_name(pe['removed'][-1])}: parses; " +
                      eval_cell(pe["eval"]))
        return s
    s = eval_cell(r["eval"])
    if "plan_error" in r:
        s += "; plan: " + r["plan_error"]["cause"]
    return s


def eval_cell(e):
    if "error" in e:
        return "eval " + re.sub(r"^.*?\.hlo:", "", e["error"])
    if e.get("compare") != "ok":
        return "eval differs: " + e.get("compare", "")
    return f"eval OK ulp={max(e['ulps'])} tol={max(e['tol_ratios']):.2g}"


def computation_text(text, name):
    m = re.search(r"^%?" + re.escape(name) + r"\b[^\n]*\{\n.*?^\}", text, re.S | re.M)
    return m.group(0) if m else None


def write_report(out_dir, results, manifest, censuses):
    L = ["# detrain vs a corpus of real JAX exports", ""]
    L.append(f"JAX {manifest['jax']}, jaxlib {manifest['jaxlib']}, optax {manifest['optax']}, "
             f"flax {manifest['flax']}, numpy {manifest['numpy']}, Python {manifest['python']}; "
             f"{manifest.get('detrain')}. Generated by tools/export_jax_corpus.py; the exports are "
             f"beside this file, results.json has every message.")
    L += ["", "## Forms", "",
          "- `lowered`: `jax.jit(f).lower(*args).as_text(dialect=\"hlo\")`",
          "- `lowered_debug`: `...as_text(dialect=\"hlo\", debug_info=True)`",
          "- `compiled`: `jax.jit(f).lower(*args).compile().as_text()` "
          "(always has the debug tables)",
          "- `compiled_nodebug`: the same under `jax_traceback_in_locations_limit=0`: the "
          "optimized "
          "module without tables or stack_frame_id (op_name metadata stays)", "",
          "## Summary per form", "",
          "| form | parse+verify OK | eval OK | all three (parse, CPU plan, eval) OK | "
          "parses once tables and \\' escapes are taken out | and then evals OK |",
          "|---|---|---|---|---|---|"]
    n = len(results)
    for form in FORMS:
        rs = [results[k][form] for k in results]
        p = sum(r["parse_rc"] == 0 for r in rs)
        e = sum(r.get("eval", {}).get("compare") == "ok" for r in rs)
        a = sum(r["parse_rc"] == 0 and r["plan_rc"] == 0 and
                r.get("eval", {}).get("compare") == "ok" for r in rs)
        pp = sum(r["parse_rc"] == 0 or r.get("peeled", {}).get("parse") == "ok" for r in rs)
        pe = sum((r.get("eval") or r.get("peeled", {}).get("eval") or {}).get("compare") == "ok"
                 for r in rs)
        L.append(f"| {form} | {p}/{n} | {e}/{n} | {a}/{n} | {pp}/{n} | {pe}/{n} |")
    L += ["", "## Function × form", "",
          "`parse LINE:COL: msg` is the first error of `detrain compile FILE --emit hlo`; after ⟶, "
          "the first error once the debug tables and/or the `\\'` escapes are taken out of the "
          "text. "
          "`eval OK ulp=U tol=T`: `detrain eval` on the interpreter vs JAX, U the max ulp over all "
          "outputs (ints/bools exact), T the max of |d-j| / (2e-6|j| + 2e-7 max|j|), the bound of "
          "tests/compiler/interp/jax_test.cc (<=1 passes). `plan:` a failure of `compile --hashes` "
          "after parsing (the CPU plan).", "",
          "| function | " + " | ".join(FORMS) + " |", "|---" * (len(FORMS) + 1) + "|"]
    for name in results:
        L.append(f"| {name} | " + " | ".join(cell(results[name][f]) for f in FORMS) + " |")

    over = []
    for name in results:
        for form in FORMS:
            r = results[name][form]
            e = r.get("eval") or r.get("peeled", {}).get("eval") or {}
            if e.get("tol_ratios") and max(e["tol_ratios"]) > 1:
                over.append(f"{name}/{form} ({max(e['tol_ratios']):.2g})")
    L += ["", "Evaluated files over the jax_test.cc bound (tol > 1): " + (", ".join(over) or "none")
          + ". Large ulp counts with tol < 1 are elements near zero."]

    # Group: the first parse error (and the one after peeling), and the static census.
    first = {}
    for name in results:
        for form in FORMS:
            r = results[name][form]
            errs = []
            if "parse_error" in r:
                errs.append(r["parse_error"])
            if "peeled" in r:
                errs += r["peeled"]["steps"]
            for e in errs:
                first.setdefault(e["cause"], []).append((name, form, e))
            if r["parse_rc"] == 0 and "plan_error" in r:
                first.setdefault(r["plan_error"]["cause"], []).append((name, form, r["plan_error"]))
    present = {}
    for (name, form), found in censuses.items():
        for cause, line in found.items():
            present.setdefault(cause, []).append((name, form, line))
    L += ["", "## Failures grouped by cause", "",
          "`reported` counts the (function, form) files where detrain reported the cause as the "
          "first "
          "parse error, or the first after peeling tables and escapes (plan errors: CPU pipeline "
          "after a successful parse). `present` counts the files that contain the construct at all "
          "(static scan against ops.def, attrs.def, the parser's ignored attributes and "
          "element_type.h; "
          "a construct hidden behind an earlier error is counted here). Files are out of "
          f"{n} functions × {len(FORMS)} forms = {n * len(FORMS)}.", "",
          "| cause | reported | present | present per form (" + ", ".join(FORMS) +
          ") | functions (first 8) |",
          "|---|---|---|---|---|"]
    causes = sorted(set(first) | set(present), key=lambda c: (-len(present.get(c, [])), c))
    for c in causes:
        pr = present.get(c, [])
        per_form = "/".join(str(sum(1 for x in pr if x[1] == f)) for f in FORMS)
        funcs = sorted({x[0] for x in pr} | {x[0] for x in first.get(c, [])})
        L.append(f"| {c} | {len(first.get(c, []))} | {len(pr)} | {per_form} | "
                 f"{', '.join(funcs[:8])}{' …' if len(funcs) > 8 else ''} |")
    L += ["", "## One example per cause (copied from the exports)", ""]
    for c in causes:
        L.append(f"### {c}")
        L.append("")
        shown = set()
        examples = present.get(c, [])
        if c.startswith("debug tables"):  # the smallest complete tables, lowered and compiled
            examples = sorted(examples, key=lambda x: (x[1], len(x[2])))
            examples = [min((x for x in examples if x[1] == f), key=lambda x: len(x[2]))
                        for f in ("lowered_debug", "compiled") if any(x[1] == f for x in examples)]
        for name, form, line in examples:
            # one example per distinct set of attribute names, at most three
            sig = (tuple(sorted(set(re.findall(r"([a-z_\-]+)=", line)) -
                                {"metadata", "op_name", "stack_frame_id"})),
                   form.startswith("compiled"))
            if sig in shown or len(shown) >= 3:
                continue
            shown.add(sig)
            L.append(f"{name}/{form}.hlo:")
            L += ["```", line]
            # the computations it calls, when they are short (comparators, reducers, loop bodies)
            with open(os.path.join(out_dir, name, form + ".hlo")) as f:
                text = f.read()
            callers = r"(?:to_apply|condition|body|select|scatter|called_computations)"
            for callee in re.findall(callers + r"=\{?%?([\w.\-]+)", line):
                comp = computation_text(text, callee)
                if comp and comp.count("\n") <= 25:
                    L.append(comp)
            L.append("```")
        if not shown and c in first:
            name, form, e = first[c][0]
            L.append(f"{name}/{form}.hlo: `{e['message']}`")
            if e.get("source"):
                L += ["```", e["source"].strip(), "```"]
        if c in first:
            name, form, e = first[c][0]
            msg = e["message"].replace(out_dir + os.sep, "")
            L.append(f"detrain says ({name}/{form}): `{msg}`")
        L.append("")
    with open(os.path.join(out_dir, "REPORT.md"), "w") as f:
        f.write("\n".join(L) + "\n")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="/tmp/jax_corpus")
    parser.add_argument("--detrain", help="detrain binary: check every form and write REPORT.md")
    parser.add_argument("--only", help="comma-separated function names")
    parser.add_argument("--check-only", action="store_true", help="skip the export")
    a = parser.parse_args()
    out_dir = os.path.abspath(a.out)
    os.makedirs(out_dir, exist_ok=True)
    manifest_path = os.path.join(out_dir, "manifest.json")
    if not a.check_only:
        import jax
        jax.config.update("jax_platforms", "cpu")
        import jaxlib
        import optax
        import flax
        cases = build_cases()
        names = [n for n in cases if not a.only or n in a.only.split(",")]
        info = {}
        for name in names:
            fn, args = cases[name]
            info[name] = export(name, fn, args, out_dir)
            print(f"exported {name} {info[name]}", file=sys.stderr)
        manifest = {"generator": "tools/export_jax_corpus.py", "jax": jax.__version__,
                    "jaxlib": jaxlib.__version__, "optax": optax.__version__,
                    "flax": flax.__version__, "numpy": np.__version__,
                    "python": sys.version.split()[0], "forms": FORMS, "functions": info}
        with open(manifest_path, "w") as f:
            json.dump(manifest, f, indent=2, sort_keys=True)
            f.write("\n")
    with open(manifest_path) as f:
        manifest = json.load(f)
    if a.detrain:
        names = [n for n in manifest["functions"] if not a.only or n in a.only.split(",")]
        results = check(out_dir, a.detrain, names)
        manifest["detrain"] = subprocess.run([a.detrain, "--version"], capture_output=True,
                                             text=True).stdout.strip().splitlines()[0]
        repo = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
        supported = supported_constructs(repo)
        censuses = {}
        for name in names:
            for form in FORMS:
                with open(os.path.join(out_dir, name, form + ".hlo")) as f:
                    censuses[(name, form)] = census(f.read(), supported)
        with open(os.path.join(out_dir, "results.json"), "w") as f:
            json.dump({"results": results,
                       "census": {f"{k[0]}/{k[1]}": v for k, v in censuses.items()}},
                      f, indent=2, sort_keys=True)
        write_report(out_dir, results, manifest, censuses)


if __name__ == "__main__":
    main()
