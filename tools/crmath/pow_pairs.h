// Deterministic generator of (x, y) test pairs for float32 pow, weighted toward hard regions
// (docs/math.md §5.3). PowPair(i) is a pure function of i: the verifier's pair set is fixed and
// independent of thread count. Thread-safe.
#ifndef DETRAIN_TOOLS_CRMATH_POW_PAIRS_H_
#define DETRAIN_TOOLS_CRMATH_POW_PAIRS_H_

#include <cstdint>

namespace detrain::crmath_verify {

inline constexpr int kPowCategories = 8;
// Category names, index = i % kPowCategories.
extern const char* const kPowCategoryNames[kPowCategories];

struct PowInput {
  float x;
  float y;
};

PowInput PowPair(uint64_t i);

// splitmix64 of i: the generator's source of pseudo-random bits.
uint64_t Mix64(uint64_t i);

}  // namespace detrain::crmath_verify

#endif  // DETRAIN_TOOLS_CRMATH_POW_PAIRS_H_
