#!/usr/bin/env bash
# Step time of `mpirun -np P detrain run` for P = 1, 2 (docs/scale-out.md, docs/benchmarks.md):
# each example trained for N1 and N2 steps, REPS times each, side by side; the time per step is
# the difference of the medians over N2 - N1 (which removes start-up and compilation), and the
# scaling efficiency is T(1) / (P × T(P)). Then bench_mpi_reduce: the exact tree against
# MPI_Allreduce on the same buffers.
# Usage: bench/mpi/scaling.sh [BUILD_DIR] [REPS]      (default build, 5)
set -euo pipefail
build=${1:-build}
reps=${2:-5}
bin=$build/src/cli/detrain
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
median() { sort -g | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }
seconds() {  # seconds of one run: P STEPS EXAMPLE
  local start end
  start=$(date +%s.%N)
  mpirun -np "$1" "$bin" run "examples/$3/train.dt" --steps "$2" -q >/dev/null 2>&1
  end=$(date +%s.%N)
  awk -v a="$start" -v b="$end" 'BEGIN { print b - a }'
}
printf '%-14s %3s %12s %12s\n' example P "ms/step" efficiency
for example in breast_cancer digits; do
  n1=50 n2=350
  declare -A per_step=()
  for p in 1 2; do
    : >"$tmp/a" ; : >"$tmp/b"
    for ((i = 0; i < reps; i++)); do  # interleaved, so drift hits both counts alike
      seconds "$p" "$n1" "$example" >>"$tmp/a"
      seconds "$p" "$n2" "$example" >>"$tmp/b"
    done
    a=$(median <"$tmp/a") b=$(median <"$tmp/b")
    per_step[$p]=$(awk -v a="$a" -v b="$b" -v n="$((n2 - n1))" 'BEGIN { print (b - a) * 1000 / n }')
  done
  for p in 1 2; do
    eff=$(awk -v t1="${per_step[1]}" -v tp="${per_step[$p]}" -v p="$p" 'BEGIN { print t1 / (p * tp) }')
    printf '%-14s %3d %12.3f %12.2f\n' "$example" "$p" "${per_step[$p]}" "$eff"
  done
  unset per_step
done
echo
mpirun -np 2 "$build/bench/bench_mpi_reduce" 300
