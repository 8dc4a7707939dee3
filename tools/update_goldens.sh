#!/usr/bin/env bash
# Regenerates the golden stage texts of the examples (tests/frontend/testdata/golden/). A golden
# change is a behaviour change: review the diff like code. Usage: tools/update_goldens.sh [BUILD_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
for example in breast_cancer digits charlm; do
  out=tests/frontend/testdata/golden/$example
  mkdir -p "$out"
  for stage in source hlo init eval; do
    "$build/src/cli/detrain" compile "examples/$example/train.dt" --emit "$stage" > "$out/$stage.txt"
  done
  "$build/src/cli/detrain" compile "examples/$example/train.dt" --hashes > "$out/hashes.txt"
done
echo "goldens written; review with git diff"
