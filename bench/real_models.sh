#!/usr/bin/env bash
# Issue 37's real models written in JAX (bench/real_models/models.py: ResNet-18 at CIFAR size with
# batch norm, a character LSTM run by lax.scan), exported and trained by detrain
# (bench_peer_step on the exported run.json) next to JAX's own donated steady state, 1 and 2
# threads under taskset as bench/peers/run.sh runs them. Each round runs detrain then JAX for
# every model and thread count; a cell is the median over rounds of each process's median step.
#
# Usage: bench/real_models.sh [BUILD_DIR] [ROUNDS]      (defaults: build, 3)
#   JAX_PY=path/to/python   the peers' venv's python (default BUILD_DIR/peers-venv/bin/python)
#   MODELS="resnet18 lstm"  THREADS="1 2"
#   STEPS_resnet18=5 STEPS_lstm=20   timed steps per process (after warm-up)
#   LOOPS=evaluator|generated|auto   bench_peer_step --loops (default: its default, auto;
#                                    docs/fused-loops.md)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
rounds=${2:-3}
py=${JAX_PY:-$build/peers-venv/bin/python}
bench=$build/bench/bench_peer_step
[[ -x $bench ]] || { echo "real_models.sh: no $bench (build first)" >&2; exit 2; }
[[ -x $py ]] || { echo "real_models.sh: no $py (bench/peers/setup.sh $build/peers-venv)" >&2; exit 2; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

cpus() { if [[ $1 == 1 ]]; then echo 0; else echo "0-$(($1 - 1))"; fi; }
median() { printf '%s\n' "$@" | sort -g | sed -n "$(( ($# + 1) / 2 ))p"; }
field() { sed -n "s/.*\"$1\": \([0-9.]*\).*/\1/p"; }

models=${MODELS:-resnet18 lstm}
threads=${THREADS:-1 2}
for m in $models; do
  "$py" bench/real_models/models.py export "$m" "$work/$m" > /dev/null
done
declare -A d j c
for ((r = 1; r <= rounds; r++)); do
  for m in $models; do
    steps_var=STEPS_$m
    case $m in resnet18) steps=${!steps_var:-5} ;; *) steps=${!steps_var:-20} ;; esac
    for t in $threads; do
      out=$(taskset -c "$(cpus "$t")" "$bench" "$work/$m/run.json" --model "$m" --threads "$t" \
              --steps "$steps" --warmup 2 ${LOOPS:+--loops "$LOOPS"})
      d[$m,$t]+=" $(field step_ms <<< "$out")"
      c[$m]+=" $(field compile_ms <<< "$out")"
      out=$(env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE taskset -c "$(cpus "$t")" \
              "$py" bench/real_models/models.py time "$m" "$steps")
      j[$m,$t]+=" $(sed -n 's/^step_ms \([0-9.]*\).*/\1/p' <<< "$out")"
      echo "round $r $m ${t}t: detrain ${d[$m,$t]##* } ms, jax ${j[$m,$t]##* } ms" >&2
    done
  done
done
printf '%-10s %7s %12s %12s %8s %18s\n' model threads "detrain ms" "jax ms" "÷ jax" "detrain compile ms"
for m in $models; do
  for t in $threads; do
    # shellcheck disable=SC2086
    dm=$(median ${d[$m,$t]}) jm=$(median ${j[$m,$t]}) cm=$(median ${c[$m]})
    printf '%-10s %7s %12s %12s %8.2f %18s\n' "$m" "$t" "$dm" "$jm" \
      "$(echo "$dm / $jm" | bc -l)" "$cm"
  done
done
