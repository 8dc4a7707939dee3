#!/usr/bin/env bash
# README command (a): installs what is missing, builds detrain, and runs the main job.
# Until training lands (issues 6-8) the main job digests the bundled example dataset: the
# Wisconsin diagnostic breast cancer CSV shipped by Debian's python3-sklearn.
set -euo pipefail
cd "$(dirname "$0")/.."
tools/setup.sh
tools/build.sh detrain
data=/usr/lib/python3/dist-packages/sklearn/datasets/data
echo
echo "\$ detrain digest breast_cancer.csv digits.csv.gz"
build/src/cli/detrain digest "$data/breast_cancer.csv" "$data/digits.csv.gz"
