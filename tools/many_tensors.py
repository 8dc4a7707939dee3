#!/usr/bin/env python3
"""Times detrain's readers of safetensors headers with many tensors (docs/reliability.md,
"Headers with many tensors").

Builds one bundle of examples/breast_cancer (with checkpoints), then, for each tensor count N,
copies it and replaces one safetensors file with a header of N empty tensors (F32, shape [0],
data_offsets [0, 0]: valid safetensors, a few dozen bytes per entry), and times the command
that reads it:

  checkpoint  verify --integrity-only, a checkpoint replaced (integrity reads its metadata; it
              verifies: the tensors are checked against the step records' roots in recompile)
  recompile   verify --no-replay, a checkpoint replaced (the whole file read and rewritten)
  final       verify --integrity-only, final/weights.safetensors replaced
  split       verify --integrity-only, data/split.safetensors replaced
  inspect     inspect, data/split.safetensors replaced
  initial     compile of examples/jax/mlp_bf16/run.json with its initial state replaced

A bundle is resealed after the edit the way a forger without a signing key can (manifest.json's
files[] and root digest, the final weights' metadata; tests/tools/bundle_testlib.py), and a
replaced checkpoint or final weights file keeps the original's metadata, so that the verifier
gets past the file digests to the safetensors readers. Each reader must finish in time linear
in N (inspect reads and does not check: exit 0). The median of --repeat runs is printed, one row
per N, in seconds (wall, or CPU with --cpu); a run past --timeout is shown as "> TIMEOUT", and
that reader is not run again at the larger counts ("—").

Usage: tools/many_tensors.py [--detrain build/src/cli/detrain] [--repeat 3] [--cpu]
                             [--counts 12500,25000,...] [--readers checkpoint,final,...]
                             [--timeout 120] [--verbose]
"""
import argparse
import hashlib
import json
import os
import resource
import shutil
import statistics
import struct
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tools"))
import check_bundle as cb  # noqa: E402
READERS = ["checkpoint", "recompile", "final", "split", "inspect", "initial"]


def many_tensors(n, metadata=None):
    """The bytes of a valid safetensors file of n empty tensors (canonical key order)."""
    parts = []
    if metadata:
        parts.append('"__metadata__":' + json.dumps(metadata, separators=(",", ":"), sort_keys=True))
    entry = '{"data_offsets":[0,0],"dtype":"F32","shape":[0]}'
    names = sorted("t%07d" % i for i in range(n))
    parts.extend('"%s":%s' % (name, entry) for name in names)
    header = ("{" + ",".join(parts) + "}").encode()
    header += b" " * ((8 - len(header) % 8) % 8)
    return struct.pack("<Q", len(header)) + header


def metadata_of(path):
    with open(path, "rb") as f:
        data = f.read()
    (n,) = struct.unpack_from("<Q", data, 0)
    return json.loads(data[8:8 + n]).get("__metadata__", {})


def reseal(bundle, n_final=None):
    """files[], the root digest and the final weights' metadata recomputed after an edit; with
    n_final, the final weights become n_final empty tensors with that metadata."""
    path = os.path.join(bundle, "manifest.json")
    with open(path) as f:
        m = json.load(f)
    for entry in m["files"]:
        with open(os.path.join(bundle, entry["path"]), "rb") as f:
            data = f.read()
        entry["size"] = len(data)
        entry["merkle_root"] = cb.merkle_root(data).hex()
    body = {k: v for k, v in m.items() if k != "root_digest"}
    m["root_digest"] = hashlib.sha256(cb.canonical_bytes(body)).hexdigest()
    with open(path, "wb") as f:
        f.write(cb.canonical_bytes(m) + b"\n")
    final = os.path.join(bundle, "final/weights.safetensors")
    meta = metadata_of(final)
    meta["detrain.bundle_root"] = m["root_digest"]
    if n_final is None:
        with open(final, "rb") as f:
            _, tensors = cb.read_safetensors(f.read(), "final")
        payload = cb.write_safetensors(meta, tensors)
    else:
        payload = many_tensors(n_final, meta)
    with open(final, "wb") as f:
        f.write(payload)


def run_timed(cmd, timeout, cpu):
    """(seconds, what happened): CPU seconds (user + system) with cpu, else wall seconds."""
    start = time.monotonic()
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    try:
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=timeout)
    except subprocess.TimeoutExpired:
        return None, "timeout"
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    elapsed = time.monotonic() - start
    if cpu:
        elapsed = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    last = (p.stderr or p.stdout).decode(errors="replace").strip().splitlines()
    return elapsed, "exit %d: %s" % (p.returncode, last[-1][:160] if last else "")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--detrain", default=os.path.join(ROOT, "build/src/cli/detrain"))
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--counts", default="12500,25000,50000,100000,250000,1000000")
    ap.add_argument("--readers", default=",".join(READERS))
    ap.add_argument("--timeout", type=float, default=120)
    ap.add_argument("--verbose", action="store_true")
    ap.add_argument("--cpu", action="store_true",
                    help="report CPU seconds (user + system) rather than wall seconds: the "
                         "figure that does not depend on what else the machine runs")
    args = ap.parse_args()
    counts = [int(c) for c in args.counts.split(",")]
    readers = args.readers.split(",")
    work = tempfile.mkdtemp(prefix="many-tensors.")
    try:
        bundle = os.path.join(work, "bundle")
        subprocess.run([args.detrain, "run", os.path.join(ROOT, "examples/breast_cancer/train.dt"),
                        "--attest", "-o", bundle], check=True, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL)
        ckpts = sorted(os.listdir(os.path.join(bundle, "checkpoints")))
        spec_src = os.path.join(ROOT, "examples/jax/mlp_bf16")
        print("| tensors | " + " | ".join(readers) + " |")
        print("|---:|" + "---:|" * len(readers))
        timed_out = set()  # readers past the timeout at a smaller count: not run again
        for n in counts:
            payload = many_tensors(n)
            row = []
            for reader in readers:
                if reader in timed_out:
                    row.append("—")
                    continue
                case = os.path.join(work, reader)
                shutil.rmtree(case, ignore_errors=True)
                if reader == "initial":
                    shutil.copytree(spec_src, case)
                    with open(os.path.join(case, "run.json")) as f:
                        spec = json.load(f)
                    spec["data"]["path"] = os.path.join(ROOT, "examples/digits/digits.csv")
                    with open(os.path.join(case, "run.json"), "w") as f:
                        json.dump(spec, f)
                    target = os.path.join(case, "initial_state.safetensors")
                    cmd = [args.detrain, "compile", os.path.join(case, "run.json")]
                else:
                    shutil.copytree(bundle, case)
                    target = os.path.join(case, {
                        "checkpoint": "checkpoints/" + ckpts[0],
                        "recompile": "checkpoints/" + ckpts[0],
                        "final": "final/weights.safetensors",
                        "split": "data/split.safetensors",
                        "inspect": "data/split.safetensors"}[reader])
                    mode = "--no-replay" if reader == "recompile" else "--integrity-only"
                    cmd = ([args.detrain, "inspect", case] if reader == "inspect" else
                           [args.detrain, "verify", mode, case])
                if reader == "final":
                    reseal(case, n)
                elif reader == "initial":
                    with open(target, "wb") as f:
                        f.write(payload)
                else:
                    data = (many_tensors(n, metadata_of(target)) if target.endswith(ckpts[0])
                            else payload)
                    with open(target, "wb") as f:
                        f.write(data)
                    reseal(case)
                times = []
                for _ in range(args.repeat):
                    t, what = run_timed(cmd, args.timeout, args.cpu)
                    if args.verbose:
                        print("  %s %d: %s" % (reader, n, what), file=sys.stderr)
                    if t is None:
                        break
                    times.append(t)
                if len(times) < args.repeat:
                    timed_out.add(reader)
                    row.append("> %g" % args.timeout)
                else:
                    row.append("%.3f" % statistics.median(times))
                shutil.rmtree(case)
            print("| %s | %s |" % (format(n, ","), " | ".join(row)), flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
