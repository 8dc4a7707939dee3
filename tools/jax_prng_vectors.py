#!/usr/bin/env python3
"""Writes known-answer vectors for detrain's threefry PRNG from a real JAX install.

Usage (CPU wheels from PyPI are enough: `pip install jax jaxlib`):

    python3 tools/jax_prng_vectors.py                       # -> tests/attest/prng/testdata/jax_vectors.json
    python3 tools/jax_prng_vectors.py --out FILE
    python3 tools/jax_prng_vectors.py --ulp-dir DIR         # large samples for the ulp study

The vector file covers, for both settings of `jax_threefry_partitionable`, every function that
detrain's PRNG reproduces: key(seed), split, fold_in, bits (8/16/32/64), uniform, normal,
truncated_normal, bernoulli, permutation, randint and the jax.nn.initializers detrain offers.
Floats are stored as their IEEE-754 bit patterns (uint32), so the file is exact. x64 is enabled
so that 64-bit seeds, 64-bit bits and int64 randint are what JAX computes with x64 on; every
sampler is given an explicit 32-bit dtype, so float outputs are float32 as in training.

--ulp-dir writes 10^6-sample float32 arrays (raw little-endian uint32 files plus manifest.json)
for the float samplers whose last bit may differ from JAX (JAX's erf_inv is XLA's polynomial,
detrain's is correctly rounded); `prng_jax_ulp_study DIR` (built with the tests) compares them.
This script is a developer tool: detrain never runs Python.
"""
import argparse
import json
import os

import jax

jax.config.update("jax_enable_x64", True)
jax.config.update("jax_platforms", "cpu")

import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
from jax import random  # noqa: E402
from jax.nn import initializers  # noqa: E402

MODES = {"partitionable": True, "original": False}

SEEDS = [0, 1, 42, -1, -3, 2**31 - 1, 2**32 + 5, 0x123456789ABCDEF0, -(2**63), 2**63 - 1]
# Keys given as raw words (as an auditor would type them) in addition to key(seed).
RAW_KEYS = [(0, 0), (0, 42), (0x12345678, 0x9ABCDEF0), (0xFFFFFFFF, 0xFFFFFFFF), (2285895361, 433833334)]
SHAPES = [(), (1,), (2,), (5,), (7,), (3, 3), (2, 3, 4), (33,)]


def wrap(words):
    return random.wrap_key_data(jnp.asarray(words, dtype=jnp.uint32), impl="threefry2x32")


def words(key):
    return [int(w) for w in np.asarray(random.key_data(key)).reshape(-1)]


def f32_bits(values):
    return [int(b) for b in np.asarray(values, dtype=np.float32).reshape(-1).view(np.uint32)]


def f32(x):
    return np.float32(x)


def bits_of(x):
    return int(np.array(x, dtype=np.float32).view(np.uint32))


def key_cases():
    return [{"seed": int(s), "key": words(random.key(s))} for s in SEEDS]


def split_cases():
    out = []
    for kw in RAW_KEYS:
        for n in [1, 2, 3, 4, 7]:
            ks = random.split(wrap(kw), n)
            out.append({"key": list(kw), "shape": [n], "keys": np.asarray(random.key_data(ks)).reshape(-1, 2).tolist()})
        ks = random.split(wrap(kw), (2, 3))
        out.append({"key": list(kw), "shape": [2, 3], "keys": np.asarray(random.key_data(ks)).reshape(-1, 2).tolist()})
    return out


def fold_in_cases():
    return [{"key": list(kw), "data": d, "out": words(random.fold_in(wrap(kw), np.uint32(d)))}
            for kw in RAW_KEYS for d in [0, 1, 4, 17, 123456, 2**32 - 1]]


def bits_cases():
    dtype_of = {8: jnp.uint8, 16: jnp.uint16, 32: jnp.uint32, 64: jnp.uint64}
    out = []
    for kw in RAW_KEYS[:3]:
        for shape in SHAPES:
            for width in [8, 16, 32, 64]:
                v = random.bits(wrap(kw), shape, dtype_of[width])
                out.append({"key": list(kw), "shape": list(shape), "width": width,
                             "values": [int(x) for x in np.asarray(v).reshape(-1)]})
    return out


def uniform_cases():
    out = []
    ranges = [(0.0, 1.0), (-1.0, 1.0), (-3.5, 2.25), (5.0, 6.0), (0.0, 1e-3), (-1e6, 1e6)]
    for kw in RAW_KEYS[:3]:
        for shape in SHAPES:
            for lo, hi in ranges:
                v = random.uniform(wrap(kw), shape, jnp.float32, f32(lo), f32(hi))
                out.append({"key": list(kw), "shape": list(shape), "min_bits": bits_of(lo),
                            "max_bits": bits_of(hi), "bits": f32_bits(v)})
    return out


def normal_cases():
    return [{"key": list(kw), "shape": list(shape), "bits": f32_bits(random.normal(wrap(kw), shape, jnp.float32))}
            for kw in RAW_KEYS[:3] for shape in SHAPES]


def truncated_normal_cases():
    out = []
    for kw in RAW_KEYS[:3]:
        for shape in [(5,), (3, 3), (33,)]:
            for lo, hi in [(-2.0, 2.0), (-1.0, 3.0), (0.5, 1.5)]:
                v = random.truncated_normal(wrap(kw), f32(lo), f32(hi), shape, jnp.float32)
                out.append({"key": list(kw), "shape": list(shape), "lower_bits": bits_of(lo),
                            "upper_bits": bits_of(hi), "bits": f32_bits(v)})
    return out


def bernoulli_cases():
    return [{"key": list(kw), "shape": list(shape), "p_bits": bits_of(p),
             "values": [int(x) for x in np.asarray(random.bernoulli(wrap(kw), f32(p), shape)).reshape(-1)]}
            for kw in RAW_KEYS[:3] for shape in SHAPES for p in [0.5, 0.1, 0.9, 0.0, 1.0]]


def permutation_cases():
    return [{"key": list(kw), "n": n, "values": [int(x) for x in np.asarray(random.permutation(wrap(kw), n))]}
            for kw in RAW_KEYS[:3] for n in [0, 1, 2, 5, 10, 100, 1626, 2000]]


def randint_cases():
    out = []
    ranges32 = [(0, 8), (-5, 5), (0, 1), (3, 3), (10, 2), (-(2**31), 2**31 - 1), (0, 1000003)]
    ranges64 = [(0, 8), (-(2**40), 2**40 + 7), (-(2**63), 2**63 - 1)]
    for kw in RAW_KEYS[:3]:
        for shape in [(1,), (5,), (3, 3), (7,)]:
            for dtype, ranges in [("int32", ranges32), ("int64", ranges64)]:
                for lo, hi in ranges:
                    v = random.randint(wrap(kw), shape, lo, hi, dtype=dtype)
                    out.append({"key": list(kw), "shape": list(shape), "dtype": dtype, "min": lo, "max": hi,
                                "values": [int(x) for x in np.asarray(v).reshape(-1)]})
    return out


INITIALIZERS = {
    "glorot_uniform": lambda: initializers.glorot_uniform(),
    "glorot_normal": lambda: initializers.glorot_normal(),
    "he_uniform": lambda: initializers.he_uniform(),
    "he_normal": lambda: initializers.he_normal(),
    "lecun_normal": lambda: initializers.lecun_normal(),
    "normal_0.01": lambda: initializers.normal(0.01),
    "normal_0.5": lambda: initializers.normal(0.5),
    "zeros": lambda: initializers.zeros,
    "ones": lambda: initializers.ones,
}


def initializer_cases():
    out = []
    for kw in RAW_KEYS[:2]:
        for shape in [(3, 4), (5, 2), (2, 3, 4), (3, 3, 2, 4)]:
            for name, make in INITIALIZERS.items():
                v = make()(wrap(kw), shape, jnp.float32)
                base, _, arg = name.partition("_0")
                entry = {"name": base if arg else name, "key": list(kw), "shape": list(shape), "bits": f32_bits(v)}
                if arg:
                    entry["stddev_bits"] = bits_of(float("0" + arg))
                out.append(entry)
    return out


def mode_vectors():
    return {
        "key": key_cases(), "split": split_cases(), "fold_in": fold_in_cases(), "bits": bits_cases(),
        "uniform": uniform_cases(), "normal": normal_cases(), "truncated_normal": truncated_normal_cases(),
        "bernoulli": bernoulli_cases(), "permutation": permutation_cases(), "randint": randint_cases(),
        "initializers": initializer_cases(),
    }


def write_vectors(path):
    doc = {"format": "detrain-jax-prng-vectors", "version": 1, "jax_version": jax.__version__,
           "jaxlib_version": jax.lib.__version__ if hasattr(jax.lib, "__version__") else "",
           "jax_enable_x64": True, "modes": {}}
    for name, flag in MODES.items():
        jax.config.update("jax_threefry_partitionable", flag)
        doc["modes"][name] = mode_vectors()
    with open(path, "w") as f:
        json.dump(doc, f, separators=(",", ":"), sort_keys=True)
        f.write("\n")
    print(f"wrote {path} ({os.path.getsize(path)} bytes) with jax {jax.__version__}")


ULP_SAMPLES = 10**6
ULP_KEY = (0, 2026)


def write_ulp_study(directory):
    os.makedirs(directory, exist_ok=True)
    manifest = {"jax_version": jax.__version__, "key": list(ULP_KEY), "n": ULP_SAMPLES, "samples": []}
    n = ULP_SAMPLES
    cases = [("uniform", {"min": -1.0, "max": 1.0}, lambda k: random.uniform(k, (n,), jnp.float32, f32(-1), f32(1))),
             ("uniform", {"min": -3.5, "max": 2.25}, lambda k: random.uniform(k, (n,), jnp.float32, f32(-3.5), f32(2.25))),
             ("normal", {}, lambda k: random.normal(k, (n,), jnp.float32)),
             ("truncated_normal", {"lower": -2.0, "upper": 2.0},
              lambda k: random.truncated_normal(k, f32(-2), f32(2), (n,), jnp.float32)),
             ("truncated_normal", {"lower": -1.0, "upper": 3.0},
              lambda k: random.truncated_normal(k, f32(-1), f32(3), (n,), jnp.float32)),
             ("truncated_normal", {"lower": 0.5, "upper": 1.5},
              lambda k: random.truncated_normal(k, f32(0.5), f32(1.5), (n,), jnp.float32))]
    for name, make in INITIALIZERS.items():
        if name not in ("zeros", "ones"):
            cases.append(("initializer", {"name": name, "shape": [1000, 1000]},
                          lambda k, make=make: make()(k, (1000, 1000), jnp.float32)))
    for mode, flag in MODES.items():
        jax.config.update("jax_threefry_partitionable", flag)
        for i, (sampler, params, fn) in enumerate(cases):
            file = f"{mode}_{i:02d}_{sampler}.bin"
            np.asarray(fn(wrap(ULP_KEY)), dtype=np.float32).view(np.uint32).astype("<u4").tofile(
                os.path.join(directory, file))
            manifest["samples"].append({"mode": mode, "sampler": sampler, "params": params, "file": file})
    with open(os.path.join(directory, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=1, sort_keys=True)
    print(f"wrote {len(manifest['samples'])} sample files to {directory}")


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    default_out = os.path.join(here, "..", "tests", "attest", "prng", "testdata", "jax_vectors.json")
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=os.path.normpath(default_out))
    parser.add_argument("--ulp-dir", help="write the 10^6-sample ulp study files here instead")
    args = parser.parse_args()
    if args.ulp_dir:
        write_ulp_study(args.ulp_dir)
    else:
        write_vectors(args.out)


if __name__ == "__main__":
    main()
