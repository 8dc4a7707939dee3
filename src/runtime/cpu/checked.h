// Overflow-checked size arithmetic for reading plans: a plan is a file, and a file can lie.
//
// Thread safety: pure functions.
#ifndef DETRAIN_RUNTIME_CPU_CHECKED_H_
#define DETRAIN_RUNTIME_CPU_CHECKED_H_

#include <cstdint>
#include <vector>

#include "base/status.h"

namespace detrain::runtime::cpu {

// Product of non-negative dims; an error if any is negative or the product exceeds 2^62.
inline Result<int64_t> CheckedElementCount(const std::vector<int64_t>& dims) {
  constexpr int64_t kLimit = int64_t{1} << 62;
  int64_t n = 1;
  for (int64_t d : dims) {
    if (d < 0) return InvalidArgument("plan: a negative dimension");
    if (d != 0 && n > kLimit / d) return InvalidArgument("plan: an element count overflows");
    n *= d;
  }
  return n;
}

}  // namespace detrain::runtime::cpu

#endif  // DETRAIN_RUNTIME_CPU_CHECKED_H_
