#!/usr/bin/env python3
"""Regenerates the seed corpora of the libFuzzer harnesses (tests/fuzz/corpus/<harness>/) from
the repository's own test data, examples and golden bundle (audit-bundles/v1/tiny). Each seed
is a file named after its source; the harnesses that take a selector or option prefix
(csv_fuzz, json_fuzz, bundle_fuzz) get it prepended as their *_fuzz.cc describes. Seeds are kept
small (the corpora together stay under a few MB). Deterministic; standard library only.

Usage: tests/fuzz/make_corpus.py   (rewrites tests/fuzz/corpus/ in place)
"""
import json
import os
import re
import shutil
import struct
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
OUT = os.path.join(ROOT, "tests", "fuzz", "corpus")
TINY = os.path.join(ROOT, "audit-bundles", "v1", "tiny")
SKLEARN = "/usr/lib/python3/dist-packages/sklearn/datasets/data"


def read(path):
    with open(path, "rb") as f:
        return f.read()


def put(harness, name, data):
    d = os.path.join(OUT, harness)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name.replace("/", "_")), "wb") as f:
        f.write(data)


def files_under(rel, suffix):
    top = os.path.join(ROOT, rel)
    for dirpath, _, names in sorted(os.walk(top)):
        for n in sorted(names):
            if n.endswith(suffix):
                p = os.path.join(dirpath, n)
                yield os.path.relpath(p, ROOT), read(p)


def npy(descr, shape, payload, fortran=False, version=1):
    header = "{'descr': '%s', 'fortran_order': %s, 'shape': %s, }" % (
        descr, "True" if fortran else "False",
        "(" + "".join("%d," % s for s in shape) + ")" if len(shape) != 1 else "(%d,)" % shape[0])
    prefix = 10 if version == 1 else 12
    pad = (64 - (prefix + len(header) + 1) % 64) % 64
    header = header + " " * pad + "\n"
    size = struct.pack("<H", len(header)) if version == 1 else struct.pack("<I", len(header))
    return b"\x93NUMPY" + bytes([version, 0]) + size + header.encode() + payload


def head_lines(data, n):
    return b"".join(data.splitlines(keepends=True)[:n])


def main():
    shutil.rmtree(OUT, ignore_errors=True)
    # npy: the interpreter's JAX vectors, and one of each dtype and layout the reader knows.
    for rel, data in files_under("tests/compiler/interp/testdata/jax/mlp_grad", ".npy"):
        put("npy", rel, data)
    for rel, data in files_under("tests/compiler/interp/testdata/jax/data_movement", ".npy"):
        put("npy", rel, data)
    put("npy", "f4_2x3", npy("<f4", (2, 3), struct.pack("<6f", *range(6))))
    put("npy", "f4_scalar", npy("<f4", (), struct.pack("<f", 1.5)))
    put("npy", "i8_3", npy("<i8", (3,), struct.pack("<3q", -1, 0, 1)))
    put("npy", "i4_fortran", npy("<i4", (2, 2), struct.pack("<4i", 1, 2, 3, 4), fortran=True))
    put("npy", "b1_4", npy("|b1", (4,), b"\x00\x01\x01\x00"))
    put("npy", "u1_0", npy("|u1", (0,), b""))
    put("npy", "f8_v2", npy("<f8", (1,), struct.pack("<d", 2.0), version=2))
    # safetensors: the golden bundle's state, weights and split.
    for rel in ["checkpoints/step-00000008.safetensors", "final/weights.safetensors",
                "data/split.safetensors"]:
        put("safetensors", rel, read(os.path.join(TINY, rel)))
    # ... and headers of many entries (docs/reliability.md, "Headers with many tensors"), within
    # the harness's 16 KB: empty tensors in order, then in reverse order with whitespace and a
    # name given twice, then one-byte tensors laid out from the end.
    def st(header, data=b""):
        header = header.encode()
        header += b" " * ((8 - len(header) % 8) % 8)
        return struct.pack("<Q", len(header)) + header + data

    empty = '{"data_offsets":[0,0],"dtype":"F32","shape":[0]}'
    names = ["t%04d" % i for i in range(200)]
    put("safetensors", "many_empty", st(
        '{"__metadata__":{"detrain.format":"x"},' + ",".join('"%s":%s' % (n, empty) for n in names)
        + "}"))
    put("safetensors", "many_unsorted", st(
        "{ " + " ,\n".join('"%s" : %s' % (n, empty) for n in reversed(names + names[:1])) + " }"))
    put("safetensors", "many_bytes", st(
        "{" + ",".join('"%s":{"dtype":"U8","shape":[1],"data_offsets":[%d,%d]}' % (n, 199 - i, 200 - i)
                       for i, n in enumerate(names)) + "}", bytes(range(200))))
    # npz: numpy.savez and savez_compressed archives (tests/frontend/testdata/npz).
    for rel, data in files_under("tests/frontend/testdata/npz", ".npz"):
        put("npz", rel, data)
    # csv: option bytes (csv_fuzz.cc) then the file.
    tiny_csv = read(os.path.join(TINY, "data/files/tiny.csv"))
    put("csv", "tiny", b"\x00\x00" + head_lines(tiny_csv, 16))
    put("csv", "tiny_f32_label0", b"\x42\x00" + head_lines(tiny_csv, 8))
    put("csv", "header_named", b"\x81\x0a" + b"x0,a,y\n1,2,0\n3,4.5e-3,1\n\n-0,inf,1\r\n")
    cancer = os.path.join(SKLEARN, "breast_cancer.csv")
    if os.path.exists(cancer):
        put("csv", "breast_cancer_skip1", b"\x04\x00" + head_lines(read(cancer), 6))
    # json: selector byte (json_fuzz.cc) then the text.
    for name in ["stages/02.init.json", "environment.json", "run.json", "data/data.json"]:
        put("json", "0_" + name, b"\x00" + read(os.path.join(TINY, name)))
    put("json", "0_numbers", b"\x00" + b'[0,-0,1e308,5e-324,1.5,-2.25e-7,9007199254740993,'
        b'18446744073709551615,-9223372036854775808,"\\u00e9\\ud83d\\ude00"]')
    rank = b'{"rank":0,"host":"h","devices":1,"detrain":"v","stages":"ab","data":["cd"]}'
    put("json", "6_ranks", b"\x06" + rank + b"\n" + rank.replace(b'"rank":0', b'"rank":1'))
    put("json", "7_verdicts", b"\x07" + b'[[1,-1,"",100],[3,250,"step 250 differs",50]]')
    put("json", "1_steps", b"\x01" + head_lines(read(os.path.join(TINY, "steps.jsonl")), 6))
    put("json", "2_lineage", b"\x02" + head_lines(read(os.path.join(TINY, "lineage.jsonl")), 40))
    manifest = read(os.path.join(TINY, "manifest.json"))
    put("json", "3_manifest", b"\x03" + manifest)
    put("json", "4_data", b"\x04" + read(os.path.join(TINY, "data/data.json")))
    config = json.dumps(json.loads(manifest)["config"], sort_keys=True, separators=(",", ":"))
    put("json", "5_config", b"\x05" + config.encode())
    # hlo: the IR tests' modules (valid and invalid), the passes' inputs, the golden stages.
    for top in ["tests/compiler/ir/testdata", "tests/compiler/xla_import/testdata",
                "tests/compiler/passes/testdata",
                "tests/compiler/interp/testdata", "tests/runtime/testdata/loops"]:
        for rel, data in files_under(top, ".hlo"):
            if len(data) <= 16384:
                put("hlo", rel, data)
    for name in ["stages/01.source.hlo", "stages/02.eval.hlo"]:
        put("hlo", name, read(os.path.join(TINY, name)))
    # plan: the golden stage-4 plans.
    for name in ["stages/04.plan.pb", "stages/04.eval-plan.pb"]:
        put("plan", name, read(os.path.join(TINY, name)))
    # and a plan with nested loops (while kernels holding sub-plans).
    put("plan", "loops_nested.plan.pb",
        read(os.path.join(ROOT, "tests/runtime/testdata/loops/nested.plan.pb")))
    # dt: programs, each with a "%%data" section its loss accepts (dt_fuzz.cc).
    put("dt", "tiny", read(os.path.join(TINY, "program/train.dt")))
    put("dt", "tiny_with_data",
        read(os.path.join(TINY, "program/train.dt")) + b"%%data\n" + head_lines(tiny_csv, 24))
    # The examples' batches shrunk to 8 so that 40 rows of data make a training split.
    def small(rel):
        text = read(os.path.join(ROOT, rel))
        return re.sub(rb"batch = [0-9]+", b"batch = 8", text)
    if os.path.exists(cancer):
        put("dt", "breast_cancer", small("examples/breast_cancer/train.dt") + b"%%data\n" +
            head_lines(read(cancer), 41))
    digits = os.path.join(ROOT, "examples/digits/digits.csv")
    if os.path.exists(digits):
        put("dt", "digits", small("examples/digits/train.dt") + b"%%data\n" +
            head_lines(read(digits), 40))
    put("dt", "charlm", small("examples/charlm/train.dt") + b"%%data\n" +
        read(os.path.join(ROOT, "README.md"))[:2048])
    put("dt", "bench_mlp", read(os.path.join(ROOT, "bench/mlp/train.dt")))
    # bundle: per file (sorted, as bundle_fuzz.cc indexes them), a flipped byte and a truncation.
    names = []
    for dirpath, _, fs in os.walk(TINY):
        names += [os.path.join(dirpath, f) for f in fs]
    names.sort()
    for k, path in enumerate(names):
        data = read(path)
        rel = os.path.relpath(path, TINY)
        mid = len(data) // 2
        flipped = bytes([data[mid] ^ 0x01]) if data else b"x"
        put("bundle", "%02d_flip_%s" % (k, rel), bytes([k, 1]) + struct.pack("<I", mid) + flipped)
        put("bundle", "%02d_trunc_%s" % (k, rel), bytes([k, 2]) + struct.pack("<I", mid))
        # Resealed (bundle_fuzz.cc byte 1 bit 2): past the file list to the checks behind it.
        put("bundle", "%02d_flip_sealed_%s" % (k, rel),
            bytes([k, 5]) + struct.pack("<I", mid) + flipped)
        if rel.startswith("stages/0") or rel.startswith("program/"):  # and recompiled (bit 3)
            put("bundle", "%02d_flip_sealed_recompile_%s" % (k, rel),
                bytes([k, 13]) + struct.pack("<I", mid) + flipped)
        if rel == "steps.jsonl":  # an edit that changes nothing: the whole bundle verifies
            put("bundle", "%02d_same_sealed_recompile_%s" % (k, rel),
                bytes([k, 13]) + struct.pack("<I", mid) + data[mid:mid + 1])
    return 0


if __name__ == "__main__":
    sys.exit(main())
