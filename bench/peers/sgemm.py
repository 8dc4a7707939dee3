"""SGEMM throughput of the peers' BLAS: numpy (OpenBLAS) or torch (MKL on x86 wheels), in
GFLOP/s = 2·M·N·K / median seconds, at 1024³ and at the GEMM shapes of the MLP's train step
(bench/mlp/train.dt with the whole batch of 256 at once, as the peers compute it).

  sgemm.py --lib {numpy,torch} --threads T [--reps R]

Shapes are (M, K, N, form): NN C = A·B, TN C = Aᵀ·B (weight gradients), NT C = A·Bᵀ (input
gradients); the transposed operand is a transposed view, so the BLAS gets the transpose flag.
The CPU set is the caller's (taskset); the library's own thread count is set to T here.
One JSON line per shape.
"""
import argparse
import json
import os
import statistics
import time

SHAPES = [
    ("1024^3", 1024, 1024, 1024, "NN"),
    ("fwd x@w1", 256, 784, 1024, "NN"),
    ("fwd h@w2", 256, 1024, 1024, "NN"),
    ("fwd h@w3", 256, 1024, 10, "NN"),
    ("grad w1 = x^T@g", 784, 256, 1024, "TN"),
    ("grad w2 = h^T@g", 1024, 256, 1024, "TN"),
    ("grad w3 = h^T@g", 1024, 256, 10, "TN"),
    ("grad h1 = g@w2^T", 256, 1024, 1024, "NT"),
    ("grad h2 = g@w3^T", 256, 10, 1024, "NT"),
    # detrain's step computes 8 shards of 32 rows: the per-shard forward and weight-gradient forms.
    ("shard fwd x@w1", 32, 784, 1024, "NN"),
    ("shard grad w1 = x^T@g", 784, 32, 1024, "TN"),
]


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--lib", choices=("numpy", "torch"), required=True)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--reps", type=int, default=7, help="timed repetitions (median)")
    args = p.parse_args()
    # OpenBLAS reads its thread count when it loads: set it before numpy is imported.
    os.environ["OPENBLAS_NUM_THREADS"] = str(args.threads)
    import numpy as np
    rng = np.random.default_rng(0)
    if args.lib == "torch":
        import torch
        torch.set_num_threads(args.threads)
        mm, wrap = torch.mm, torch.from_numpy
        blas = "mkl" if torch.backends.mkl.is_available() else "torch"
        version = torch.__version__
    else:
        mm, wrap = np.matmul, (lambda a: a)
        cfg = np.show_config(mode="dicts")["Build Dependencies"]["blas"]
        blas, version = cfg.get("name", "?"), cfg.get("version", "?")
    for name, m, k, n, form in SHAPES:
        a = rng.random((k, m) if form == "TN" else (m, k), dtype=np.float32)
        b = rng.random((n, k) if form == "NT" else (k, n), dtype=np.float32)
        a, b = wrap(a), wrap(b)
        if form == "TN":
            a = a.T
        if form == "NT":
            b = b.T
        mm(a, b)  # warm-up: threads started, pages touched
        t0 = time.perf_counter()
        mm(a, b)
        once = time.perf_counter() - t0
        inner = max(1, int(0.05 / max(once, 1e-6)))  # ~50 ms per timed repetition
        times = []
        for _ in range(args.reps):
            t0 = time.perf_counter()
            for _ in range(inner):
                mm(a, b)
            times.append((time.perf_counter() - t0) / inner)
        sec = statistics.median(times)
        print(json.dumps(dict(lib=args.lib, blas=blas, version=version, threads=args.threads,
                              shape=name, m=m, k=k, n=n, form=form, ms=round(sec * 1e3, 4),
                              gflops=round(2 * m * n * k / sec / 1e9, 1))), flush=True)


if __name__ == "__main__":
    main()
