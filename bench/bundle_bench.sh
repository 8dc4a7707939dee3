#!/usr/bin/env bash
# Issue 12's benchmarks (figures in docs/benchmarks.md), side by side in one run, medians of R
# repetitions (machines are noisy):
#   1. attestation overhead: `run` vs `run --attest` of the 784-1024-1024-10 MLP (batch 256, Adam)
#   2. verify time vs run time: `verify --jobs 1` and `--jobs 2` vs `run --attest`
#   3. integrity-only verify of a ~1 GiB bundle (a checkpoint after every step) vs the machine's
#      SHA-256 rate (`openssl speed`, 1 MiB blocks) times its cores
# Usage: bench/bundle_bench.sh [BUILD_DIR] [REPETITIONS] [STEPS]   (defaults: build 5 32)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
reps=${2:-5}
steps=${3:-32}
detrain=$build/src/cli/detrain
[[ -x $detrain ]] || { echo "no $detrain; build first (tools/build.sh detrain)"; exit 2; }
[[ -f $build/bench-data/mlp/x.npy ]] || /usr/bin/python3 bench/mlp/make_data.py "$build/bench-data/mlp"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
program=bench/mlp/train.dt
now() { date +%s.%N; }
median() { sort -g | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }

echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
echo "program: $program, $steps steps, checkpoints every 8; $reps repetitions, interleaved"
: > "$work/run" ; : > "$work/attest" ; : > "$work/v1" ; : > "$work/v2"
for ((i = 0; i < reps; i++)); do
  t0=$(now); "$detrain" run "$program" --steps "$steps" -q > /dev/null 2>&1; t1=$(now)
  echo "$t1 - $t0" | bc >> "$work/run"
  rm -rf "$work/b"
  t0=$(now); "$detrain" run "$program" --steps "$steps" --attest -o "$work/b" -q > /dev/null; t1=$(now)
  echo "$t1 - $t0" | bc >> "$work/attest"
  t0=$(now); "$detrain" verify "$work/b" --jobs 1 > /dev/null 2>&1; t1=$(now)
  echo "$t1 - $t0" | bc >> "$work/v1"
  t0=$(now); "$detrain" verify "$work/b" --jobs 2 > /dev/null 2>&1; t1=$(now)
  echo "$t1 - $t0" | bc >> "$work/v2"
done
run=$(median < "$work/run"); attest=$(median < "$work/attest")
v1=$(median < "$work/v1"); v2=$(median < "$work/v2")
printf "run            %8.3f s (median)\n" "$run"
printf "run --attest   %8.3f s   overhead %+.1f%%\n" "$attest" "$(echo "($attest / $run - 1) * 100" | bc -l)"
printf "verify --jobs 1 %7.3f s   %.2fx run --attest\n" "$v1" "$(echo "$v1 / $attest" | bc -l)"
printf "verify --jobs 2 %7.3f s   %.2fx run --attest\n" "$v2" "$(echo "$v2 / $attest" | bc -l)"

# 3. A ~1 GiB bundle: the same MLP with a checkpoint after every step (22 MB each).
big_steps=${BIG_STEPS:-48}
sed 's/checkpoint_every = 8/checkpoint_every = 1/; s#"\.\./\.\./build/#"'"$PWD"'/'"$build"'/#g' "$program" > "$work/big.dt"
rm -rf "$work/big"
"$detrain" run "$work/big.dt" --steps "$big_steps" --attest -o "$work/big" -q > /dev/null
bytes=$(du -sb "$work/big" | cut -f1)
: > "$work/int"
for ((i = 0; i < reps; i++)); do
  "$detrain" verify "$work/big" --integrity-only --json 2> /dev/null |
    /usr/bin/python3 -c 'import json,sys; print(json.load(sys.stdin)["phases"][0]["seconds"])' >> "$work/int"
done
int=$(median < "$work/int")
sha=$(openssl speed -seconds 2 -bytes 1048576 sha256 2> /dev/null | awk '/^sha256/ {print $2}' | sed 's/k$//')
cores=$(nproc)
rate=$(echo "$bytes / $int / 1000000" | bc -l)
goal=$(echo "$sha * 1000 / 1000000 * $cores * 0.8" | bc -l)
printf "integrity-only verify of %.2f GB: %.3f s = %.0f MB/s; openssl sha256 %.0f MB/s per core x %d cores; goal (0.8x) %.0f MB/s\n" \
  "$(echo "$bytes / 1000000000" | bc -l)" "$int" "$rate" "$(echo "$sha * 1000 / 1000000" | bc -l)" "$cores" "$goal"
