#!/usr/bin/env bash
# Wall time of `detrain compile` per example, process start and data loading included, median of
# N runs: to stage 2 (`--emit hlo`: stages 0-2, init and eval) and to stage 4 (`--hashes`: every
# stage through the pass pipeline and the CPU plan). Usage: bench/compile_time.sh [BUILD_DIR] [N]
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
n=${2:-21}
for mode in "--emit hlo" "--hashes"; do
for example in breast_cancer digits charlm; do
  times=()
  for _ in $(seq "$n"); do
    start=$(date +%s%N)
    "$build/src/cli/detrain" compile "examples/$example/train.dt" $mode > /dev/null
    end=$(date +%s%N)
    times+=($(( (end - start) / 1000 )))
  done
  sorted=$(printf '%s\n' "${times[@]}" | sort -n)
  median=$(echo "$sorted" | sed -n "$(( (n + 1) / 2 ))p")
  min=$(echo "$sorted" | head -1)
  printf '%-11s %-14s median %6.1f ms   min %6.1f ms   (%d runs)\n' "${mode#--}" "$example" "$(echo "$median/1000" | bc -l)" "$(echo "$min/1000" | bc -l)" "$n"
done
done
