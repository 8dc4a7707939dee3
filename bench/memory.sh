#!/usr/bin/env bash
# Peak memory of `detrain run --attest` (compile, train, checkpoint, final weights; the peak RSS
# of the whole process) next to JAX's jitted train step of the same model, optimizer and batch
# (bench/memory/jax_peak.py; JAX's default, and with the state donated), and bytes per parameter.
# Models (bench/memory/gen.py): the 25.2M MLP of issue 36 (1024-4096-4096-1024-10, batch 128)
# and a 25.5M pre-norm transformer (8 blocks, width 512, context 128, batch 8), each with sgd,
# momentum and adam. Each cell: the median of N runs; detrain and JAX alternate.
#
# Usage: bench/memory.sh [BUILD_DIR] [N]      (defaults: build, 3)
#   JAX_PY=path/to/python   the peers' venv (bench/peers/setup.sh); without it, detrain only
#   MODELS="mlp transformer"  OPTIMIZERS="sgd momentum adam"  STEPS=4  THREADS=1
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
n=${2:-3}
detrain=$build/src/cli/detrain
[[ -x $detrain ]] || { echo "memory.sh: no $detrain (build first)" >&2; exit 2; }
steps=${STEPS:-4}
threads=${THREADS:-1}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

median() { printf '%s\n' "$@" | sort -g | sed -n "$(( ($# + 1) / 2 ))p"; }
rss_of() {  # peak RSS in KiB of a command that must succeed
  /usr/bin/time -o "$work/rss" -f '%M' "$@" > /dev/null 2> "$work/err" ||
    { cat "$work/err" >&2; echo "memory.sh: failed: $*" >&2; exit 1; }
  cat "$work/rss"
}

printf '%-12s %-9s %11s %12s %9s %12s %9s %12s %9s\n' model optimizer params \
  "detrain MiB" "B/param" "jax MiB" "B/param" "jax-don MiB" "B/param"
for model in ${MODELS:-mlp transformer}; do
  for opt in ${OPTIMIZERS:-sgd momentum adam}; do
    dir=$work/$model-$opt
    case $model in
      mlp) python3 bench/memory/gen.py mlp 1024,4096,4096,1024,10 128 "$opt" "$steps" "$dir"
           jax_args=(mlp 1024,4096,4096,1024,10 128 "$opt" "$steps") ;;
      transformer) python3 bench/memory/gen.py transformer 8 512 128 8 "$opt" "$steps" "$dir"
           jax_args=(transformer 8 512 128 8 "$opt" "$steps") ;;
    esac
    # The parameter count: the product of each `param NAME: f32[dims]` line's dims, summed.
    params=$(python3 -c 'import math, re, sys
print(sum(math.prod(int(d) for d in m.split(",")) for m in
          re.findall(r"^param \w+: f32\[([0-9, ]+)\]", open(sys.argv[1]).read(), re.M)))' "$dir/train.dt")
    d=() j=() jd=()
    for _ in $(seq "$n"); do
      rm -rf "$dir/bundle"
      d+=("$(rss_of "$detrain" run "$dir/train.dt" --attest -o "$dir/bundle" --threads "$threads")")
      if [[ -n ${JAX_PY:-} ]]; then
        for donate in 0 1; do
          line=$(env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE taskset -c 0-$((threads - 1)) \
                 "$JAX_PY" bench/memory/jax_peak.py "${jax_args[@]}" "$donate")
          if [[ $donate == 0 ]]; then j+=("$(awk '{print $4}' <<< "$line")"); else jd+=("$(awk '{print $4}' <<< "$line")"); fi
        done
      fi
    done
    dk=$(median "${d[@]}")
    row=$(printf '%-12s %-9s %11s %12d' "$model" "$opt" "$params" $(( dk / 1024 )))
    per() { echo "scale=1; $1 * 1024 / $params" | bc; }
    row+=$(printf ' %9s' "$(per "$dk")")
    if [[ -n ${JAX_PY:-} ]]; then
      jk=$(median "${j[@]}") jdk=$(median "${jd[@]}")
      row+=$(printf ' %12d %9s %12d %9s' $(( jk / 1024 )) "$(per "$jk")" $(( jdk / 1024 )) "$(per "$jdk")")
    fi
    echo "$row"
  done
done
