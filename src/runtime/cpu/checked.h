// Overflow-checked size arithmetic for reading plans: a plan is a file, and a file can lie.
// The arithmetic is base/checked.h's; this names the plan in its errors.
//
// Thread safety: pure functions.
#ifndef DETRAIN_RUNTIME_CPU_CHECKED_H_
#define DETRAIN_RUNTIME_CPU_CHECKED_H_

#include <cstdint>
#include <vector>

#include "base/checked.h"
#include "base/status.h"

namespace detrain::runtime::cpu {

// Product of non-negative dims; an error if any is negative or the product exceeds 2^62.
inline Result<int64_t> CheckedElementCount(const std::vector<int64_t>& dims) {
  return detrain::CheckedElementCount(dims, "plan");
}

}  // namespace detrain::runtime::cpu

#endif  // DETRAIN_RUNTIME_CPU_CHECKED_H_
