#!/usr/bin/env bash
# Configures and builds detrain. Usage: tools/build.sh [--sanitize] [ninja targets...]
# Release-style build in build/; ASan+UBSan build in build-asan/.
set -euo pipefail
cd "$(dirname "$0")/.."
dir=build
flags=(-DCMAKE_BUILD_TYPE=RelWithDebInfo)
if [[ "${1:-}" == "--sanitize" ]]; then
  shift
  dir=build-asan
  # CUDA codegen tests are covered by the main build; benchmarks are not run under sanitizers.
  # -O1 (assertions kept), as ASan's documentation recommends: the heavy tests (training, bundle
  # corruption) run several times faster than at -O0, and reports keep their stacks.
  flags=(-DCMAKE_BUILD_TYPE=Debug "-DCMAKE_CXX_FLAGS_DEBUG=-g -O1" -DDETRAIN_SANITIZE=ON
         -DDETRAIN_BENCH=OFF -DDETRAIN_CUDA=OFF)
fi
mkdir -p "$dir"
cmake -S . -B "$dir" -G Ninja "${flags[@]}" > "$dir/configure.log" 2>&1 || { cat "$dir/configure.log"; exit 1; }
jobs=$(nproc)
ninja -C "$dir" -j "$jobs" "$@"
