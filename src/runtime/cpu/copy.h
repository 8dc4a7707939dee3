// Row-major index helpers, index reads and the permuted copy shared by the movement, indexing
// and linear-algebra kernels.
//
// Thread safety: pure functions.
#ifndef DETRAIN_RUNTIME_CPU_COPY_H_
#define DETRAIN_RUNTIME_CPU_COPY_H_

#include <cstdint>
#include <cstring>
#include <vector>

#include "compiler/ir/element_type.h"
#include "compiler/ir/shape.h"

namespace detrain::runtime::cpu {

inline std::vector<int64_t> RowMajorStrides(const std::vector<int64_t>& dims) {
  std::vector<int64_t> s(dims.size(), 1);
  for (size_t d = dims.size(); d-- > 1;) s[d - 1] = s[d] * dims[d];
  return s;
}

// Advances a row-major multi-index of `rank` dims; returns false after the last one.
inline bool NextIndex(int64_t* idx, const int64_t* dims, size_t rank) {
  for (size_t k = rank; k-- > 0;) {
    if (++idx[k] < dims[k]) return true;
    idx[k] = 0;
  }
  return false;
}
inline bool NextIndex(std::vector<int64_t>& idx, const std::vector<int64_t>& dims) {
  return NextIndex(idx.data(), dims.data(), idx.size());
}

// dst (row-major, dims[perm[0]], dims[perm[1]], ...) = src (row-major, dims) transposed:
// dst[i0, i1, ...] = src[j] with j[perm[k]] = i_k. `perm` must be a permutation of the dims.
inline void PermuteCopy(const uint8_t* src, const std::vector<int64_t>& dims,
                        const std::vector<int64_t>& perm, int size, uint8_t* dst) {
  std::vector<int64_t> out_dims, src_strides = RowMajorStrides(dims), step;
  int64_t n = 1;
  for (int64_t p : perm) {
    out_dims.push_back(dims[static_cast<size_t>(p)]);
    step.push_back(src_strides[static_cast<size_t>(p)]);
    n *= dims[static_cast<size_t>(p)];
  }
  if (n == 0) return;
  std::vector<int64_t> idx(perm.size(), 0);
  int64_t o = 0;
  do {
    int64_t off = 0;
    for (size_t k = 0; k < idx.size(); ++k) off += idx[k] * step[k];
    std::memcpy(dst + o * size, src + off * size, static_cast<size_t>(size));
    ++o;
  } while (NextIndex(idx, out_dims));
}

inline bool IsIdentity(const std::vector<int64_t>& perm) {
  for (size_t i = 0; i < perm.size(); ++i) {
    if (perm[i] != static_cast<int64_t>(i)) return false;
  }
  return true;
}

using ir::IsPermutation;

// Element i of an index operand as int64 (u64 beyond int64 saturates), as the interpreter reads
// start indices.
inline int64_t ReadIndex(const uint8_t* p, ir::ElementType type, int64_t i = 0) {
  return ir::DispatchElementType(type, [&](auto tag) -> int64_t {
    using T = typename decltype(tag)::type;
    T v;
    std::memcpy(&v, p + i * static_cast<int64_t>(sizeof(T)), sizeof(T));
    if constexpr (std::is_same_v<T, uint64_t>) {
      return v > static_cast<uint64_t>(INT64_MAX) ? INT64_MAX : static_cast<int64_t>(v);
    } else {
      return static_cast<int64_t>(v);
    }
  });
}

}  // namespace detrain::runtime::cpu

#endif  // DETRAIN_RUNTIME_CPU_COPY_H_
