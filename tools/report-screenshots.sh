#!/usr/bin/env bash
# The screenshots of the audit report in docs/report/ (README, docs/report.md): for each example,
# a signed bundle (a throwaway key), its report with the verdict of `inspect --verify
# --trusted-key`, and a headless-Chromium screenshot of the report's top, 1200 px wide.
# Usage: tools/report-screenshots.sh [BINARY]   (default build/src/cli/detrain; needs chromium:
# tools/setup.sh --tests)
set -euo pipefail
cd "$(dirname "$0")/.."
detrain=$(realpath "${1:-build/src/cli/detrain}")
root=$PWD
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p docs/report
"$detrain" keygen -o "$work/key" > /dev/null
for example in breast_cancer digits charlm; do
  # In the work directory, so that the report names the bundle by its short name.
  (cd "$work" && "$detrain" run "$root/examples/$example/train.dt" --attest -o "$example" -q \
    --sign-key key.key > /dev/null &&
    "$detrain" inspect "$example" --verify --trusted-key key.pub --html "$example.html" 2> /dev/null)
  chromium --headless=new --no-sandbox --disable-gpu --hide-scrollbars --window-size=1200,1800 \
    --user-data-dir="$work/chromium" --screenshot="docs/report/$example.png" \
    "file://$work/$example.html" > /dev/null 2>&1
  test -s "docs/report/$example.png"
  echo "docs/report/$example.png: $(stat -c %s "$work/$example.html") byte report"
done
