#!/usr/bin/env python3
"""Writes the memory benchmark's programs and data (bench/memory.sh).

  gen.py mlp DIMS BATCH OPTIMIZER STEPS DIR         e.g. mlp 1024,4096,4096,1024,10 128 adam 4 DIR
  gen.py transformer BLOCKS WIDTH CONTEXT BATCH OPTIMIZER STEPS DIR

writes DIR/train.dt (and, for the MLP, DIR/x.npy and DIR/y.npy: 1280 rows of uniform features
and their class, argmax of (x - 1/2) @ W, seeded). The transformer is bench/compile_scale/gen.py's
(Debian's GPL-3 text as its corpus). Neither has a validation split: JAX's step, which the
benchmark compares, evaluates nothing (a run evaluates its whole validation split in one batch
after its last step). OPTIMIZER: sgd, momentum or adam, learning rate 1e-3. Every
program checkpoints once, halfway, so that a checkpoint's cost is part of the peak. No numpy: the
.npy files are written with the standard library, so that the system python3 does.
"""
import array
import os
import random
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "compile_scale"))
import gen as scale_gen  # noqa: E402


def save_npy(path, dtype, shape, values):
    header = "{'descr': '%s', 'fortran_order': False, 'shape': (%s), }" % (
        dtype, "".join(f"{d}, " for d in shape))
    header += " " * ((64 - (10 + len(header) + 1) % 64) % 64) + "\n"
    with open(path, "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + len(header).to_bytes(2, "little") + header.encode())
        f.write(array.array("f" if dtype == "<f4" else "i", values).tobytes())


def mlp_data(features, classes, rows, out):
    rng = random.Random(20261206)
    w = [[rng.gauss(0, 1) for _ in range(classes)] for _ in range(features)]
    x, y = [], []
    for _ in range(rows):
        row = [rng.random() for _ in range(features)]
        scores = [sum((row[i] - 0.5) * w[i][c] for i in range(features)) for c in range(classes)]
        x += row
        y.append(max(range(classes), key=scores.__getitem__))
    save_npy(os.path.join(out, "x.npy"), "<f4", (rows, features), x)
    save_npy(os.path.join(out, "y.npy"), "<i4", (rows,), y)


def tail(optimizer, batch, steps):
    return [f"optimizer = {optimizer}(learning_rate = 1e-3)",
            f"train(steps = {steps}, batch = {batch}, shards = 8, seed = 0, "
            f"checkpoint_every = {max(1, steps // 2)})"]


def mlp(dims, batch, optimizer, steps):
    out = ['data synthetic = npy(features = "x.npy", labels = "y.npy", validation = 0)']
    for i in range(len(dims) - 1):
        out += [f"param w{i}: f32[{dims[i]}, {dims[i + 1]}] = glorot_uniform",
                f"param b{i}: f32[{dims[i + 1]}] = zeros"]
    out += ["", f"def loss(x: f32[B, {dims[0]}], y: s32[B]) -> f32[] {{", "  h = x"]
    for i in range(len(dims) - 2):
        out.append(f"  h = relu(h @ w{i} + b{i})")
    n = len(dims) - 2
    out += [f"  return mean(softmax_cross_entropy(h @ w{n} + b{n}, y))", "}", "",
            "metrics = [loss]"] + tail(optimizer, batch, steps)
    return "\n".join(out) + "\n"


def transformer(blocks, width, context, batch, optimizer, steps):
    lines = scale_gen.transformer(blocks, width, context).rstrip("\n").split("\n")
    keep = [line.replace("validation = 0.1", "validation = 0") for line in lines
            if not line.startswith(("optimizer =", "train("))]
    return "\n".join(keep + tail(optimizer, batch, steps)) + "\n"


def main(argv):
    if len(argv) == 7 and argv[1] == "mlp":
        dims = [int(d) for d in argv[2].split(",")]
        out = argv[6]
        os.makedirs(out, exist_ok=True)
        text = mlp(dims, int(argv[3]), argv[4], int(argv[5]))
        mlp_data(dims[0], dims[-1], 1280, out)
    elif len(argv) == 9 and argv[1] == "transformer":
        blocks, width, context, batch = (int(a) for a in argv[2:6])
        out = argv[8]
        os.makedirs(out, exist_ok=True)
        text = transformer(blocks, width, context, batch, argv[6], int(argv[7]))
    else:
        sys.exit(__doc__)
    with open(os.path.join(out, "train.dt"), "w") as f:
        f.write(text)


if __name__ == "__main__":
    main(sys.argv)
