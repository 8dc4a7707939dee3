#!/usr/bin/env bash
# Wall time of `detrain compile EXAMPLE --hashes` (program -> stage 2 and eval, process start
# included), median of N runs per example. Usage: bench/compile_time.sh [BUILD_DIR] [N]
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
n=${2:-21}
for example in breast_cancer digits charlm; do
  times=()
  for _ in $(seq "$n"); do
    start=$(date +%s%N)
    "$build/src/cli/detrain" compile "examples/$example/train.dt" --hashes > /dev/null
    end=$(date +%s%N)
    times+=($(( (end - start) / 1000 )))
  done
  sorted=$(printf '%s\n' "${times[@]}" | sort -n)
  median=$(echo "$sorted" | sed -n "$(( (n + 1) / 2 ))p")
  min=$(echo "$sorted" | head -1)
  printf '%-14s median %6.1f ms   min %6.1f ms   (%d runs)\n' "$example" "$(echo "$median/1000" | bc -l)" "$(echo "$min/1000" | bc -l)" "$n"
done
