#!/usr/bin/env python3
"""Median tables of bench/peers/run.sh's results (standard library only).

  summarize.py RESULTS.jsonl [SGEMM.jsonl]

RESULTS.jsonl holds one JSON line per (round, model, framework, threads) measurement. For each
model and thread count this prints the median over rounds of steady-state ms per step,
first-call ms and peak RSS, per framework, and the ratios detrain / JAX and
detrain / min(torch eager, torch.compile): below 1.0, detrain is the faster (or smaller); with
detrain-evaluator (detrain --loops evaluator) also its ratio to JAX.
SGEMM.jsonl (sgemm.py's lines) is printed as a GFLOP/s table.
"""
import json
import statistics
import sys
from collections import defaultdict

FRAMEWORKS = ("detrain", "detrain-evaluator", "jax", "torch", "torch.compile")
METRICS = (("step_ms", "steady-state ms per step (median)"),
           ("first_call_ms", "first call ms: compile + first step (median)"),
           ("peak_rss_mib", "peak RSS MiB (median)"))


def load(path):
    with open(path) as f:
        return [json.loads(line) for line in f if line.startswith("{")]


def fmt(v):
    if v is None:
        return "-"
    return f"{v:.3g}" if v < 100 else f"{v:.0f}"


def ratio(a, b):
    return f"{a / b:.2f}" if a is not None and b else "-"


def models_table(rows):
    groups = defaultdict(list)
    for r in rows:
        groups[(r["model"], r["threads"], r["framework"])].append(r)
    keys = sorted({(m, t) for m, t, _ in groups}, key=lambda k: (("mlp", "digits", "charlm").index(
        k[0]) if k[0] in ("mlp", "digits", "charlm") else 9, k[1]))
    rounds = max((len(v) for v in groups.values()), default=0)
    print(f"medians over up to {rounds} rounds")
    for metric, title in METRICS:
        print(f"\n{title}")
        head = f"{'model':8} {'thr':>3} " + " ".join(f"{f:>13}" for f in FRAMEWORKS)
        print(head + f" {'det/jax':>8} {'det/torch':>9} {'eval/jax':>9}")
        for model, threads in keys:
            med = {}
            for f in FRAMEWORKS:
                vals = [r[metric] for r in groups.get((model, threads, f), []) if metric in r]
                med[f] = statistics.median(vals) if vals else None
            torch_best = min((v for v in (med["torch"], med["torch.compile"]) if v is not None),
                             default=None)
            print(f"{model:8} {threads:>3} " + " ".join(f"{fmt(med[f]):>13}" for f in FRAMEWORKS) +
                  f" {ratio(med['detrain'], med['jax']):>8} "
                  f"{ratio(med['detrain'], torch_best):>9} "
                  f"{ratio(med['detrain-evaluator'], med['jax']):>9}")


def sgemm_table(rows):
    print("\nSGEMM GFLOP/s (median of repetitions)")
    cols = sorted({(r["lib"], r["threads"]) for r in rows})
    print(f"{'shape':24} {'M':>5} {'K':>5} {'N':>5} " +
          " ".join(f"{lib + ' ' + str(t) + 't':>11}" for lib, t in cols))
    shapes = []
    for r in rows:
        if (r["shape"], r["m"], r["k"], r["n"]) not in shapes:
            shapes.append((r["shape"], r["m"], r["k"], r["n"]))
    by = {(r["shape"], r["lib"], r["threads"]): r["gflops"] for r in rows}
    for shape, m, k, n in shapes:
        print(f"{shape:24} {m:>5} {k:>5} {n:>5} " +
              " ".join(f"{fmt(by.get((shape, lib, t))):>11}" for lib, t in cols))


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    models_table(load(sys.argv[1]))
    if len(sys.argv) > 2:
        sgemm_table(load(sys.argv[2]))


if __name__ == "__main__":
    main()
