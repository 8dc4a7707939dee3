#!/usr/bin/env bash
# README command (a): installs what is missing, builds detrain, makes a signing key, trains the
# breast-cancer MLP with a signed audit bundle, and verifies the bundle (integrity, signatures,
# recompile, replay bit for bit).
# Usage: tools/demo.sh [BUNDLE_DIR]   (default: bundle/, replaced if it exists; the demo key pair
# is demo-key.key / demo-key.pub next to it, made once and kept)
set -euo pipefail
cd "$(dirname "$0")/.."
tools/setup.sh
tools/build.sh detrain
bundle=${1:-bundle}
key=$(dirname "$bundle")/demo-key
rm -rf "$bundle"
if [[ ! -f $key.key ]]; then
  echo
  echo "\$ detrain keygen -o $key"
  build/src/cli/detrain keygen -o "$key"
fi
echo
echo "\$ detrain run examples/breast_cancer/train.dt --attest -o $bundle/ --sign-key $key.key"
build/src/cli/detrain run examples/breast_cancer/train.dt --attest -o "$bundle/" --sign-key "$key.key"
echo
echo "\$ detrain verify $bundle/ --trusted-key $key.pub"
build/src/cli/detrain verify "$bundle/" --trusted-key "$key.pub"
echo
echo "\$ detrain inspect $bundle/"
build/src/cli/detrain inspect "$bundle/"
