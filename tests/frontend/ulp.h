// Test helper: the distance in units in the last place between two float32 values (0 when equal,
// INT64_MAX when exactly one is NaN). Used where results are compared with a peer (JAX, optax).
#ifndef DETRAIN_TESTS_FRONTEND_ULP_H_
#define DETRAIN_TESTS_FRONTEND_ULP_H_

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>

namespace detrain::testing {

inline int64_t UlpDistance(float a, float b) {
  if (a == b) return 0;
  if (std::isnan(a) || std::isnan(b)) return INT64_MAX;
  int32_t ia, ib;
  std::memcpy(&ia, &a, 4);
  std::memcpy(&ib, &b, 4);
  if (ia < 0) ia = INT32_MIN - ia;  // map the sign-magnitude order onto the integers
  if (ib < 0) ib = INT32_MIN - ib;
  return std::llabs(static_cast<int64_t>(ia) - ib);
}

}  // namespace detrain::testing

#endif  // DETRAIN_TESTS_FRONTEND_ULP_H_
