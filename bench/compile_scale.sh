#!/usr/bin/env bash
# Compile time and peak RSS of `detrain compile --hashes` (every stage, to the CPU plan) on
# generated programs of growing size (bench/compile_scale/gen.py): pre-norm transformers of 4-48
# blocks at width 128 and 512, a GPT-2-small-shaped step (12 blocks, width 768, context 128) and
# MLPs of 2-32 layers; then the fitted growth exponent (time ~ size^k, least squares on logs) per
# family and time(48 blocks)/time(16 blocks). Each size: median user+sys CPU seconds of N runs.
# With a JAX venv (JAX_PY=path/to/python, e.g. bench/peers/setup.sh's), also JAX's first call of
# the same model's jitted step and its compile alone (bench/compile_scale/jax_first_call.py).
#
# Usage: bench/compile_scale.sh [BUILD_DIR] [N]      (defaults: build, 3)
#   SIZES="t128:4 t128:8 ..."  only these (t<width>:<blocks>, g:12 for GPT-2 small, m:<layers>)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
n=${2:-3}
detrain=$build/src/cli/detrain
[[ -x $detrain ]] || { echo "compile_scale.sh: no $detrain (build first)" >&2; exit 2; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
sizes=${SIZES:-"t128:4 t128:8 t128:16 t128:32 t128:48 t512:4 t512:8 t512:16 t512:32 t512:48 g:12 m:2 m:4 m:8 m:16 m:32"}

mkdir -p "$work/a/b"
gen() {  # kind:size -> program path
  local kind=${1%%:*} size=${1##*:} file
  case $kind in
    t*) file=$work/a/b/t${kind#t}_$size.dt; python3 bench/compile_scale/gen.py transformer "$size" "${kind#t}" > "$file" ;;
    g)  file=$work/a/b/gpt2_$size.dt; python3 bench/compile_scale/gen.py transformer "$size" 768 128 > "$file" ;;
    m)  file=$work/a/b/mlp_$size.dt; python3 bench/compile_scale/gen.py mlp "$size" 256 > "$file" ;;
  esac
  echo "$file"
}

printf '%-12s %12s %12s %8s %16s %14s\n' model instructions "cpu s (med)" "rss MiB" "jax compile ms" "jax first ms"
results=()
for spec in $sizes; do
  prog=$(gen "$spec")
  instrs=$("$detrain" compile "$prog" --emit opt-hlo | grep -c ' = ' || true)
  times=() rss=0
  for _ in $(seq "$n"); do
    line=$( { /usr/bin/time -f '%U %S %M' "$detrain" compile "$prog" --hashes > /dev/null; } 2>&1 | tail -1)
    read -r u s m <<< "$line"
    times+=("$(echo "$u + $s" | bc -l)")
    (( m > rss )) && rss=$m
  done
  med=$(printf '%s\n' "${times[@]}" | sort -g | sed -n "$(( (n + 1) / 2 ))p")
  jax="- -"
  if [[ -n ${JAX_PY:-} ]]; then
    kind=${spec%%:*} size=${spec##*:}
    case $kind in
      t*) args=(transformer "$size" "${kind#t}") ;;
      g)  args=(transformer "$size" 768 128) ;;
      m)  args=(mlp "$size" 256) ;;
    esac
    jax=$(env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE "$JAX_PY" bench/compile_scale/jax_first_call.py "${args[@]}" | awk '{print $2, $4}')
  fi
  read -r jax_compile jax_first <<< "$jax"
  printf '%-12s %12s %12.2f %8d %16s %14s\n' "$spec" "$instrs" "$med" $(( rss / 1024 )) "$jax_compile" "$jax_first"
  results+=("$spec $med")
done

# Growth exponent per family: slope of log(time) against log(size).
printf '%s\n' "${results[@]}" | python3 -c '
import math, sys
fam = {}
for line in sys.stdin:
    spec, t = line.split()
    kind, size = spec.split(":")
    fam.setdefault(kind, []).append((int(size), float(t)))
for kind, pts in fam.items():
    if len(pts) < 2: continue
    xs = [math.log(s) for s, _ in pts]; ys = [math.log(t) for _, t in pts]
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    k = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sum((x - mx) ** 2 for x in xs)
    d = dict(pts)
    ratio = f"   time(48)/time(16) = {d[48] / d[16]:.2f}" if 48 in d and 16 in d else ""
    print(f"{kind}: time ~ size^{k:.2f}{ratio}")
'
