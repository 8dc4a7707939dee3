#!/usr/bin/env bash
# Lines of code per directory (non-blank, non-comment-only lines of C++/CMake/Python/shell),
# for the tracked files of the repository. Usage: tools/loc.sh [DIR...]  (default: all)
set -euo pipefail
cd "$(dirname "$0")/.."
git ls-files -- "${@:-.}" |
  grep -E '\.(cc|h|cu|cuh|inc|def|cmake|py|sh|proto)$|CMakeLists\.txt$' |
  while read -r f; do
    n=$(grep -vE '^[[:space:]]*$' "$f" | grep -cvE '^[[:space:]]*(//|# |#$)' || true)
    printf '%s\t%s\n' "$(dirname "$f")" "$n"
  done |
  awk -F'\t' '{ loc[$1] += $2; files[$1]++; total += $2 }
       END { for (d in loc) printf "%8d  %4d files  %s\n", loc[d], files[d], d | "sort -k3";
             close("sort -k3"); printf "%8d  total\n", total }'
