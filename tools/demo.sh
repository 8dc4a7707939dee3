#!/usr/bin/env bash
# README command (a): installs what is missing, builds detrain, and runs the main job.
# Until training lands (`detrain run --attest` + `detrain verify`, later issues) the main job
# digests the example data (shipped by Debian's python3-sklearn) and compiles the breast-cancer
# MLP through every stage of the attested chain, printing each stage's digest.
set -euo pipefail
cd "$(dirname "$0")/.."
tools/setup.sh
tools/build.sh detrain
data=/usr/lib/python3/dist-packages/sklearn/datasets/data
echo
echo "\$ detrain digest breast_cancer.csv digits.csv.gz"
build/src/cli/detrain digest "$data/breast_cancer.csv" "$data/digits.csv.gz"
echo
echo "\$ detrain compile examples/breast_cancer/train.dt --hashes"
build/src/cli/detrain compile examples/breast_cancer/train.dt --hashes
