// Test helper: a multiply-add compiled where FMA instructions are available to the compiler.
#ifndef DETRAIN_TESTS_BASE_FP_CONTRACT_HELPER_H_
#define DETRAIN_TESTS_BASE_FP_CONTRACT_HELPER_H_

namespace detrain::testing {
float MulAdd(float a, float b, float c);
void MulAddArray(const float* a, const float* b, const float* c, float* out, int n);
}  // namespace detrain::testing

#endif  // DETRAIN_TESTS_BASE_FP_CONTRACT_HELPER_H_
