#!/usr/bin/env python3
"""Reference vectors for detrain's optimizers and schedules, computed by optax itself.

For each optimizer configuration, starts from fixed parameters and applies 20 updates with a
fixed sequence of gradients (so the optimizer is tested alone, not autodiff), recording the
parameters after every step as float32 bit patterns. Schedules are recorded for steps 0..N.

Usage: pip install jax optax; python3 tools/optax_vectors.py > tests/frontend/testdata/optax_vectors.json
Not a dependency of detrain: the JSON file is committed and read by tests/frontend/optimizer_test.cc.
"""
import json
import sys

import jax
import jax.numpy as jnp
import numpy as np
import optax

STEPS = 20


def bits(a):
    return [int(x) for x in np.asarray(a, dtype=np.float32).view(np.uint32).ravel()]


def gradients():
    # Deterministic, sign-varying gradients, some large enough for clipping to matter.
    rng = np.random.default_rng(1234)
    for t in range(STEPS):
        scale = 3.0 if t % 5 == 4 else 0.5
        yield {"w": (rng.standard_normal((4, 3)) * scale).astype(np.float32),
               "b": (rng.standard_normal((3,)) * scale).astype(np.float32)}


def initial():
    rng = np.random.default_rng(99)
    return {"w": rng.standard_normal((4, 3)).astype(np.float32),
            "b": rng.standard_normal((3,)).astype(np.float32)}


def schedule(spec):
    name = spec["name"]
    if name == "constant":
        return optax.constant_schedule(spec["value"])
    if name == "linear":
        return optax.linear_schedule(spec["init"], spec["end"], spec["steps"])
    if name == "cosine_decay":
        return optax.cosine_decay_schedule(spec["init"], spec["decay_steps"], spec.get("alpha", 0.0))
    if name == "warmup_cosine_decay":
        return optax.warmup_cosine_decay_schedule(spec["init"], spec["peak"], spec["warmup_steps"],
                                                  spec["decay_steps"], spec.get("end", 0.0))
    raise ValueError(name)


def optimizer(spec):
    lr = schedule(spec["learning_rate"])
    name = spec["name"]
    if name == "sgd":
        opt = optax.sgd(lr)
    elif name == "momentum":
        opt = optax.sgd(lr, momentum=spec["momentum"], nesterov=spec["nesterov"])
    elif name == "adam":
        opt = optax.adam(lr, b1=spec["b1"], b2=spec["b2"], eps=spec["eps"])
    elif name == "adamw":
        opt = optax.adamw(lr, b1=spec["b1"], b2=spec["b2"], eps=spec["eps"], weight_decay=spec["weight_decay"])
    else:
        raise ValueError(name)
    if "clip_norm" in spec:
        opt = optax.chain(optax.clip_by_global_norm(spec["clip_norm"]), opt)
    return opt


CONSTANT = {"name": "constant", "value": 0.05}
CASES = [
    {"name": "sgd", "learning_rate": CONSTANT},
    {"name": "sgd", "learning_rate": CONSTANT, "clip_norm": 1.0},
    {"name": "momentum", "learning_rate": CONSTANT, "momentum": 0.9, "nesterov": False},
    {"name": "momentum", "learning_rate": CONSTANT, "momentum": 0.9, "nesterov": True},
    {"name": "adam", "learning_rate": CONSTANT, "b1": 0.9, "b2": 0.999, "eps": 1e-8},
    {"name": "adam", "learning_rate": {"name": "linear", "init": 0.0, "end": 0.1, "steps": 10},
     "b1": 0.8, "b2": 0.99, "eps": 1e-6, "clip_norm": 2.0},
    {"name": "adamw", "learning_rate": CONSTANT, "b1": 0.9, "b2": 0.999, "eps": 1e-8, "weight_decay": 1e-2},
    {"name": "adamw", "learning_rate": {"name": "warmup_cosine_decay", "init": 0.0, "peak": 0.1,
                                        "warmup_steps": 5, "decay_steps": 20, "end": 0.001},
     "b1": 0.9, "b2": 0.999, "eps": 1e-8, "weight_decay": 1e-4},
    {"name": "sgd", "learning_rate": {"name": "cosine_decay", "init": 0.1, "decay_steps": 15, "alpha": 0.1}},
]
SCHEDULES = [
    CONSTANT,
    {"name": "linear", "init": 0.0, "end": 0.1, "steps": 10},
    {"name": "linear", "init": 0.3, "end": 0.1, "steps": 7},
    {"name": "cosine_decay", "init": 0.1, "decay_steps": 15, "alpha": 0.1},
    {"name": "cosine_decay", "init": 1e-3, "decay_steps": 8, "alpha": 0.0},
    {"name": "warmup_cosine_decay", "init": 0.0, "peak": 0.1, "warmup_steps": 5, "decay_steps": 20, "end": 0.001},
]


def run_case(spec):
    opt = optimizer(spec)
    params = {k: jnp.asarray(v) for k, v in initial().items()}
    state = opt.init(params)
    steps = []
    for g in gradients():
        g = {k: jnp.asarray(v) for k, v in g.items()}
        updates, state = opt.update(g, state, params)
        params = optax.apply_updates(params, updates)
        steps.append({"w": bits(params["w"]), "b": bits(params["b"])})
    return {"optimizer": spec, "steps": steps}


def main():
    out = {
        "generator": "tools/optax_vectors.py",
        "jax": jax.__version__,
        "optax": optax.__version__,
        "initial": {k: bits(v) for k, v in initial().items()},
        "gradients": [{k: bits(v) for k, v in g.items()} for g in gradients()],
        "cases": [run_case(c) for c in CASES],
        "schedules": [{"schedule": s, "values": bits([schedule(s)(t) for t in range(25)])} for s in SCHEDULES],
    }
    json.dump(out, sys.stdout, indent=None, separators=(",", ":"), sort_keys=True)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
