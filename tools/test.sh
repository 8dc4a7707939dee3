#!/usr/bin/env bash
# README command (b): installs what is missing, builds, and runs every test.
# Usage: tools/test.sh [--sanitize]
#   (default)   the full suite in build/
#   --sanitize  the ASan+UBSan build in build-asan/, all tests but those labelled `slow`
set -euo pipefail
cd "$(dirname "$0")/.."
tools/setup.sh
if [[ "${1:-}" == "--sanitize" ]]; then
  tools/build.sh --sanitize
  export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
  ctest --test-dir build-asan --output-on-failure -j "$(nproc)" -LE slow
else
  tools/build.sh
  ctest --test-dir build --output-on-failure -j "$(nproc)"
fi
