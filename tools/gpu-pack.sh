#!/usr/bin/env bash
# Builds what tools/gpu-check.sh runs and packs it for a GPU machine that cannot build detrain
# itself (no network, no Debian packages): the stripped binaries (detrain, the GPU test binary,
# bench_peer_step), the shared libraries they need beyond glibc and the CUDA toolkit's, and the
# examples' data files, as one archive gpu-carry/detrain-gpu.tar.xz (about 20 MB). gpu-check.sh
# uses it when it is there and builds from source otherwise.
#
# Usage: tools/gpu-pack.sh            (on a build machine with the CUDA toolkit: tools/setup.sh)
# Then run tools/gpu-check.sh on the GPU machine with gpu-carry/ beside the source tree.
set -euo pipefail
cd "$(dirname "$0")/.."
tools/build.sh detrain runtime_cuda_gpu_test bench_peer_step > /dev/null
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/bin" "$stage/lib" "$stage/data"
bins=(build/src/cli/detrain build/tests/runtime/runtime_cuda_gpu_test
      build/bench/bench_peer_step)
for b in "${bins[@]}"; do
  strip -o "$stage/bin/$(basename "$b")" "$b"
done
# Every library the binaries load but glibc's own and the driver's / toolkit's (the GPU machine
# has its own CUDA 13 under /usr/local/cuda, and its driver).
for b in "${bins[@]}"; do ldd "$b"; done | awk '/=> \// {print $3}' | sort -u | while read -r lib; do
  case $(basename "$lib") in
    libc.so* | libm.so* | libdl.so* | libpthread.so* | librt.so* | ld-linux* | libcuda.so* | \
      libnvrtc* | libnvJitLink* | libnccl*) ;;
    *) cp -L "$lib" "$stage/lib/" ;;
  esac
done
# The examples' data, at the paths the programs name (gpu-check.sh puts them there).
cp /usr/lib/python3/dist-packages/sklearn/datasets/data/breast_cancer.csv "$stage/data/"
cp /usr/share/common-licenses/GPL-3 "$stage/data/"
[[ -f examples/digits/digits.csv ]] || tools/setup.sh > /dev/null
cp examples/digits/digits.csv "$stage/data/"
git rev-parse HEAD > "$stage/commit"
mkdir -p gpu-carry
tar -C "$stage" -cJf gpu-carry/detrain-gpu.tar.xz .
grep -qx '/gpu-carry/' .git/info/exclude 2> /dev/null || echo '/gpu-carry/' >> .git/info/exclude
echo "gpu-pack: gpu-carry/detrain-gpu.tar.xz ($(du -h gpu-carry/detrain-gpu.tar.xz | cut -f1)," \
  "commit $(git rev-parse --short=12 HEAD))"
