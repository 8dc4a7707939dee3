// The canonical evaluation orders (DESIGN.md §2, docs/ir.md; the Order column of ops.def): the
// ONLY place a summation order is written. Every engine — interpreter, CPU kernels, the
// cross-device all-reduce, CUDA — evaluates `dot`, `convolution`, `reduce`, `reduce-window` and
// the shard sum in exactly these orders, so they agree bit for bit.
//
//   kFmaChain    acc = +0.0f; for k ascending: acc = fmaf(a[k], b[k], acc). Blocking and
//                vectorization may only run across output elements, never split a chain.
//   kPairwise64  leaves of kReduceLeafSize consecutive values, each combined left to right
//                starting from init (combine(acc, value)); then the pairwise tree over the leaf
//                results. n == 0 gives init.
//   kShardTree   the pairwise tree (base/pairwise_tree.h) over shard (replica) index.
//
// The ops that sum by these orders: dot is one DotChain per output element, k row-major over the
// contracting dimensions in the order lhs_contracting_dims lists them; convolution is the same
// chain over k = (window tap row-major over the kernel's spatial dimensions, then input feature
// ascending), where padding and dilation holes contribute fmaf(+0, w, acc) (exactly im2col then a
// dot); reduce and reduce-window are CanonicalReduce over the reduced elements in row-major order
// (reduce-window skips padding); all-reduce is the shard tree over the replica group's order;
// scatter applies its combiner once per update in row-major update order (kUpdateOrder).
//
// The block-tree property, which lets D devices each reduce a contiguous block of shards and
// then combine the D block results (the all-reduce performs "the upper levels of the same
// tree"): if n = D * B with B a power of two, the pairwise tree over values[0, n) equals the
// pairwise tree over the D block trees PairwiseTree(values[d*B, (d+1)*B)). Proof sketch: with B
// = 2^m, the first m levels of the whole tree pair only elements within one aligned block of B
// (no odd carries occur while the level size is a multiple of 2), and after m levels element d
// of the level is exactly block d's root. For B not a power of two this fails in general (an odd
// carry crosses a block boundary); tests/compiler/semantics/orders_test.cc checks both.
//
// Header-only, host and CUDA device; no allocation (callers pass scratch), no exceptions.
// Thread safety: the caller owns its buffers. Determinism: the sequence of combine calls and
// their operands depends on n alone.
#ifndef DETRAIN_COMPILER_SEMANTICS_ORDERS_H_
#define DETRAIN_COMPILER_SEMANTICS_ORDERS_H_

#include "base/host_device.h"
#include "base/pairwise_tree.h"
#include "compiler/semantics/scalar.h"

namespace detrain::semantics {

using detrain::PairwiseTreeInPlace;

inline constexpr int64_t kReduceLeafSize = 64;

// The number of 64-element leaves of a reduce over n values: ceil(n / 64) (0 for n == 0).
DETRAIN_HD inline int64_t ReduceLeafCount(int64_t n) {
  return (n + kReduceLeafSize - 1) / kReduceLeafSize;
}

// The dot chain over k terms: acc = T(0); for i ascending: acc = MultiplyAccumulate(a(i), b(i),
// acc). For f32 that is the fmaf chain from +0.0f.
DETRAIN_HD_TEMPLATE
template <typename T, typename LoadA, typename LoadB>
DETRAIN_HD T DotChain(int64_t k, LoadA load_a, LoadB load_b) {
  T acc = T(0);
  for (int64_t i = 0; i < k; ++i) acc = MultiplyAccumulate<T>(load_a(i), load_b(i), acc);
  return acc;
}

// The f32 dot chain over strided operands: a[i * a_stride], b[i * b_stride] for i < k.
DETRAIN_HD inline float FmaChain(const float* a, int64_t a_stride, const float* b, int64_t b_stride,
                                 int64_t k) {
  float acc = 0.0f;
  for (int64_t i = 0; i < k; ++i) acc = Fma(a[i * a_stride], b[i * b_stride], acc);
  return acc;
}

// One leaf of the canonical reduce: init combined with load(begin), ..., load(end - 1), left to
// right. Exposed so that parallel or vector code can compute leaves independently.
DETRAIN_HD_TEMPLATE
template <typename T, typename Load, typename Combine>
DETRAIN_HD T ReduceLeaf(int64_t begin, int64_t end, T init, Load load, Combine combine) {
  T acc = init;
  for (int64_t i = begin; i < end; ++i) acc = combine(acc, load(i));
  return acc;
}

// The canonical (kPairwise64) reduce of load(0), ..., load(n - 1) from init. `scratch` holds
// ReduceLeafCount(n) values; it is overwritten.
DETRAIN_HD_TEMPLATE
template <typename T, typename Load, typename Combine>
DETRAIN_HD T CanonicalReduce(int64_t n, T init, Load load, Combine combine, T* scratch) {
  if (n <= 0) return init;
  int64_t leaves = ReduceLeafCount(n);
  for (int64_t l = 0; l < leaves; ++l) {
    int64_t begin = l * kReduceLeafSize;
    int64_t end = begin + kReduceLeafSize < n ? begin + kReduceLeafSize : n;
    scratch[l] = ReduceLeaf(begin, end, init, load, combine);
  }
  return PairwiseTreeInPlace(scratch, leaves, combine);
}

// Whether the block-tree property above holds for n values in blocks of `block` values:
// block >= 1 a power of two dividing n. Callers that split a shard tree across devices check it.
DETRAIN_HD inline bool BlockTreeSplits(int64_t n, int64_t block) {
  return block >= 1 && (block & (block - 1)) == 0 && n % block == 0;
}

}  // namespace detrain::semantics

#endif  // DETRAIN_COMPILER_SEMANTICS_ORDERS_H_
