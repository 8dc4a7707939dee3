#!/usr/bin/env python3
"""Two of issue 37's "real sizes", written in plain JAX and optax as a user would write them:
exported for detrain (tools/export_jax.py) and timed in JAX, for bench/real_models/run.sh.

  models.py export MODEL OUT_DIR    writes OUT_DIR/{run.json, train_step.hlo, initial_state...}
  models.py time MODEL STEPS        JAX's donated steady state: `step_ms MEDIAN step_min_ms MIN`

MODEL:
  resnet18  ResNet-18's layout at CIFAR size: a 3x3 stem of 64 channels, four stages of two basic
            blocks (64, 128, 256, 512 channels; stride 2 and a 1x1 projection where a stage
            starts), batch norm after every convolution in training mode (batch statistics; the
            running mean and variance carried next to the optimizer's state), global average
            pool, dense 10. Input 32x32x3 NHWC, batch 16, SGD with momentum 0.9.
  lstm      a character LSTM: embedding 256 x 64, one LSTM layer of 256 units run by lax.scan
            over 64 steps (an HLO while loop; detrain unrolls it), dense to 256 logits at every
            step. Batch 32 sequences of 64 bytes, Adam 1e-3.

The exported step is what JAX would run; detrain's bench (bench_peer_step) feeds it synthetic
arguments of the right shapes, as JAX's timing here feeds it random ones (the values do not
change either side's time: docs/benchmarks.md). Run with the peers' venv (bench/peers/setup.sh),
never from detrain.
"""
import os
import sys

import jax
import jax.numpy as jnp
import numpy as np
import optax

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tools"))
sys.path.insert(0, os.path.join(HERE, "..", "compile_scale"))
import export_jax  # noqa: E402
import jax_first_call  # noqa: E402

TEXT = "/usr/share/common-licenses/GPL-3"


# --- ResNet-18 at CIFAR size -------------------------------------------------------------------

RESNET_BATCH = 16
STAGES = ((64, 1), (128, 2), (256, 2), (512, 2))


def conv(x, k, stride):
    pad = "SAME" if k.shape[0] == 3 else "VALID"
    return jax.lax.conv_general_dilated(x, k, (stride, stride), pad,
                                        dimension_numbers=("NHWC", "HWIO", "NHWC"))


def resnet_init(key):
    he = jax.nn.initializers.he_normal()
    keys = iter(jax.random.split(key, 64))
    params, stats = {}, {}

    def conv_bn(name, kh, cin, cout):
        params[name] = {"k": he(next(keys), (kh, kh, cin, cout)),
                        "g": jnp.ones((cout,)), "b": jnp.zeros((cout,))}
        stats[name] = {"mean": jnp.zeros((cout,)), "var": jnp.ones((cout,))}

    conv_bn("stem", 3, 3, 64)
    cin = 64
    for s, (width, stride) in enumerate(STAGES):
        for b in range(2):
            name = f"s{s}b{b}"
            conv_bn(name + "c1", 3, cin, width)
            conv_bn(name + "c2", 3, width, width)
            if b == 0 and (stride != 1 or cin != width):
                conv_bn(name + "proj", 1, cin, width)
            cin = width
    params["dense"] = {"w": jax.nn.initializers.glorot_uniform()(next(keys), (512, 10)),
                       "b": jnp.zeros((10,))}
    return params, stats


def batch_norm(x, p, stats, name, new_stats):
    mean = x.mean((0, 1, 2))
    var = ((x - mean) ** 2).mean((0, 1, 2))
    new_stats[name] = {"mean": 0.9 * stats[name]["mean"] + 0.1 * mean,
                       "var": 0.9 * stats[name]["var"] + 0.1 * var}
    return (x - mean) * jax.lax.rsqrt(var + 1e-5) * p[name]["g"] + p[name]["b"]


def resnet_loss(params, stats, images, labels):
    new_stats = {}

    def conv_bn(x, name, stride):
        return batch_norm(conv(x, params[name]["k"], stride), params, stats, name, new_stats)

    h = jax.nn.relu(conv_bn(images, "stem", 1))
    cin = 64
    for s, (width, stride) in enumerate(STAGES):
        for b in range(2):
            name, st = f"s{s}b{b}", stride if b == 0 else 1
            y = jax.nn.relu(conv_bn(h, name + "c1", st))
            y = conv_bn(y, name + "c2", 1)
            shortcut = conv_bn(h, name + "proj", st) if name + "proj" in params else h
            h = jax.nn.relu(y + shortcut)
            cin = width
    logits = h.mean((1, 2)) @ params["dense"]["w"] + params["dense"]["b"]
    loss = optax.softmax_cross_entropy_with_integer_labels(logits, labels).mean()
    return loss, new_stats


def resnet():
    params, stats = resnet_init(jax.random.PRNGKey(0))
    optimizer = optax.sgd(0.05, momentum=0.9)

    def train_step(params, state, images, labels):
        opt_state, stats = state
        (loss, stats), grads = jax.value_and_grad(resnet_loss, has_aux=True)(
            params, stats, images, labels)
        updates, opt_state = optimizer.update(grads, opt_state, params)
        return optax.apply_updates(params, updates), (opt_state, stats), loss

    state = (optimizer.init(params), stats)
    rng = np.random.default_rng(0)
    rows = 4 * RESNET_BATCH
    x = rng.standard_normal((rows, 32 * 32 * 3), dtype=np.float32)
    y = rng.integers(0, 10, rows).astype(np.int32)
    data = {"name": "npy", "as": "cifar-shaped", "features": "x.npy", "labels": "y.npy",
            "standardize": False, "validation": 0}
    return dict(step=train_step, params=params, state=state, x=x, y=y, data=data,
                batch=RESNET_BATCH, example_shape=(32, 32, 3))


# --- a character LSTM ---------------------------------------------------------------------------

LSTM_CONTEXT, LSTM_VOCAB, LSTM_EMBED, LSTM_HIDDEN, LSTM_BATCH = 64, 256, 64, 256, 32


def lstm_init(key):
    k = jax.random.split(key, 4)
    glorot = jax.nn.initializers.glorot_uniform()
    return {"embed": jax.nn.initializers.normal(0.1)(k[0], (LSTM_VOCAB, LSTM_EMBED)),
            "wx": glorot(k[1], (LSTM_EMBED, 4 * LSTM_HIDDEN)),
            "wh": glorot(k[2], (LSTM_HIDDEN, 4 * LSTM_HIDDEN)),
            "b": jnp.zeros((4 * LSTM_HIDDEN,)),
            "out": glorot(k[3], (LSTM_HIDDEN, LSTM_VOCAB)),
            "out_b": jnp.zeros((LSTM_VOCAB,))}


def lstm_loss(params, tokens, targets):
    xs = params["embed"][tokens] @ params["wx"] + params["b"]  # [batch, time, 4H]

    def cell(carry, x):
        h, c = carry
        i, f, g, o = jnp.split(x + h @ params["wh"], 4, axis=-1)
        c = jax.nn.sigmoid(f) * c + jax.nn.sigmoid(i) * jnp.tanh(g)
        h = jax.nn.sigmoid(o) * jnp.tanh(c)
        return (h, c), h

    zeros = jnp.zeros((tokens.shape[0], LSTM_HIDDEN))
    _, hs = jax.lax.scan(cell, (zeros, zeros), jnp.swapaxes(xs, 0, 1))
    logits = jnp.swapaxes(hs, 0, 1) @ params["out"] + params["out_b"]
    return optax.softmax_cross_entropy_with_integer_labels(logits, targets).mean()


def lstm():
    params = lstm_init(jax.random.PRNGKey(1))
    optimizer = optax.adam(1e-3)

    def train_step(params, opt_state, tokens, targets):
        loss, grads = jax.value_and_grad(lstm_loss)(params, tokens, targets)
        updates, opt_state = optimizer.update(grads, opt_state, params)
        return optax.apply_updates(params, updates), opt_state, loss

    x, y = export_jax.read_text(TEXT, LSTM_CONTEXT)
    data = {"name": "text", "as": "licence", "path": TEXT, "context": LSTM_CONTEXT,
            "validation": 0}
    return dict(step=train_step, params=params, state=optimizer.init(params), x=x, y=y,
                data=data, batch=LSTM_BATCH, example_shape=None)


MODELS = {"resnet18": resnet, "lstm": lstm}


def export(m, out_dir):
    export_jax.export_train_step(m["step"], m["params"], m["state"], features=m["x"],
                                 labels=m["y"], data=m["data"], out_dir=out_dir,
                                 batch=m["batch"], steps=10, seed=0, takes_key=False,
                                 example_shape=m["example_shape"], function_name="train_step")
    if m["data"]["name"] == "npy":
        np.save(os.path.join(out_dir, "x.npy"), m["x"])
        np.save(os.path.join(out_dir, "y.npy"), m["y"])
    print(f"exported to {out_dir}")


def time_steps(m, steps):
    shape = (m["batch"],) + (m["example_shape"] or m["x"].shape[1:])
    x = jnp.asarray(m["x"][:m["batch"]].reshape(shape))
    y = jnp.asarray(m["y"][:m["batch"]])
    times = jax_first_call.donated_step_times(m["step"], m["params"], m["state"], x, y, steps)
    print(f"step_ms {np.median(times):.2f} step_min_ms {min(times):.2f} steps {steps}")


def main(argv):
    if len(argv) != 4 or argv[1] not in ("export", "time") or argv[2] not in MODELS:
        sys.exit(__doc__)
    m = MODELS[argv[2]]()
    if argv[1] == "export":
        export(m, argv[3])
    else:
        time_steps(m, int(argv[3]))


if __name__ == "__main__":
    main(sys.argv)
