#!/usr/bin/env bash
# Builds the libFuzzer harnesses (tests/fuzz/, docs/reliability.md "Fuzzing") into build-fuzz/
# and runs each for SECONDS. Needs clang and libFuzzer, which it installs
# first when missing (`tools/setup.sh --fuzz`).
#
# Usage: tools/fuzz.sh [SECONDS] [HARNESS...]     (default 30 s; all harnesses)
#   harnesses: npy safetensors npz csv json hlo plan dt bundle archive
#
# Each harness first re-runs its committed regression inputs (tests/fuzz/crashes/<harness>/, one
# execution each), then fuzzes from a scratch copy of its seed corpus (tests/fuzz/corpus/<harness>/
# is never written) with its dictionary (tests/fuzz/dict/<harness>.dict, bundle: json.dict) if there is one. A crash,
# leak, timeout (5 s) or out-of-memory (2 GiB RSS) input is saved under <build>/crashes/<harness>/.
# One line per harness: executions, exec/s, coverage (cov: edges, ft: features), corpus size,
# crashes. Exit status 1 if any harness crashed or any regression input still crashes.
#
# Environment:
#   JOBS            parallel build jobs (default: every core)
#   FUZZ_JOBS       harnesses fuzzed at a time, each on one core (default 1; CI: every core).
#                   The lines still come in the order of the harnesses.
#   FUZZ_SEED       libFuzzer's random seed (CI sets 1, so that a run can be repeated; default 0:
#                   a new seed each run)
#   FUZZ_BUILD_DIR  the build directory (default build-fuzz: configured here on first use, the
#                   libraries and harnesses only). CI passes build-asan, the sanitizer build that
#                   `tools/build.sh --sanitize` configures with the fuzzing instrumentation too,
#                   so the harnesses link against the libraries its tests ran on (one build).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
all=(npy safetensors npz csv json hlo plan dt bundle archive)

seconds=30
if [[ $# -gt 0 && $1 =~ ^[0-9]+$ ]]; then
  seconds=$1
  shift
fi
harnesses=("$@")
if ((${#harnesses[@]} == 0)); then harnesses=("${all[@]}"); fi
for h in "${harnesses[@]}"; do
  if [[ ! -f tests/fuzz/${h}_fuzz.cc ]]; then
    echo "fuzz: no harness '$h' (have: ${all[*]})" >&2
    exit 2
  fi
done

# The longest input each harness mutates to (its seeds are smaller).
max_len() {
  case $1 in
    plan) echo 65536 ;;
    hlo) echo 32768 ;;
    json | safetensors | npz | archive) echo 16384 ;;
    *) echo 8192 ;;
  esac
}

tools/setup.sh --fuzz
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
dir=${FUZZ_BUILD_DIR:-build-fuzz}
if [[ -f $dir/CMakeCache.txt ]] && ! grep -q '^DETRAIN_FUZZ:BOOL=ON' "$dir/CMakeCache.txt"; then
  echo "fuzz: $dir is not configured with DETRAIN_FUZZ=ON (tools/build.sh --sanitize does that)" >&2
  exit 2
fi
if [[ ! -f $dir/build.ninja ]]; then
  mkdir -p "$dir"
  launcher=()
  if command -v ccache > /dev/null; then launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache); fi
  # -O1 -gline-tables-only (no NDEBUG): the usual fuzzing build, faster to compile than -O2 -g.
  CC=clang CXX=clang++ cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -gline-tables-only" \
    "-DCMAKE_C_FLAGS_RELWITHDEBINFO=-O1 -gline-tables-only" \
    -DDETRAIN_FUZZ=ON -DDETRAIN_TESTS=OFF -DDETRAIN_BENCH=OFF -DDETRAIN_CUDA=OFF "${launcher[@]}" \
    > "$dir/configure.log" 2>&1 || { cat "$dir/configure.log"; exit 1; }
fi
targets=()
for h in "${harnesses[@]}"; do targets+=("${h}_fuzz"); done
ninja -C "$dir" -j "${JOBS:-$(nproc)}" "${targets[@]}"

# fuzz_one HARNESS: the regression inputs, then the fuzzing; its line goes to the harness's
# work directory (summary), its verdict to status (0 or 1).
fuzz_one() {
  local h=$1
  local bin=$root/$dir/tests/fuzz/${h}_fuzz
  local work=$root/$dir/fuzz-work/$h
  local crashes=$root/$dir/crashes/$h
  rm -rf "$work"
  mkdir -p "$work/corpus" "$crashes"
  if [[ -d tests/fuzz/corpus/$h ]]; then cp -R "tests/fuzz/corpus/$h/." "$work/corpus/"; fi
  local out=$work/summary
  rm -f "$out.pre"

  # Regression inputs: each must now run cleanly.
  local regressions=0 still=0 f
  if [[ -d tests/fuzz/crashes/$h ]]; then
    for f in tests/fuzz/crashes/"$h"/*; do
      [[ -f $f ]] || continue
      regressions=$((regressions + 1))
      if ! "$bin" -rss_limit_mb=2048 -timeout=5 "$f" > "$work/regression.log" 2>&1; then
        still=$((still + 1))
        echo "fuzz: $h: regression input $f still fails (log: $work/regression.log)" >> "$out.pre"
      fi
    done
  fi

  local args=(-max_total_time="$seconds" -rss_limit_mb=2048 -timeout=5 -max_len="$(max_len "$h")"
              -print_final_stats=1 -artifact_prefix="$crashes/" -seed="${FUZZ_SEED:-0}")
  local dict=$h
  if [[ $h == bundle ]]; then dict=json; fi  # the bundle's files are mostly JSON
  if [[ -f tests/fuzz/dict/$dict.dict ]]; then args+=(-dict="$root/tests/fuzz/dict/$dict.dict"); fi
  touch "$work/start"
  local rc=0
  (cd "$work" && "$bin" "${args[@]}" corpus > log 2>&1) || rc=$?
  local log=$work/log
  local execs speed cov ft units found
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1 || true)
  speed=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -n 1 || true)
  cov=$(grep -o 'cov: [0-9]*' "$log" | tail -n 1 | cut -d' ' -f2 || true)
  ft=$(grep -o 'ft: [0-9]*' "$log" | tail -n 1 | cut -d' ' -f2 || true)
  units=$(find "$work/corpus" -type f | wc -l)
  found=$(find "$crashes" -type f -newer "$work/start" | wc -l)
  {
    if [[ -f $out.pre ]]; then cat "$out.pre"; fi
    printf 'fuzz: %-12s %4ss  execs %-9s (%s/s)  cov %-6s ft %-7s corpus %-5s crashes %s' \
      "$h" "$seconds" "${execs:-?}" "${speed:-?}" "${cov:-?}" "${ft:-?}" "$units" "$found"
    if ((regressions > 0)); then printf '  regressions %d/%d fail' "$still" "$regressions"; fi
    printf '\n'
    if ((rc != 0)); then
      echo "fuzz: $h exited $rc; log: $log; inputs: $crashes/"
      grep -m 3 -E 'ERROR: |SUMMARY: |fuzz property failed' "$log" | sed 's/^/fuzz:   /' || true
    fi
  } > "$out"
  if ((rc != 0 || found > 0 || still > 0)); then echo 1 > "$work/status"; else echo 0 > "$work/status"; fi
}

# FUZZ_JOBS harnesses at a time; each line is printed once its harness and all before it are done.
fuzz_jobs=${FUZZ_JOBS:-1}
for h in "${harnesses[@]}"; do rm -rf "$root/$dir/fuzz-work/$h"; done  # no stale status files
failed=0 next=0 running=0
for ((i = 0; i < ${#harnesses[@]}; i++)); do
  fuzz_one "${harnesses[$i]}" &
  running=$((running + 1))
  if ((running >= fuzz_jobs)); then
    wait -n || true
    running=$((running - 1))
  fi
  while ((next <= i)) && [[ -f $root/$dir/fuzz-work/${harnesses[$next]}/status ]]; do
    cat "$root/$dir/fuzz-work/${harnesses[$next]}/summary"
    next=$((next + 1))
  done
done
wait
for ((; next < ${#harnesses[@]}; next++)); do
  cat "$root/$dir/fuzz-work/${harnesses[$next]}/summary"
done
for h in "${harnesses[@]}"; do
  if [[ $(cat "$root/$dir/fuzz-work/$h/status") != 0 ]]; then failed=1; fi
done
exit $failed
