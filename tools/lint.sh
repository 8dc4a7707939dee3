#!/usr/bin/env bash
# Style checks. The format check and the source gates are enforced (tools/test.sh, what CI runs,
# calls `--format`); clang-tidy is advisory and needs `tools/setup.sh --dev` and a configured
# build/ (compile_commands.json).
#
# Usage: tools/lint.sh            the enforced checks, then clang-tidy over src/ (report only)
#        tools/lint.sh --format   the enforced checks only: the format check, then the gates
#        tools/lint.sh --fix      rewrite every checked file with clang-format
#
# The format check covers every hand-written C/C++ file git tracks under src/, tests/, tools/ and
# bench/ (*.h, *.cc, *.cu, *.cuh), except generated files (first line "// GENERATED ...").
# X-macro tables (*.def) and include fragments (*.inc) are laid out by hand and not checked.
# It lists each file whose text differs from clang-format's (.clang-format: Google, 100
# columns) and exits 1 if there is any; the check itself never modifies a file.
#
# The source gates (tools/check_sources.py, STYLE.md points 10-11; *.def and *.inc included)
# fail on a file over 800 lines or one that does not open with a comment on its purpose, and
# list every function over 100 lines (a report, not a failure).
set -euo pipefail
cd "$(dirname "$0")/.."
mode="${1:-all}"

checked_files() {
  git ls-files 'src/*.h' 'src/*.cc' 'src/*.cu' 'src/*.cuh' 'tests/*.h' 'tests/*.cc' \
    'tests/*.cu' 'tests/*.cuh' 'tools/*.h' 'tools/*.cc' 'tools/*.cu' 'bench/*.h' 'bench/*.cc' \
    'bench/*.cu' | while read -r f; do
    if [[ -f "$f" ]] && ! head -n 1 "$f" | grep -q '^// GENERATED'; then echo "$f"; fi
  done
}

if ! command -v clang-format > /dev/null; then
  echo "lint: clang-format is missing; run tools/setup.sh" >&2
  exit 2
fi
mapfile -t files < <(checked_files)

if [[ "$mode" == "--fix" ]]; then
  clang-format -i "${files[@]}"
  echo "lint: formatted ${#files[@]} files"
  exit 0
fi

# clang-format --dry-run -Werror exits non-zero on a file whose formatting would change.
differ=()
for f in "${files[@]}"; do
  if ! clang-format --dry-run -Werror "$f" > /dev/null 2>&1; then differ+=("$f"); fi
done
format_status=0
if ((${#differ[@]} > 0)); then
  printf 'clang-format: %s differs\n' "${differ[@]}"
  echo "lint: ${#differ[@]} of ${#files[@]} files are not clang-formatted (tools/lint.sh --fix)" >&2
  format_status=1
else
  echo "lint: all ${#files[@]} files are clang-formatted"
fi

python3 tools/check_sources.py || format_status=1

if [[ "$mode" == "--format" ]]; then exit "$format_status"; fi

if command -v clang-tidy > /dev/null && [[ -f build/compile_commands.json ]]; then
  clang-tidy -p build --quiet $(git ls-files 'src/*.cc') 2>/dev/null | grep -E 'warning|error' ||
    echo "clang-tidy: clean"
else
  echo "clang-tidy: skipped (needs tools/setup.sh --dev and a configured build/)"
fi
exit "$format_status"
