// Proves the determinism flags are in effect (DESIGN.md §2): no FMA contraction, no flush to
// zero, no denormals-are-zero.
#include <gtest/gtest.h>
#include <xmmintrin.h>

#include <cmath>
#include <cstring>

#include "fp_contract_helper.h"

namespace {

float FromBits(uint32_t b) {
  float f;
  std::memcpy(&f, &b, 4);
  return f;
}

// a = b = 1 + 2^-23, c = -(1 + 2^-22): a*b = 1 + 2^-22 + 2^-46 exactly. Rounded then added: 0.
// Fused: 2^-46. So the two evaluation orders give different bits.
const float kA = FromBits(0x3f800001), kC = FromBits(0xbf800002);

TEST(FpFlagsTest, ValuesDiscriminateFusedFromUnfused) {
  volatile float a = kA, c = kC;
  EXPECT_EQ(std::fma(a, a, c), std::ldexp(1.0f, -46));
}

TEST(FpFlagsTest, NoContractionEvenWhereFmaInstructionsAreAllowed) {
  if (!__builtin_cpu_supports("fma")) GTEST_SKIP() << "CPU has no FMA; helper built with -mfma";
  volatile float a = kA, c = kC;
  EXPECT_EQ(detrain::testing::MulAdd(a, a, c), 0.0f);
  float av[64], bv[64], cv[64], out[64];
  for (int i = 0; i < 64; ++i) {
    av[i] = bv[i] = kA;
    cv[i] = kC;
  }
  detrain::testing::MulAddArray(av, bv, cv, out, 64);  // the vectorized loop must not fuse either
  for (int i = 0; i < 64; ++i) EXPECT_EQ(out[i], 0.0f) << i;
}

TEST(FpFlagsTest, NoFlushToZeroOrDenormalsAreZero) {
  unsigned csr = _mm_getcsr();
  EXPECT_EQ(csr & 0x8000u, 0u) << "FTZ is set";
  EXPECT_EQ(csr & 0x0040u, 0u) << "DAZ is set";
  volatile float tiny = FromBits(0x00000001);  // smallest subnormal
  volatile float two = 2.0f;
  float doubled = tiny * two;
  uint32_t bits;
  std::memcpy(&bits, &doubled, 4);
  EXPECT_EQ(bits, 0x00000002u);
}

TEST(FpFlagsTest, NoFastMathMacros) {
#ifdef __FAST_MATH__
  FAIL() << "__FAST_MATH__ is defined";
#endif
#ifdef __FINITE_MATH_ONLY__
  EXPECT_EQ(__FINITE_MATH_ONLY__, 0);
#endif
  volatile float zero = 0.0f;
  EXPECT_TRUE(std::isnan(zero / zero));  // fast-math would let the compiler assume no NaNs
}

}  // namespace
