// Overflow-checked integer arithmetic for sizes and indices: the one helper every parser, shape
// rule, reader and allocator uses. A size in detrain comes from a file, and a file can lie; a
// product of dimensions that wraps, or an offset that overflows, is an error here, never UB.
//
//   int64_t n;
//   if (!CheckedMul(rows, cols, &n)) return InvalidArgument(where + ": size overflows int64");
//   DETRAIN_ASSIGN_OR_RETURN(int64_t count, CheckedElementCount(dims, "tensor 'w1'"));
//
// Limits: an element count is at most kMaxElementCount (2^62), so that count × element size
// (≤ 8 bytes) and count + count still fit in int64 without a second check.
//
// Thread safety: pure functions.
#ifndef DETRAIN_BASE_CHECKED_H_
#define DETRAIN_BASE_CHECKED_H_

#include <cstdint>
#include <initializer_list>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace detrain {

inline constexpr int64_t kMaxElementCount = int64_t{1} << 62;

// *out = a op b; false (and *out unspecified) on int64 overflow.
[[nodiscard]] inline bool CheckedAdd(int64_t a, int64_t b, int64_t* out) {
  return !__builtin_add_overflow(a, b, out);
}
[[nodiscard]] inline bool CheckedSub(int64_t a, int64_t b, int64_t* out) {
  return !__builtin_sub_overflow(a, b, out);
}
[[nodiscard]] inline bool CheckedMul(int64_t a, int64_t b, int64_t* out) {
  return !__builtin_mul_overflow(a, b, out);
}
[[nodiscard]] inline bool CheckedAddU64(uint64_t a, uint64_t b, uint64_t* out) {
  return !__builtin_add_overflow(a, b, out);
}
[[nodiscard]] inline bool CheckedMulU64(uint64_t a, uint64_t b, uint64_t* out) {
  return !__builtin_mul_overflow(a, b, out);
}

// The product of non-negative dimensions, at most kMaxElementCount; an error naming `what`
// ("plan", "f32[4,8] 'w1'") when a dimension is negative or the product is too large.
inline Result<int64_t> CheckedElementCount(std::span<const int64_t> dims,
                                           std::string_view what = "shape") {
  int64_t n = 1;
  for (int64_t d : dims) {
    if (d < 0) {
      return InvalidArgument(std::string(what) + ": negative dimension " + std::to_string(d));
    }
    if (d != 0 && n > kMaxElementCount / d) {
      return InvalidArgument(std::string(what) + ": element count overflows (more than 2^62)");
    }
    n *= d;
  }
  return n;
}
inline Result<int64_t> CheckedElementCount(const std::vector<int64_t>& dims,
                                           std::string_view what = "shape") {
  return CheckedElementCount(std::span<const int64_t>(dims), what);
}
inline Result<int64_t> CheckedElementCount(std::initializer_list<int64_t> dims,
                                           std::string_view what = "shape") {
  return CheckedElementCount(std::span<const int64_t>(dims.begin(), dims.size()), what);
}

// count × element_bytes, with count ≤ kMaxElementCount and element_bytes ≤ 8 (never overflows).
inline int64_t ByteSize(int64_t count, int64_t element_bytes) { return count * element_bytes; }

}  // namespace detrain

#endif  // DETRAIN_BASE_CHECKED_H_
