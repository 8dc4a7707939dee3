#!/usr/bin/env bash
# Issue 14's side-by-side benchmark: detrain, JAX, PyTorch eager and torch.compile on the three
# benchmark programs (bench/mlp, examples/digits, examples/charlm) with 1 and 2 threads,
# interleaved (each round runs every configuration once, round-robin) and repeated; then the
# median tables with the ratios detrain / JAX and detrain / min(torch eager, torch.compile), an
# SGEMM microbenchmark of the peers' BLAS, and a determinism check. bench/peers/README.md.
#
# Usage: bench/peers/run.sh [ROUNDS]      (default 5)
# Environment (all optional):
#   BUILD_DIR=build   PEERS_VENV=build/peers-venv (made by setup.sh when missing)
#   STEPS=20 WARMUP=3 timed / untimed steady-state steps per process
#   MODELS="mlp digits charlm" (MODELS= : no train steps)  THREADS="1 2"
#   FRAMEWORKS="detrain jax torch torch.compile"; also detrain-evaluator: detrain with
#     --loops evaluator (docs/fused-loops.md; detrain's default is generated loops where a
#     compiler is present), reported as its own column
#   SKIP_SGEMM=1  SKIP_DETERMINISM=1
#   PEERS_OUT=DIR where the JSON lines go (default build/peers-results/DATE)
# Threads: T=1 runs everyone under `taskset -c 0`, T=2 under `taskset -c 0,1` (the only control
# XLA:CPU obeys), with torch.set_num_threads(T) and detrain --threads T. The peers run with
# OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE unset (in their command only), and torch.compile with a
# fresh, empty inductor cache each time, so that its first call is a cold compile.
set -euo pipefail
cd "$(dirname "$0")/../.."
rounds=${1:-5}
build=${BUILD_DIR:-build}
venv=${PEERS_VENV:-build/peers-venv}
steps=${STEPS:-20}
warmup=${WARMUP:-3}
models=${MODELS-mlp digits charlm}
threads_list=${THREADS:-1 2}
frameworks=${FRAMEWORKS:-detrain jax torch torch.compile}
out=${PEERS_OUT:-$build/peers-results/$(date +%Y%m%d-%H%M%S)}
mkdir -p "$out"
out=$(cd "$out" && pwd)
py=$venv/bin/python

# --- What the runs need: the peers' venv, bench_peer_step, the programs' data files.
[[ -x $py ]] || bench/peers/setup.sh "$venv"
py=$(cd "$venv" && pwd)/bin/python
if [[ ! -f $build/build.ninja ]]; then
  cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo > "$out/configure.log" 2>&1 ||
    { cat "$out/configure.log"; exit 1; }
fi
ninja -C "$build" -j "${JOBS:-1}" bench_peer_step > "$out/build.log" 2>&1 ||
  { cat "$out/build.log"; exit 1; }
[[ -f $build/bench-data/mlp/x.npy ]] || "$py" bench/mlp/make_data.py "$build/bench-data/mlp"
digits_gz=/usr/lib/python3/dist-packages/sklearn/datasets/data/digits.csv.gz
if [[ ! -f examples/digits/digits.csv ]]; then
  [[ -f $digits_gz ]] || { echo "no examples/digits/digits.csv: run tools/setup.sh"; exit 2; }
  gunzip -c "$digits_gz" > examples/digits/digits.csv.tmp &&
    mv examples/digits/digits.csv.tmp examples/digits/digits.csv
fi

program() {
  case $1 in mlp) echo bench/mlp/train.dt ;; *) echo "examples/$1/train.dt" ;; esac
}
cpus() { if [[ $1 == 1 ]]; then echo 0; else echo "0-$(($1 - 1))"; fi; }
# A peer process: its CPU set, the OpenBLAS variables unset, a private inductor cache.
peer() {
  local t=$1 cache rc=0
  shift
  cache=$(mktemp -d)
  (cd bench/peers && env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE TORCHINDUCTOR_CACHE_DIR="$cache" \
    taskset -c "$(cpus "$t")" "$py" "$@") || rc=$?
  rm -rf "$cache"
  return $rc
}
one() {  # one measurement: framework model threads -> one JSON line on stdout
  local f=$1 m=$2 t=$3 common=(--model "$2" --threads "$3" --steps "$steps" --warmup "$warmup")
  case $f in
    detrain)
      taskset -c "$(cpus "$t")" "$build/bench/bench_peer_step" "$(program "$m")" --model "$m" \
        --threads "$t" --steps "$steps" --warmup "$warmup" ;;
    detrain-evaluator)
      taskset -c "$(cpus "$t")" "$build/bench/bench_peer_step" "$(program "$m")" --model "$m" \
        --threads "$t" --steps "$steps" --warmup "$warmup" --loops evaluator |
        sed 's/"framework": "detrain"/"framework": "detrain-evaluator"/' ;;
    jax) peer "$t" models_jax.py "${common[@]}" ;;
    torch) peer "$t" models_torch.py "${common[@]}" ;;
    torch.compile) peer "$t" models_torch.py --compile "${common[@]}" ;;
  esac
}

echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
echo "peers: $(grep -E '^(jax|jaxlib|optax|numpy|torch)==' "$venv/versions.txt" 2>/dev/null |
  tr '\n' ' ')"
echo "detrain: $(git rev-parse --short HEAD)$(git diff --quiet HEAD || echo '+dirty');" \
  "$rounds rounds, $steps steps after $warmup warm-up; results in $out"

# --- Train steps, interleaved: each round runs every configuration once.
results=$out/results.jsonl
: > "$results"
for ((r = 1; r <= rounds; r++)); do
  for m in $models; do
    for t in $threads_list; do
      for f in $frameworks; do
        if line=$(one "$f" "$m" "$t" 2>> "$out/stderr.log" | grep '^{'); then
          echo "{\"round\": $r, ${line#\{}" >> "$results"
          echo "round $r: $line" | cut -c1-200
        else
          echo "round $r: $f $m ${t}t FAILED (see $out/stderr.log)"
        fi
      done
    done
  done
done
echo
[[ -s $results ]] && /usr/bin/env python3 bench/peers/summarize.py "$results"

# --- SGEMM: the peers' BLAS at 1024^3 and at the MLP step's shapes.
if [[ -z ${SKIP_SGEMM:-} ]]; then
  sgemm=$out/sgemm.jsonl
  : > "$sgemm"
  for t in $threads_list; do
    for lib in numpy torch; do
      peer "$t" sgemm.py --lib "$lib" --threads "$t" >> "$sgemm" 2>> "$out/stderr.log" ||
        echo "sgemm $lib ${t}t FAILED"
    done
  done
  echo
  /usr/bin/env python3 bench/peers/summarize.py /dev/null "$sgemm" | sed -n '/SGEMM/,$p'
  # Hook for detrain's own GEMM (bench/gemm_bench.cc), when it is built: same CPU sets.
  if [[ -x $build/bench/bench_gemm ]]; then
    isa=1  # bench_gemm's ISA argument: the best this CPU has (2 AVX-512, 1 AVX2)
    grep -qw avx512f /proc/cpuinfo && isa=2
    for t in $threads_list; do
      echo "detrain bench_gemm under taskset -c $(cpus "$t") (its t argument is the pool size):"
      taskset -c "$(cpus "$t")" "$build/bench/bench_gemm" --benchmark_filter="/t:$t/isa:$isa/" \
        --benchmark_repetitions=5 --benchmark_report_aggregates_only=true 2>&1 |
        grep -E '_median' || true
    done
  else
    echo "(no $build/bench/bench_gemm: detrain's GEMM not measured; ninja -C $build bench_gemm)"
  fi
fi

# --- Determinism: the MLP, 5 Adam steps from the same init, 1 thread vs 2 threads.
if [[ -z ${SKIP_DETERMINISM:-} ]]; then
  echo
  echo "determinism: MLP, 5 Adam steps from the same init and batch, 1 vs 2 threads"
  for f in jax torch; do
    script=models_jax.py
    [[ $f == torch ]] && script=models_torch.py
    for t in 1 2; do
      peer "$t" "$script" --model mlp --threads "$t" --determinism "$out/det-$f-${t}t.npy" \
        2>> "$out/stderr.log" || echo "determinism $f ${t}t FAILED"
    done
    (cd bench/peers &&
      "$py" compare_params.py "$f 1t vs 2t" "$out/det-$f-1t.npy" "$out/det-$f-2t.npy") |
      tee -a "$out/determinism.jsonl" || echo "determinism $f: comparison FAILED"
  done
  rm -f "$out"/det-*.npy
  echo "(detrain: same bits on every thread count by construction; tests/runtime prove it)"
fi
