#!/usr/bin/env bash
# Every committed golden bundle (audit-bundles/v*/*) verifies with this detrain — integrity,
# recompile (with the pass pipeline the bundle records) and replay — and passes the independent
# checker tools/check_bundle.py (schemas/bundle.md §9). Usage: golden_bundles_test.sh DETRAIN SRC
set -euo pipefail
detrain=$1
src=$2
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
count=0
for bundle in "$src"/audit-bundles/v*/*/; do
  name=$(basename "$bundle")
  cp -r "$bundle" "$scratch/$name"
  "$detrain" verify "$scratch/$name" > "$scratch/$name.log" 2>&1 || {
    cat "$scratch/$name.log"
    echo "golden bundle $bundle does not verify"
    exit 1
  }
  python3 "$src/tools/check_bundle.py" "$scratch/$name"
  count=$((count + 1))
done
[ "$count" -gt 0 ] || { echo "no golden bundle found under $src/audit-bundles"; exit 1; }
echo "golden bundles: $count verified"
