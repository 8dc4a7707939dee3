#!/usr/bin/env bash
# README command (a): installs what is missing, builds detrain, trains the breast-cancer MLP with
# an audit bundle, and verifies the bundle (integrity, recompile, replay bit for bit).
# Usage: tools/demo.sh [BUNDLE_DIR]   (default: bundle/, replaced if it exists)
set -euo pipefail
cd "$(dirname "$0")/.."
tools/setup.sh
tools/build.sh detrain
bundle=${1:-bundle}
rm -rf "$bundle"
echo
echo "\$ detrain run examples/breast_cancer/train.dt --attest -o $bundle/"
build/src/cli/detrain run examples/breast_cancer/train.dt --attest -o "$bundle/"
echo
echo "\$ detrain verify $bundle/"
build/src/cli/detrain verify "$bundle/"
echo
echo "\$ detrain inspect $bundle/"
build/src/cli/detrain inspect "$bundle/"
