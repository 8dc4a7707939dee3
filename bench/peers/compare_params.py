"""Bitwise comparison of two parameter dumps (models_*.py --determinism OUT.npy).

  compare_params.py LABEL A.npy B.npy

Prints one JSON line: how many of the float32 parameters differ in any bit, of how many, and the
largest relative difference |a - b| / max(|a|, |b|) among them.
"""
import json
import sys

import numpy as np

label, a_path, b_path = sys.argv[1:4]
a, b = np.load(a_path), np.load(b_path)
assert a.shape == b.shape and a.dtype == b.dtype == np.float32, (a.shape, b.shape)
differ = a.view(np.uint32) != b.view(np.uint32)
scale = np.maximum(np.abs(a), np.abs(b))
rel = np.abs(a.astype(np.float64) - b) / np.where(scale > 0, scale, 1)
print(json.dumps(dict(check=label, parameters=int(a.size), differ=int(differ.sum()),
                      max_rel_diff=float(rel.max()) if differ.any() else 0.0)))
