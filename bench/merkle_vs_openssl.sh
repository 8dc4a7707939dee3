#!/usr/bin/env bash
# Merkle SHA-256 (1 and 2 threads) side by side with `openssl speed -evp sha256` on this machine.
# Usage: bench/merkle_vs_openssl.sh [BUILD_DIR]   (default: build; needs bench_merkle built)
# Interleaves the two several times (the machine is noisy) and prints every run; compare medians.
set -euo pipefail
build=${1:-build}
reps=${REPS:-5}
for i in $(seq "$reps"); do
  echo "== round $i: openssl speed -evp sha256 (1 MiB blocks, 1 core)"
  openssl speed -evp sha256 -bytes 1048576 -seconds 3 2>/dev/null | tail -1
  echo "== round $i: detrain Merkle over 1 GiB"
  "$build/bench/bench_merkle" --benchmark_min_time=2 2>/dev/null | grep -E '^BM_'
done
