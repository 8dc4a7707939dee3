#!/usr/bin/env python3
"""Writes the benchmark MLP's synthetic dataset: x.npy (float32 [2560, 784], uniform in [0, 1),
like MNIST pixels) and y.npy (int32 [2560], the argmax of (x - 1/2) @ W for a fixed random W: a learnable
10-class problem). Seeded, so every machine makes the same bytes.

Usage: bench/mlp/make_data.py [OUT_DIR]   (default: build/bench-data/mlp)
Needs numpy (/usr/bin/python3 on Debian has python3-numpy)."""
import os
import sys

import numpy as np

out = sys.argv[1] if len(sys.argv) > 1 else "build/bench-data/mlp"
os.makedirs(out, exist_ok=True)
rng = np.random.default_rng(20261201)
x = rng.random((2560, 784), dtype=np.float32)
w = rng.standard_normal((784, 10)).astype(np.float32)
y = np.argmax((x - 0.5) @ w, axis=1).astype(np.int32)  # centred: balanced classes
np.save(os.path.join(out, "x.npy"), x)
np.save(os.path.join(out, "y.npy"), y)
print(f"wrote {out}/x.npy {x.shape} and {out}/y.npy {y.shape}")
