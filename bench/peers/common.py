"""Shared timing and output of the peer scripts (models_jax.py, models_torch.py).

Every measurement is one JSON line on stdout with the fields bench_peer_step prints:
framework, model, threads, first_call_ms, step_ms (median of the timed steps), step_min_ms,
steps, warmup, peak_rss_mib (getrusage ru_maxrss of this process), plus setup_ms (building the
parameters, optimizer state and batch: not counted in first_call_ms) and import_ms.

Thread counts are set by the caller (run.sh): `taskset` for the CPU set, and for torch
torch.set_num_threads(threads) as well. The scripts only record --threads.
"""
import argparse
import json
import resource
import statistics
import time

MODELS = ("mlp", "digits", "charlm")

# Shapes, batches and optimizers of detrain's programs (bench/mlp/train.dt,
# examples/digits/train.dt, examples/charlm/train.dt).
MLP = dict(batch=256, sizes=(784, 1024, 1024, 10), lr=1e-3)
DIGITS = dict(batch=64, pixels=64, classes=10, lr=3e-3)
CHARLM = dict(batch=32, context=32, vocab=256, width=64, heads=4, hidden=256, dropout=0.1,
              peak=3e-3, warmup_steps=20, decay_steps=300, weight_decay=1e-4, clip=1.0)


def parse_args(description, extra=None):
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--model", choices=MODELS, required=True)
    p.add_argument("--threads", type=int, default=1, help="recorded; the CPU set is the caller's")
    p.add_argument("--steps", type=int, default=20, help="timed steady-state steps")
    p.add_argument("--warmup", type=int, default=3, help="untimed steps after the first")
    p.add_argument("--determinism", metavar="OUT.npy",
                   help="instead of timing: 5 steps of the model from a fixed init, then write "
                        "every parameter, flattened in declaration order, to OUT.npy")
    if extra:
        extra(p)
    return p.parse_args()


def peak_rss_mib():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0  # Linux: KiB


def warmup_cosine_decay(step, init, peak, warmup_steps, decay_steps, end=0.0):
    """optax.warmup_cosine_decay_schedule, for torch (JAX uses optax's own)."""
    import math
    if step < warmup_steps:
        return init + (peak - init) * step / warmup_steps
    t = min(step - warmup_steps, decay_steps - warmup_steps) / (decay_steps - warmup_steps)
    return end + (peak - end) * 0.5 * (1 + math.cos(math.pi * t))


def measure(framework, args, step, import_ms, setup_ms, **fields):
    """Times `step()` (one full train step that returns only once its results are computed):
    the first call alone (compile + first step), then `warmup` untimed calls and `steps` timed
    ones. Prints one JSON line."""
    t0 = time.perf_counter()
    step()
    first_call_ms = (time.perf_counter() - t0) * 1e3
    for _ in range(args.warmup):
        step()
    times = []
    for _ in range(args.steps):
        t0 = time.perf_counter()
        step()
        times.append((time.perf_counter() - t0) * 1e3)
    line = dict(framework=framework, model=args.model, threads=args.threads,
                first_call_ms=round(first_call_ms, 3), step_ms=round(statistics.median(times), 4),
                step_min_ms=round(min(times), 4), steps=args.steps, warmup=args.warmup,
                peak_rss_mib=round(peak_rss_mib(), 1), import_ms=round(import_ms, 1),
                setup_ms=round(setup_ms, 1))
    line.update(fields)
    print(json.dumps(line), flush=True)
