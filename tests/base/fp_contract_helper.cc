// Compiled with -mfma (see tests/base/CMakeLists.txt) so that the compiler COULD emit a fused
// multiply-add here; with the project's -ffp-contract=off it must not. Kept in its own file so
// the flag touches nothing else.
#include "fp_contract_helper.h"

namespace detrain::testing {

__attribute__((noinline)) float MulAdd(float a, float b, float c) { return a * b + c; }

__attribute__((noinline)) void MulAddArray(const float* a, const float* b, const float* c,
                                           float* out, int n) {
  for (int i = 0; i < n; ++i) out[i] = a[i] * b[i] + c[i];
}

}  // namespace detrain::testing
