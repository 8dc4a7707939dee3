#!/usr/bin/env bash
# Configures and builds detrain. Usage: tools/build.sh [--sanitize] [--ci] [ninja targets...]
# Release-style build in build/; the sanitizer build in build-asan/.
#
#   --sanitize  clang with AddressSanitizer + UndefinedBehaviorSanitizer at -O1 (assertions kept),
#               and libFuzzer's coverage instrumentation (-fsanitize=fuzzer-no-link): the same
#               build gives the sanitizer test suite and the fuzz harnesses (tests/fuzz;
#               FUZZ_BUILD_DIR=build-asan tools/fuzz.sh), so CI compiles the sources twice, not
#               three times. Needs clang (tools/setup.sh --fuzz).
#   --ci        CI's cold-build profile (docs/ci.md): unity batches (DETRAIN_UNITY_BUILD) and
#               line tables only for debug information (-g1; the sanitizer build has
#               -gline-tables-only anyway), which the stacks of a failure need. Code generation
#               is the same as without it. DETRAIN_CI_BUILD=1 in the environment means --ci
#               (.ci/run sets it, so that CI runs the README's own test command). Without it, a
#               build directory keeps the profile it was configured with.
set -euo pipefail
cd "$(dirname "$0")/.."
dir=build
sanitize=0 ci=${DETRAIN_CI_BUILD:-0}
while [[ $# -gt 0 ]]; do
  case $1 in
    --sanitize) sanitize=1; shift ;;
    --ci) ci=1; shift ;;
    *) break ;;
  esac
done
flags=(-DCMAKE_BUILD_TYPE=RelWithDebInfo)
if ((ci)); then
  flags+=(-DDETRAIN_UNITY_BUILD=ON "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O2 -g1 -DNDEBUG"
          "-DCMAKE_C_FLAGS_RELWITHDEBINFO=-O2 -g1 -DNDEBUG")
fi
if ((sanitize)); then
  dir=build-asan
  # CUDA codegen tests are covered by the main build; benchmarks are not run under sanitizers.
  # -O1, as ASan's documentation recommends: the heavy tests (training, bundle corruption) run
  # several times faster than at -O0, and reports keep their stacks. Debug: no NDEBUG.
  export CC=clang CXX=clang++
  flags=(-DCMAKE_BUILD_TYPE=Debug "-DCMAKE_CXX_FLAGS_DEBUG=-O1 -gline-tables-only"
         "-DCMAKE_C_FLAGS_DEBUG=-O1 -gline-tables-only" -DDETRAIN_SANITIZE=ON -DDETRAIN_FUZZ=ON
         -DDETRAIN_BENCH=OFF -DDETRAIN_CUDA=OFF)
  if ((ci)); then flags+=(-DDETRAIN_UNITY_BUILD=ON); fi
  # A build-asan/ configured with g++ (before the sanitizer build moved to clang) is started over.
  if [[ -f $dir/CMakeCache.txt ]] && ! grep -q '^CMAKE_CXX_COMPILER:.*clang' "$dir/CMakeCache.txt"; then
    rm -rf "$dir"
  fi
fi
mkdir -p "$dir"
cmake -S . -B "$dir" -G Ninja "${flags[@]}" > "$dir/configure.log" 2>&1 || { cat "$dir/configure.log"; exit 1; }
jobs=$(nproc)
ninja -C "$dir" -j "$jobs" "$@"
