#!/usr/bin/env bash
# Installs every Debian package detrain needs to build, test and run its examples. Idempotent and
# non-interactive: packages already present are not reinstalled, and apt-get runs only when
# something is missing. Uses sudo when not run as root. The CUDA toolkit is not a Debian package
# here: the build detects /usr/local/cuda and works without it.
#
# Usage: tools/setup.sh [--dev] [--fuzz] [--tests]
#   --dev    adds clang-tidy (clang-format is always installed: tools/test.sh runs the format
#            check)
#   --fuzz   adds clang, libFuzzer and llvm-symbolizer for tools/fuzz.sh
#   --tests  adds Chromium, which tests/cli/report_test.py opens the audit report in
#            (tools/test.sh passes it)
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config git ca-certificates
  libssl-dev openssl            # SHA-256 (EVP), ECDSA P-256 signatures
  libxxhash-dev                 # XXH3 per-step state digests
  nlohmann-json3-dev            # JSON
  zlib1g-dev                    # inflate and CRC-32 of .npz data (base/zip.cc)
  libprotobuf-dev protobuf-compiler
  libcli11-dev                  # command line
  libgtest-dev libgmock-dev libbenchmark-dev
  libmpfr-dev libgmp-dev        # correctly rounded reference for the math verifier
  python3 python3-sklearn       # ships the example datasets (breast_cancer.csv, digits.csv.gz)
  python3-jsonschema            # tests/tools/bundle_schema_test.py (schemas/bundle.schema.json)
  gzip base-files               # gunzip; base-files ships the char-LM corpus (common-licenses/GPL-3)
  clang-format                  # the format check of tools/lint.sh, which tools/test.sh runs
  openmpi-bin libopenmpi-dev    # multi-process runs (mpirun; docs/scale-out.md)
  iproute2                      # tests/cli/mpi_test.py: two hosts as network namespaces
)
for arg in "$@"; do
  case $arg in
    --dev) packages+=(clang-tidy) ;;
    # clang 14 (Debian 12); libclang-rt-14-dev ships libclang_rt.fuzzer-x86_64.a and the
    # sanitizer runtimes; llvm ships llvm-symbolizer, which symbolizes the crash stacks.
    --fuzz) packages+=(clang libclang-rt-14-dev llvm) ;;
    --tests) packages+=(chromium util-linux) ;;  # util-linux: unshare (a browser without network)
    *) echo "setup: unknown option $arg (use --dev, --fuzz, --tests)" >&2; exit 2 ;;
  esac
done

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
if ((${#missing[@]} == 0)); then
  echo "setup: all ${#packages[@]} packages present"
else
  sudo=""
  if [[ $(id -u) -ne 0 ]]; then sudo="sudo"; fi
  echo "setup: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get update -q
  $sudo apt-get install -y -q --no-install-recommends "${missing[@]}"
fi

# Example data that Debian ships compressed: unpack once, atomically (examples/digits/train.dt).
cd "$(dirname "$0")/.."
digits_gz=/usr/lib/python3/dist-packages/sklearn/datasets/data/digits.csv.gz
if [[ ! -f examples/digits/digits.csv && -f $digits_gz ]]; then
  gunzip -c "$digits_gz" > examples/digits/digits.csv.tmp && mv examples/digits/digits.csv.tmp examples/digits/digits.csv
fi
