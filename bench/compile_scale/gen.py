#!/usr/bin/env python3
"""Writes generated .dt programs for the compile-scale benchmark (bench/compile_scale.sh).

  gen.py transformer BLOCKS WIDTH [CONTEXT]   a pre-norm transformer, blocks called through a def
  gen.py mlp LAYERS WIDTH                     an MLP of LAYERS dense layers

The program goes to standard output. Data: Debian's GPL-3 text (the charlm example's corpus) for
the transformer; the breast cancer CSV of Debian's python3-sklearn (examples/breast_cancer) for
the MLP. Programs are for compiling: their
hyperparameters are plausible, not tuned.
"""
import sys


def transformer(blocks, width, context):
    heads = max(1, width // 64)
    vocab = 256
    out = [f"# generated: bench/compile_scale/gen.py transformer {blocks} {width} {context}",
           f'data corpus = text("/usr/share/common-licenses/GPL-3", context = {context}, validation = 0.1)',
           f"param embed: f32[{vocab}, {width}] = normal(stddev = 0.02)",
           f"param pos: f32[{context}, {width}] = normal(stddev = 0.02)"]
    for b in range(blocks):
        out += [f"param ln1_g_{b}: f32[{width}] = ones",
                f"param ln1_b_{b}: f32[{width}] = zeros",
                f"param wq_{b}: f32[{width}, {width}] = glorot_uniform",
                f"param wk_{b}: f32[{width}, {width}] = glorot_uniform",
                f"param wv_{b}: f32[{width}, {width}] = glorot_uniform",
                f"param wo_{b}: f32[{width}, {width}] = glorot_uniform",
                f"param ln2_g_{b}: f32[{width}] = ones",
                f"param ln2_b_{b}: f32[{width}] = zeros",
                f"param w_up_{b}: f32[{width}, {4 * width}] = glorot_uniform",
                f"param b_up_{b}: f32[{4 * width}] = zeros",
                f"param w_down_{b}: f32[{4 * width}, {width}] = glorot_uniform",
                f"param b_down_{b}: f32[{width}] = zeros"]
    out += [f"param lnf_g: f32[{width}] = ones",
            f"param lnf_b: f32[{width}] = zeros",
            f"param unembed: f32[{width}, {vocab}] = glorot_uniform",
            "",
            f"def block(h: f32[N, {context}, {width}], ln1_g: f32[{width}], ln1_b: f32[{width}],",
            f"          wq: f32[{width}, {width}], wk: f32[{width}, {width}], wv: f32[{width}, {width}],",
            f"          wo: f32[{width}, {width}], ln2_g: f32[{width}], ln2_b: f32[{width}],",
            f"          w_up: f32[{width}, {4 * width}], b_up: f32[{4 * width}],",
            f"          w_down: f32[{4 * width}, {width}], b_down: f32[{width}]) -> f32[N, {context}, {width}] {{",
            f"  h = h + attention(layer_norm(h, ln1_g, ln1_b), wq, wk, wv, wo, heads = {heads}, causal = true)",
            "  return h + gelu(layer_norm(h, ln2_g, ln2_b) @ w_up + b_up) @ w_down + b_down",
            "}",
            "",
            f"def logits(x: s32[N, {context}]) -> f32[N, {context}, {vocab}] {{",
            "  h = embedding(embed, x) + pos"]
    for b in range(blocks):
        names = ", ".join(f"{p}_{b}" for p in ["ln1_g", "ln1_b", "wq", "wk", "wv", "wo", "ln2_g",
                                               "ln2_b", "w_up", "b_up", "w_down", "b_down"])
        out.append(f"  h = block(h, {names})")
    out += ["  return layer_norm(h, lnf_g, lnf_b) @ unembed",
            "}",
            "",
            f"def loss(x: s32[B, {context}], y: s32[B, {context}]) -> f32[] {{",
            "  return mean(softmax_cross_entropy(logits(x), y))",
            "}",
            "",
            "metrics = [loss]",
            "optimizer = adam(learning_rate = 1e-3)",
            "train(steps = 10, batch = 32, shards = 8, seed = 0)"]
    return "\n".join(out) + "\n"


def mlp(layers, width):
    features, classes = 30, 2
    dims = [features] + [width] * (layers - 1) + [classes]
    out = [f"# generated: bench/compile_scale/gen.py mlp {layers} {width}",
           'data cancer = csv("/usr/lib/python3/dist-packages/sklearn/datasets/data/breast_cancer.csv",',
           '                  skip_rows = 1, label = -1, standardize = true, validation = 0.2)']
    for i in range(layers):
        out += [f"param w{i}: f32[{dims[i]}, {dims[i + 1]}] = glorot_uniform",
                f"param b{i}: f32[{dims[i + 1]}] = zeros"]
    out += ["", f"def predict(x: f32[B, {features}]) -> f32[B, {classes}] {{", "  h = x"]
    for i in range(layers - 1):
        out.append(f"  h = relu(h @ w{i} + b{i})")
    out += [f"  return h @ w{layers - 1} + b{layers - 1}", "}", "",
            f"def loss(x: f32[B, {features}], y: s32[B]) -> f32[] {{",
            "  return mean(softmax_cross_entropy(predict(x), y))", "}", "",
            "metrics = [accuracy, loss]",
            "optimizer = adam(learning_rate = 1e-3)",
            "train(steps = 10, batch = 64, shards = 8, seed = 0)"]
    return "\n".join(out) + "\n"


def main(argv):
    if len(argv) >= 4 and argv[1] == "transformer":
        context = int(argv[4]) if len(argv) > 4 else 32
        sys.stdout.write(transformer(int(argv[2]), int(argv[3]), context))
    elif len(argv) == 4 and argv[1] == "mlp":
        sys.stdout.write(mlp(int(argv[2]), int(argv[3])))
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main(sys.argv)
