#!/usr/bin/env bash
# Everything about the CUDA backend that needs a GPU (docs/cuda.md "On a GPU"), in one run that
# fits in 8 minutes on one GPU and may be run again (it writes only under $GPU_CHECK_OUT):
#
#   1. the GPU tests (tests/runtime/cuda_gpu_test.cc, ctest -L gpu): every kernel case, random
#      modules and 3 train steps of each example on the GPU(s) equal the interpreter's and the
#      CPU's bits, on 1, 2 and 8 devices;
#   2. bundles across backends: breast_cancer trained on the GPU verifies with --backend cpu and
#      one trained on the CPU verifies with --backend cuda; both have the same steps.jsonl;
#   3. the train-step time of detrain on the GPU next to JAX on the same GPU with
#      --xla_gpu_deterministic_ops=true (bench/peers), ROUNDS interleaved rounds, medians.
#
# Binaries: from gpu-carry/detrain-gpu.tar.xz when present (tools/gpu-pack.sh made it on a build
# machine; the GPU machine then needs no compiler or packages), else built here (tools/build.sh;
# its Debian packages must be installed). JAX: the python3 on PATH, when it imports jax and optax.
#
# Usage: tools/gpu-check.sh            Environment: ROUNDS=2 STEPS=20 GPU_CHECK_OUT=DIR
set -uo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
out=${GPU_CHECK_OUT:-${OUT:-/tmp}/gpu-check}
rounds=${ROUNDS:-2}
steps=${STEPS:-20}
mkdir -p "$out"
report=$out/report.txt
: > "$report"
say() { echo "$*" | tee -a "$report"; }
start=$(date +%s)
elapsed() { echo "$(($(date +%s) - start)) s"; }

say "gpu-check $(date -u +%Y-%m-%dT%H:%M:%SZ), commit $(git rev-parse --short=12 HEAD 2> /dev/null || cat gpu-carry/commit 2> /dev/null || echo unknown)"
if ! command -v nvidia-smi > /dev/null || ! nvidia-smi -L > "$out/gpus.txt" 2>&1; then
  say "no NVIDIA GPU here (nvidia-smi): nothing to check"
  exit 2
fi
sed 's/^/  /' "$out/gpus.txt" | tee -a "$report"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>&1 |
  sed 's/^/  /' | tee -a "$report"

# --- Binaries and data ------------------------------------------------------------------------
if [[ -f gpu-carry/detrain-gpu.tar.xz ]]; then
  pack=/tmp/detrain-gpu
  rm -rf "$pack" && mkdir -p "$pack" && tar -C "$pack" -xJf gpu-carry/detrain-gpu.tar.xz
  # Wrappers: the carried libraries for detrain's binaries only (python3 keeps its own).
  bin=$pack/wrap
  mkdir -p "$bin"
  for b in "$pack"/bin/*; do
    printf '#!/bin/sh\nLD_LIBRARY_PATH=%s exec %s "$@"\n' \
      "$pack/lib:/usr/local/cuda/lib64:/usr/local/cuda/targets/x86_64-linux/lib" "$b" \
      > "$bin/$(basename "$b")"
    chmod +x "$bin/$(basename "$b")"
  done
  # The data where the example programs name it.
  mkdir -p /usr/lib/python3/dist-packages/sklearn/datasets/data /usr/share/common-licenses
  cp -n "$pack/data/breast_cancer.csv" /usr/lib/python3/dist-packages/sklearn/datasets/data/
  cp -n "$pack/data/GPL-3" /usr/share/common-licenses/
  cp -n "$pack/data/digits.csv" examples/digits/
  say "binaries: gpu-carry (commit $(cat "$pack/commit"))"
else
  tools/build.sh detrain runtime_cuda_gpu_test bench_peer_step > "$out/build.log" 2>&1 ||
    { say "build failed: $out/build.log"; tail -20 "$out/build.log"; exit 1; }
  bin=$out/bin
  mkdir -p "$bin"
  ln -sf "$root/build/src/cli/detrain" "$root/build/tests/runtime/runtime_cuda_gpu_test" \
    "$root/build/bench/bench_peer_step" "$bin/"
  say "binaries: built here ($(elapsed))"
fi
export PATH=$bin:$PATH
status=0

# --- 1. GPU tests -----------------------------------------------------------------------------
say ""
say "1. GPU tests (cuda_gpu_test)"
(cd "$root" && DETRAIN_SOURCE_DIR=$root runtime_cuda_gpu_test > "$out/gpu_test.log" 2>&1)
rc=$?
passed=$(grep -c '^\[       OK \]' "$out/gpu_test.log")
failed=$(grep -c '^\[  FAILED  \].*(' "$out/gpu_test.log")
skipped=$(grep -c '^\[  SKIPPED \].*(' "$out/gpu_test.log")
say "   exit $rc: $passed passed, $failed failed, $skipped skipped ($(elapsed))"
grep -E '^  (gpu|NVIDIA)|equal the CPU|^\[  FAILED' "$out/gpu_test.log" | sed 's/^/   /' |
  sort -u | head -20 | tee -a "$report"
((rc == 0)) || status=1
if ((skipped > 0)); then
  say "   WARNING: tests skipped on a machine with a GPU:"
  grep -A1 'Skipped$' "$out/gpu_test.log" | grep -v -e '--' -e 'Skipped$' | sort -u | head -3 |
    sed 's/^/     /' | tee -a "$report"
  status=1
fi

# --- 2. Bundles across backends ---------------------------------------------------------------
say ""
say "2. bundles: made on the GPU, verified on the CPU, and the other way round"
rm -rf "$out/gpu-bundle" "$out/cpu-bundle"
bundle_check() {  # name backend-made backend-verified
  local b=$out/$1-bundle
  if detrain run examples/breast_cancer/train.dt --attest -o "$b" --backend "$2" \
    > "$out/$1-run.log" 2>&1 &&
    detrain verify "$b" --backend "$3" --json > "$out/$1-verify.json" 2> "$out/$1-verify.log"; then
    say "   made on $2, verified on $3: ok ($(grep -o '"final_step_hash": *"[0-9a-f]*"' \
      "$out/$1-verify.json" | head -1))"
  else
    say "   made on $2, verified on $3: FAILED ($out/$1-run.log, $1-verify.log)"
    tail -n 5 "$out/$1-verify.log" "$out/$1-run.log" | sed 's/^/     /' | tee -a "$report"
    status=1
  fi
}
bundle_check gpu cuda cpu
bundle_check cpu cpu cuda
if cmp -s "$out/gpu-bundle/steps.jsonl" "$out/cpu-bundle/steps.jsonl"; then
  say "   steps.jsonl of the two runs: byte-identical (every step's digest and hash)"
else
  say "   steps.jsonl of the two runs: DIFFERENT"
  status=1
fi
grep -o '"device_list":\[[^]]*\]' "$out/gpu-bundle/environment.json" | sed 's/^/   /' |
  tee -a "$report"
say "   ($(elapsed))"

# --- 3. Train-step time next to JAX -----------------------------------------------------------
say ""
say "3. train step, ms (median of $rounds interleaved rounds of $steps steps each)"
python3 bench/mlp/make_data.py build/bench-data/mlp > /dev/null 2>&1 ||
  say "   (no numpy: the mlp model is skipped)"
have_jax=0
python3 -c 'import jax, optax' 2> /dev/null && have_jax=1
((have_jax)) || say "   (python3 has no jax/optax: JAX is not measured)"
program() { case $1 in mlp) echo bench/mlp/train.dt ;; *) echo "examples/$1/train.dt" ;; esac; }
: > "$out/bench.jsonl"
for r in $(seq "$rounds"); do
  for m in mlp digits charlm; do
    [[ $m == mlp && ! -f build/bench-data/mlp/x.npy ]] && continue
    bench_peer_step "$(program "$m")" --model "$m" --threads 1 --backend cuda --steps "$steps" \
      --warmup 3 >> "$out/bench.jsonl" 2>> "$out/bench.log" || status=1
    if ((have_jax)); then
      (cd bench/peers && XLA_FLAGS=--xla_gpu_deterministic_ops=true \
        python3 models_jax.py --model "$m" --threads 1 --steps "$steps" --warmup 3) \
        >> "$out/bench.jsonl" 2>> "$out/bench.log" || status=1
    fi
  done
done
python3 - "$out/bench.jsonl" << 'PY' | tee -a "$report"
import json, statistics, sys
rows = {}
for line in open(sys.argv[1]):
    line = line.strip()
    if not line.startswith("{"):
        continue
    j = json.loads(line)
    rows.setdefault((j["model"], j["framework"]), []).append(j)
print("   %-8s %12s %12s %10s %14s %14s" % ("model", "detrain", "JAX det.", "ratio",
                                           "detrain first", "JAX first"))
for m in ("mlp", "digits", "charlm"):
    d, x = rows.get((m, "detrain"), []), rows.get((m, "jax"), [])
    if not d:
        continue
    ds = statistics.median(r["step_ms"] for r in d)
    xs = statistics.median(r["step_ms"] for r in x) if x else float("nan")
    df = statistics.median(r["first_call_ms"] for r in d)
    xf = statistics.median(r["first_call_ms"] for r in x) if x else float("nan")
    print("   %-8s %12.3f %12.3f %10.2f %14.0f %14.0f" % (m, ds, xs, ds / xs, df, xf))
devices = {r.get("device") for v in rows.values() for r in v if r.get("device")}
print("   devices: " + "; ".join(sorted(devices)))
PY
say ""
say "done in $(elapsed); exit $status; logs in $out"
exit $status
