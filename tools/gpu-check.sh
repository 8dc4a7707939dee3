#!/usr/bin/env bash
# Everything about the CUDA backend that needs a GPU (docs/cuda.md "On a GPU"), in one run
# (192 s on one H200) that may be run again (it writes only under $GPU_CHECK_OUT):
#
#   1. the GPU tests (tests/runtime/cuda_gpu_test.cc, ctest -L gpu), sharded over $SHARDS
#      processes: every kernel case, random modules and 3 train steps of each example on the
#      GPU(s) equal the interpreter's and the CPU's bits, on 1, 2 and 8 devices;
#   2. bundles across backends: breast_cancer trained on the GPU verifies with --backend cpu and
#      one trained on the CPU verifies with --backend cuda; both have the same steps.jsonl;
#      2b. the JAX exports (examples/jax) on the GPU: the CPU's steps.jsonl, verified on the CPU;
#      2c. the mlp with the state resident and digested on the GPU (--step-digest
#          xxh3-128-chunked) next to the state read out every step, verified on the CPU;
#   3. the train-step time of detrain on the GPU next to JAX on the same GPU with
#      --xla_gpu_deterministic_ops=true (bench/peers), ROUNDS interleaved rounds, medians;
#   4. the kernel time of 2 mlp steps (ncu), where ncu can profile.
#
# Binaries: from gpu-carry/detrain-gpu.tar.xz when present (tools/gpu-pack.sh made it on a build
# machine; the GPU machine then needs no compiler or packages), else built here (tools/build.sh;
# its Debian packages must be installed). JAX: the python3 on PATH, when it imports jax and optax.
#
# Every section runs under its own time limit, so the whole stays inside one lease of the device
# machine; the logs go to $GPU_CHECK_OUT (default /tmp/gpu-check), and where the device tool's
# $OUT is set, report.txt and one archive of the logs are copied there at the end.
#
# Usage: tools/gpu-check.sh [--collect]     (--collect: only copy what a stopped run left to $OUT)
#        Environment: ROUNDS=2 STEPS=20 GPU_CHECK_OUT=DIR SHARDS=4
set -uo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
out=${GPU_CHECK_OUT:-/tmp/gpu-check}
rounds=${ROUNDS:-2}
steps=${STEPS:-20}
shards=${SHARDS:-4}
report=$out/report.txt
say() { echo "$*" | tee -a "$report"; }
start=$(date +%s)
elapsed() { echo "$(($(date +%s) - start)) s"; }
collect() {  # the report and the logs, where the device tool brings files back
  [[ -n ${OUT:-} && -d ${OUT:-} ]] || return 0
  cp "$report" "$OUT/report.txt"
  tar -C "$out" -czf "$OUT/gpu-check-logs.tar.gz" --exclude='*-bundle' . 2> /dev/null
  # The bundles made on the GPU, to verify elsewhere (those made on the CPU can be made again).
  tar -C "$out" -czf "$OUT/gpu-bundles.tar.gz" \
    $(cd "$out" && ls -d gpu-bundle jax-*-gpu-bundle 2> /dev/null) 2> /dev/null
}
[[ ${1:-} == --collect ]] && { collect; exit; }
rm -rf "$out" && mkdir -p "$out"
: > "$report"
trap collect EXIT

say "gpu-check $(date -u +%Y-%m-%dT%H:%M:%SZ), commit $(git rev-parse --short=12 HEAD 2> /dev/null || cat gpu-carry/commit 2> /dev/null || echo unknown)"
if ! command -v nvidia-smi > /dev/null || ! nvidia-smi -L > "$out/gpus.txt" 2>&1; then
  say "no NVIDIA GPU here (nvidia-smi): nothing to check"
  exit 2
fi
sed 's/^/  /' "$out/gpus.txt" | tee -a "$report"
say "  toolkit: $(ls /usr/local/cuda/lib64 2> /dev/null | grep -E '^lib(nvrtc|nvJitLink|nccl)\.so\.[0-9.]+$' |
  tr '\n' ' ')"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>&1 |
  sed 's/^/  /' | tee -a "$report"

# --- Binaries and data ------------------------------------------------------------------------
if [[ -f gpu-carry/detrain-gpu.tar.xz ]]; then
  pack=/tmp/detrain-gpu
  rm -rf "$pack" && mkdir -p "$pack" && tar -C "$pack" -xJf gpu-carry/detrain-gpu.tar.xz
  # Wrappers: the carried libraries for detrain's binaries only (python3 keeps its own).
  bin=$pack/wrap
  mkdir -p "$bin"
  # The toolkit's libraries (NVRTC, nvJitLink, NCCL) from /usr/local/cuda, else from the
  # python3 wheels of NVIDIA's packages where the image has them there.
  libs="$pack/lib:/usr/local/cuda/lib64:/usr/local/cuda/targets/x86_64-linux/lib"
  wheels=$(python3 -c 'import nvidia, os; r = list(nvidia.__path__)[0]; print(":".join(
    os.path.join(d, "lib") for d, _, _ in os.walk(r) if os.path.isdir(os.path.join(d, "lib"))))' \
    2> /dev/null)
  [[ -n $wheels ]] && libs=$libs:$wheels
  for b in "$pack"/bin/*; do
    printf '#!/bin/sh\nLD_LIBRARY_PATH=%s exec %s "$@"\n' "$libs" "$b" > "$bin/$(basename "$b")"
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
if ! detrain --version > "$out/version.txt" 2>&1; then
  say "detrain does not start here:"
  sed 's/^/  /' "$out/version.txt" | tee -a "$report"
  LD_LIBRARY_PATH=$(sed -n 's/^LD_LIBRARY_PATH=\([^ ]*\) .*/\1/p' "$bin/detrain" 2> /dev/null) \
    ldd "$(sed -n 's/.* exec \([^ ]*\) .*/\1/p' "$bin/detrain" 2> /dev/null || echo detrain)" \
    2>&1 | grep -i 'not found' | sed 's/^/  /' | tee -a "$report"
  exit 1
fi
say "$(head -1 "$out/version.txt")"

# --- 1. GPU tests -----------------------------------------------------------------------------
say ""
say "1. GPU tests (cuda_gpu_test)"
# Sharded over $shards processes on the one GPU: the time is mostly NVRTC's, on the CPU.
# GpuAbsent is the test for machines without a GPU.
rc=0
pids=()
for i in $(seq 0 $((shards - 1))); do
  (cd "$root" && DETRAIN_SOURCE_DIR=$root GTEST_TOTAL_SHARDS=$shards GTEST_SHARD_INDEX=$i \
    timeout 300 runtime_cuda_gpu_test --gtest_filter=-GpuAbsent.* > "$out/gpu_test.$i.log" 2>&1) &
  pids+=($!)
done
for p in "${pids[@]}"; do wait "$p" || rc=$?; done
cat "$out"/gpu_test.*.log > "$out/gpu_test.log"
((rc == 124)) && say "   TIMED OUT after 300 s"
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
  if timeout 120 detrain run examples/breast_cancer/train.dt --attest -o "$b" --backend "$2" \
    > "$out/$1-run.log" 2>&1 &&
    timeout 120 detrain verify "$b" --backend "$3" --json > "$out/$1-verify.json" \
      2> "$out/$1-verify.log"; then
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

# --- 2c. The state resident on the GPU, digested there (--step-digest xxh3-128-chunked) ---------
say ""
say "2c. run --attest of the mlp, 200 steps on the GPU: the state read out every step (xxh3-128) or"
say "    resident and digested on the GPU (xxh3-128-chunked); the chunked bundle verified on the CPU"
for policy in xxh3-128 xxh3-128-chunked; do
  b=$out/resident-$policy
  rm -rf "$b"
  t0=$(date +%s.%N)
  if timeout 120 detrain run bench/mlp/train.dt --attest -o "$b" --backend cuda --steps 200 \
    --step-digest "$policy" -q > "$out/resident-$policy.log" 2>&1; then
    say "   $policy: $(python3 -c "print('%.2f s' % ($(date +%s.%N) - $t0))") for 200 steps"
  else
    say "   $policy: FAILED ($out/resident-$policy.log)"
    status=1
  fi
done
if timeout 180 detrain verify "$out/resident-xxh3-128-chunked" --backend cpu --threads 4 \
  > "$out/resident-verify.log" 2>&1; then
  say "   the chunked GPU bundle verified on the CPU: ok (the GPU's digests are the CPU's)"
else
  say "   the chunked GPU bundle verified on the CPU: FAILED ($out/resident-verify.log)"
  status=1
fi
say "   ($(elapsed))"

# --- 2b. Imported JAX train steps (docs/jax-training.md) on the GPU ------------------------------
say ""
say "2b. JAX-exported train steps: the GPU run's steps.jsonl against the CPU's, verified on the CPU"
for e in mlp_dropout cnn_maxpool transformer_scan; do
  g=$out/jax-$e-gpu-bundle c=$out/jax-$e-cpu-bundle
  if timeout 120 detrain run "examples/jax/$e/run.json" --attest -o "$g" --backend cuda \
    > "$out/jax-$e-gpu.log" 2>&1 &&
    timeout 60 detrain run "examples/jax/$e/run.json" --attest -o "$c" --threads 4 \
      > "$out/jax-$e-cpu.log" 2>&1 &&
    timeout 60 detrain verify "$g" --backend cpu > "$out/jax-$e-verify.log" 2>&1; then
    if cmp -s "$g/steps.jsonl" "$c/steps.jsonl"; then
      say "   $e: $(wc -l < "$g/steps.jsonl") steps, steps.jsonl identical, verified on the CPU ($(
        tail -1 "$g/steps.jsonl" | grep -o '"hash":"[0-9a-f]*"'))"
    else
      say "   $e: steps.jsonl DIFFERENT from the CPU's"
      status=1
    fi
  else
    say "   $e: FAILED ($out/jax-$e-*.log)"
    tail -n 4 "$out/jax-$e-gpu.log" "$out/jax-$e-cpu.log" "$out/jax-$e-verify.log" 2> /dev/null |
      sed 's/^/     /' | tee -a "$report"
    status=1
  fi
done
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
    timeout 90 bench_peer_step "$(program "$m")" --model "$m" --threads 1 --backend cuda --steps "$steps" \
      --warmup 3 >> "$out/bench.jsonl" 2>> "$out/bench.log" || status=1
    if ((have_jax)); then
      (cd bench/peers && XLA_FLAGS=--xla_gpu_deterministic_ops=true \
        timeout 90 python3 models_jax.py --model "$m" --threads 1 --steps "$steps" --warmup 3) \
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
# --- 4. Where a step's time goes: the GPU's kernel time within it (ncu, where it can profile) ---
ncu=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2> /dev/null | head -1)
if [[ -n $ncu && -f build/bench-data/mlp/x.npy ]]; then
  say ""
  say "4. kernel time of 2 mlp steps (ncu, gpu__time_duration.sum per launch)"
  timeout 120 "$ncu" --clock-control none --metrics gpu__time_duration.sum --csv \
    "$bin/bench_peer_step" bench/mlp/train.dt --model mlp --backend cuda --steps 2 --warmup 0 \
    > "$out/ncu.csv" 2> "$out/ncu.err"
  python3 - "$out/ncu.csv" << 'PY' | tee -a "$report"
import csv, sys
rows = [r for r in csv.reader(l for l in open(sys.argv[1]) if l.startswith('"'))]
if len(rows) < 2:
    print("   no kernel times (ncu could not profile here)")
    sys.exit()
head = rows[0]
k, v = head.index("Kernel Name"), head.index("Metric Value")
unit = head.index("Metric Unit")
total, by_kernel = 0.0, {}
for r in rows[1:]:
    ns = float(r[v].replace(",", "")) * {"nsecond": 1, "usecond": 1e3, "msecond": 1e6}.get(r[unit], 1)
    total += ns
    by_kernel[r[k]] = by_kernel.get(r[k], 0) + ns
launches = len(rows) - 1
print(f"   {launches} launches (first call and 2 steps), {total / 1e6:.3f} ms of kernel time")
for name, ns in sorted(by_kernel.items(), key=lambda x: -x[1])[:6]:
    print(f"   {ns / 1e6:8.3f} ms  {name[:70]}")
PY
fi

say ""
say "done in $(elapsed); exit $status; logs in $out"
exit $status
