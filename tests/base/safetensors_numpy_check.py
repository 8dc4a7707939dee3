#!/usr/bin/env python3
"""Reads a safetensors file with json + numpy only, as a detrain user would, and checks it.

An independent client for src/base/safetensors.cc: it parses the header itself, checks the
layout the format promises (header padded to 8 bytes, tensors contiguous from 0 and covering the
data exactly), reads each tensor with np.frombuffer and compares it bit for bit with the values
given on the command line.

  safetensors_numpy_check.py FILE [--tensors N] [--expect NAME=DTYPE:SHAPE:V1,V2,...]...
                                  [--metadata K=V]...

SHAPE is dimensions joined by "x" ("2x3"; empty for a scalar); values are in C order. Each
--expect names a tensor that must be present with that dtype, shape and values; --tensors is the
number of tensors; with --metadata the metadata must be exactly the pairs given.
Exits 0 when everything matches, 1 with a message otherwise.
"""
import argparse
import json
import struct
import sys

import numpy as np

DTYPES = {
    "F32": "<f4", "F64": "<f8", "I32": "<i4", "U32": "<u4", "I64": "<i8", "U64": "<u8",
    "U8": "u1", "I8": "i1", "BOOL": "?",
}


def fail(msg):
    print("safetensors_numpy_check: " + msg, file=sys.stderr)
    sys.exit(1)


def read(path):
    with open(path, "rb") as f:
        raw = f.read()
    (n,) = struct.unpack("<Q", raw[:8])
    if (8 + n) % 8 != 0:
        fail(f"header length {n}: data does not start at a multiple of 8")
    header = json.loads(raw[8:8 + n].decode("utf-8"))
    data = raw[8 + n:]
    metadata = header.pop("__metadata__", {})
    spans = sorted((v["data_offsets"][0], v["data_offsets"][1], k) for k, v in header.items())
    pos = 0
    for begin, end, name in spans:
        if begin != pos:
            fail(f"tensor {name} starts at {begin}, expected {pos}")
        pos = end
    if pos != len(data):
        fail(f"tensors cover {pos} of {len(data)} data bytes")
    tensors = {}
    for name, v in header.items():
        begin, end = v["data_offsets"]
        dtype = np.dtype(DTYPES[v["dtype"]])
        tensors[name] = np.frombuffer(data[begin:end], dtype=dtype).reshape(v["shape"])
    return metadata, tensors


def expected_array(spec):
    dtype_name, shape_text, values_text = spec.split(":", 2)
    shape = [int(d) for d in shape_text.split("x")] if shape_text else []
    dtype = np.dtype(DTYPES[dtype_name])
    words = values_text.split(",") if values_text else []
    if dtype.kind == "f":
        values = [float(w) for w in words]
    else:
        values = [int(w) for w in words]
    return np.array(values, dtype=dtype).reshape(shape)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("file")
    ap.add_argument("--tensors", type=int)
    ap.add_argument("--expect", action="append", default=[])
    ap.add_argument("--metadata", action="append", default=[])
    args = ap.parse_args()
    metadata, tensors = read(args.file)
    if args.metadata:
        want = dict(kv.split("=", 1) for kv in args.metadata)
        if metadata != want:
            fail(f"metadata is {metadata}, expected {want}")
    if args.tensors is not None and len(tensors) != args.tensors:
        fail(f"{len(tensors)} tensors {sorted(tensors)}, expected {args.tensors}")
    for name, spec in (e.split("=", 1) for e in args.expect):
        if name not in tensors:
            fail(f"no tensor {name}; the file has {sorted(tensors)}")
        got, exp = tensors[name], expected_array(spec)
        if got.dtype != exp.dtype or got.shape != exp.shape:
            fail(f"{name}: {got.dtype}{list(got.shape)}, expected {exp.dtype}{list(exp.shape)}")
        if got.tobytes() != exp.tobytes():  # bitwise, so -0.0 and NaN payloads count
            fail(f"{name}: values {got.tolist()}, expected {exp.tolist()}")
    print(f"ok: {len(tensors)} tensors, {len(metadata)} metadata entries")


if __name__ == "__main__":
    main()
