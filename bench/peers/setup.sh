#!/usr/bin/env bash
# Creates the peers' virtual environment for bench/peers/run.sh: jax (CPU), optax, numpy and a
# CPU-only torch. It is separate from everything detrain builds or tests with: nothing in detrain
# imports it, and detrain never depends on it.
#
# Usage: bench/peers/setup.sh [VENV_DIR]     (default: $PEERS_VENV, else build/peers-venv)
#   PEERS_PYTHON=python3.x   the interpreter to create it with (default: python3)
# torch comes from https://download.pytorch.org/whl/cpu (the CPU-only wheels) when that index is
# reachable, else from plain PyPI. Prints, and writes to VENV_DIR/versions.txt, the versions
# installed (a pip freeze subset).
set -euo pipefail
cd "$(dirname "$0")/../.."
venv=${1:-${PEERS_VENV:-build/peers-venv}}
python=${PEERS_PYTHON:-python3}
[[ -x $venv/bin/python ]] || "$python" -m venv "$venv"
pip=("$venv/bin/python" -m pip --disable-pip-version-check --no-input)
"${pip[@]}" install -q --upgrade pip
cpu_index=https://download.pytorch.org/whl/cpu
if curl -sfI --max-time 10 "$cpu_index/torch/" > /dev/null 2>&1; then
  "${pip[@]}" install -q --index-url "$cpu_index" torch
else
  echo "setup.sh: $cpu_index unreachable; torch from PyPI" >&2
  "${pip[@]}" install -q torch
fi
"${pip[@]}" install -q jax optax numpy
"${pip[@]}" freeze |
  grep -iE '^(jax|jaxlib|optax|numpy|torch|scipy|ml.dtypes|opt.einsum|chex)(==| @)' |
  tee "$venv/versions.txt"
"$venv/bin/python" -c 'import numpy, torch, jax
blas = numpy.show_config(mode="dicts")["Build Dependencies"]["blas"]
print("numpy blas:", blas.get("name"), blas.get("version"))
print("torch mkl:", torch.backends.mkl.is_available(), "jax devices:", jax.devices())' |
  tee -a "$venv/versions.txt"
echo "peers venv: $venv"
