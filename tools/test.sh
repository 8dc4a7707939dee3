#!/usr/bin/env bash
# README command (b), and what CI runs: installs what is missing, checks the layering, builds,
# and runs every test; the format check runs first too.
# Usage: tools/test.sh [--sanitize]
#   (default)   the full suite in build/ but the long checks (label `long`; README: ctest -L long)
#   --sanitize  the ASan+UBSan build in build-asan/ (clang; its libraries also carry libFuzzer's
#               coverage, so tools/fuzz.sh can run its harnesses: FUZZ_BUILD_DIR=build-asan),
#               all tests but those labelled `long`, `slow` and the
#               CUDA emulation (`emulation`: generated code compiled by the host compiler and run
#               on fibers, which ASan does not follow; the plain suite runs it), `toolchain`
#               (NVRTC and nvJitLink compiling each example: uninstrumented time) and `mpi` (real
#               mpirun runs, whose Open MPI allocations ASan reports; the in-process cluster
#               test covers the same protocol under the sanitizers)
#
# The layering check (tools/check_layers.py) stops the run at once. A format difference or a
# failed source gate (tools/lint.sh --format: a file over 800 lines or without its purpose
# comment) does not stop the build and the tests, so one run reports everything, but it makes
# the script exit non-zero at the end.
set -euo pipefail
cd "$(dirname "$0")/.."
tools/setup.sh --tests
python3 tools/check_layers.py
format_status=0
tools/lint.sh --format || format_status=$?
if [[ "${1:-}" == "--sanitize" ]]; then
  tools/build.sh --sanitize
  export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
  ctest --test-dir build-asan --output-on-failure -j "$(nproc)" -LE 'long|slow|emulation|toolchain|mpi'
else
  # The standard verifiers for cli.signing (schemas/attestation.md §10); without network access
  # the setup fails and that test skips the checks that need them, saying so.
  tools/setup-verifiers.sh || echo "test: tools/setup-verifiers.sh failed; the standard verifiers will be skipped" >&2
  tools/build.sh
  ctest --test-dir build --output-on-failure -j "$(nproc)" -LE long
fi
if ((format_status != 0)); then
  echo "test: the tests ran, but the format check or the source gates failed (tools/lint.sh" \
    "--format lists them; --fix formats)" >&2
fi
exit "$format_status"
