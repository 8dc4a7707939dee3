#!/usr/bin/env bash
# Style checks: clang-format (report only) and clang-tidy over src/. Needs `tools/setup.sh --dev`
# and a configured build/ (compile_commands.json). Usage: tools/lint.sh [--fix]
set -euo pipefail
cd "$(dirname "$0")/.."
files=$(git ls-files 'src/*.cc' 'src/*.h')
if [[ "${1:-}" == "--fix" ]]; then
  clang-format -i $files
else
  clang-format --dry-run $files 2>&1 | grep -c warning | xargs -I{} echo "clang-format: {} lines would change"
fi
clang-tidy -p build --quiet $(git ls-files 'src/*.cc') 2>/dev/null | grep -E 'warning|error' || echo "clang-tidy: clean"
