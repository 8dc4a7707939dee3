// The pairwise tree: the one combination order that detrain's reductions, its shard sums, the
// cross-device all-reduce and the Merkle tree of file digests share (DESIGN.md §2,
// schemas/merkle.md). Level by level, neighbours (2j, 2j+1) are combined in index order as
// combine(left, right); an odd last value is carried up to the next level unchanged.
//
// Header-only, host and CUDA device (base/host_device.h): no allocation, no exceptions. It lives
// in layer 0 so that attest/ (layer 1, the Merkle tree) and compiler/semantics/ (layer 2, which
// re-exports it) use the same code. Thread safety: the caller owns `values`. Determinism: the
// order of combine calls and their operands is a function of n alone.
#ifndef DETRAIN_BASE_PAIRWISE_TREE_H_
#define DETRAIN_BASE_PAIRWISE_TREE_H_

#include "base/host_device.h"

namespace detrain {

// The tree over values[0, n), n >= 1; returns the root. Overwrites values[0, n): level l's
// results are stored in values[0, ceil(size / 2)), which is safe because element j is written
// only after elements 2j and 2j + 1 were read.
DETRAIN_HD_TEMPLATE
template <typename T, typename Combine>
DETRAIN_HD T PairwiseTreeInPlace(T* values, int64_t n, Combine combine) {
  while (n > 1) {
    int64_t pairs = n / 2;
    for (int64_t j = 0; j < pairs; ++j) values[j] = combine(values[2 * j], values[2 * j + 1]);
    if (n % 2 == 1) {
      values[pairs] = values[n - 1];
      n = pairs + 1;
    } else {
      n = pairs;
    }
  }
  return values[0];
}

}  // namespace detrain

#endif  // DETRAIN_BASE_PAIRWISE_TREE_H_
