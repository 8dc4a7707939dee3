#!/usr/bin/env bash
# Creates .venv-verifiers/ in the repository root: a Python virtual environment with the standard
# third-party verifiers that tests/evidence/standard_verifiers.py runs against detrain's audit
# bundles (the OpenSSF `model_signing` CLI, and in-toto / securesystemslib for DSSE envelopes).
# None of this is a build dependency of detrain.
#
# Idempotent: when the venv already holds exactly the pinned versions it does nothing. Installs
# python3-venv with apt-get when `python3 -m venv` is unavailable (fresh Debian); uses sudo for
# that when not run as root. Needs network access to PyPI (or a pip mirror) on first run.
#
# Usage: tools/setup-verifiers.sh        (PYTHON=/path/to/python3 to choose the interpreter)
set -euo pipefail

# Exact pins, resolved and tested together on Python 3.11 (Debian 12).
# pyopenssl: model_signing 1.1.1 imports OpenSSL (sign_certificate.py) on every CLI start but
# does not declare the dependency, so without it `model_signing` fails with
# "No module named 'OpenSSL'".
pins=(
  model-signing==1.1.1
  pyopenssl==26.4.0
  in-toto==3.1.0
  securesystemslib==1.6.0
)

root=$(cd "$(dirname "$0")/.." && pwd)
venv=$root/.venv-verifiers
python=${PYTHON:-python3}

# True when $venv has a working interpreter and exactly the pinned versions installed.
venv_ok() {
  [[ -x $venv/bin/python && -x $venv/bin/model_signing ]] || return 1
  "$venv/bin/python" - "${pins[@]}" <<'EOF' 2>/dev/null
import sys
from importlib.metadata import version, PackageNotFoundError
for pin in sys.argv[1:]:
    name, want = pin.split("==")
    try:
        if version(name) != want:
            sys.exit(1)
    except PackageNotFoundError:
        sys.exit(1)
EOF
}

if venv_ok; then
  echo "setup-verifiers: $venv already has ${pins[*]}"
  exit 0
fi

sudo=""
if [[ $(id -u) -ne 0 ]]; then sudo="sudo"; fi
apt_install() {
  echo "setup-verifiers: installing $*"
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get update -q
  $sudo apt-get install -y -q --no-install-recommends "$@"
}

if ! command -v "$python" >/dev/null 2>&1; then
  apt_install python3 python3-venv
  python=python3
fi
# Debian splits venv/ensurepip out of python3; `import ensurepip` fails without python3-venv.
if ! "$python" -c 'import venv, ensurepip' >/dev/null 2>&1; then
  pyver=$("$python" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
  apt_install python3-venv "python$pyver-venv"
fi

# Start from scratch when the venv exists but is broken or has other versions: pip would
# otherwise keep stale transitive dependencies around.
if [[ -e $venv ]]; then
  echo "setup-verifiers: recreating $venv"
  rm -rf "$venv"
fi
echo "setup-verifiers: creating $venv with $("$python" --version 2>&1)"
"$python" -m venv "$venv"
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check "${pins[@]}"

# Smoke test: the CLI must start (this is what catches a missing undeclared dependency).
"$venv/bin/model_signing" --version >/dev/null
venv_ok || { echo "setup-verifiers: installed versions differ from the pins" >&2; exit 1; }
echo "setup-verifiers: ready ($("$venv/bin/model_signing" --version))"
