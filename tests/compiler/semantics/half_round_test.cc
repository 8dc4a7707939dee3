// round-to-bf16 and round-to-f16 (compiler/semantics/scalar.h RoundToBf16, RoundToF16) against
// independent references on a sweep of the f32 bit patterns (every 251st, both signs) plus every
// pattern within 4096 of each format's boundaries: each by choosing between the two neighbouring
// values of the format in exact binary64 arithmetic (IEEE round to nearest even, gradual
// underflow for binary16); the binary16 reference is itself checked against the compiler's
// _Float16 conversion where there is one.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "compiler/semantics/scalar.h"

namespace detrain::semantics {
namespace {

using internal::RoundToBf16;
using internal::RoundToF16;

uint32_t Bits(float x) { return FloatBits(x); }

// The bf16 nearest to x (ties to even), written as the choice between the truncation and the
// next bf16 up in magnitude.
float Bf16Reference(float x) {
  if (std::isnan(x)) return BitsFloat((Bits(x) | 0x00400000u) & 0xffff0000u);
  if (std::isinf(x)) return x;
  uint32_t b = Bits(x);
  float lo = BitsFloat(b & 0xffff0000u);
  float hi = BitsFloat((b & 0xffff0000u) + 0x10000u);
  if (std::isinf(hi)) {
    // Past the largest bf16 (0x1.fep127): the midpoint to the next value (2^128) is 0x1.ffp127,
    // and the tie goes to the even one, which is that next value: inf.
    return std::fabs(static_cast<double>(x)) >= 0x1.ffp127 ? hi : lo;
  }
  double dl = std::fabs(static_cast<double>(x) - lo);
  double dh = std::fabs(static_cast<double>(x) - hi);
  if (dl != dh) return dl < dh ? lo : hi;
  return ((b >> 16) & 1u) == 0 ? lo : hi;
}

// binary16 by choosing between the two neighbouring f16 values in exact binary64 arithmetic:
// their spacing is 2^(e-10) for |x| in [2^e, 2^(e+1)), e >= -14, and 2^-24 below (subnormals).
float F16Reference(float x) {
  if (std::isnan(x)) return BitsFloat((Bits(x) | 0x00400000u) & 0xffffe000u);
  const double a = std::fabs(static_cast<double>(x));
  // The largest f16 is 65504 and the next step would be 2^16: from the midpoint 65520 (a tie,
  // which goes to the even 2^16) up, the result is infinity.
  if (a >= 65520.0) return std::copysign(INFINITY, x);
  int e = 0;
  std::frexp(a, &e);  // a = m * 2^e, m in [0.5, 1): a lies in [2^(e-1), 2^e)
  const double ulp = std::ldexp(1.0, std::max(e - 1, -14) - 10);
  const double k = std::floor(a / ulp);  // exact: a / ulp is a power-of-two scaling
  const double lo = k * ulp, hi = (k + 1) * ulp;
  const double dl = a - lo, dh = hi - a;
  const double r = dl != dh ? (dl < dh ? lo : hi) : (std::fmod(k, 2.0) == 0 ? lo : hi);
  return static_cast<float>(std::copysign(r, static_cast<double>(x)));
}

std::vector<uint32_t> Patterns(std::vector<uint32_t> centres) {
  std::vector<uint32_t> out;
  for (uint64_t u = 0; u < (1ull << 31); u += 251) out.push_back(static_cast<uint32_t>(u));
  for (uint32_t c : centres) {
    for (int d = -4096; d <= 4096; ++d) out.push_back((c + static_cast<uint32_t>(d)) & 0x7fffffffu);
  }
  return out;
}

TEST(HalfRound, Bf16MatchesTheReference) {
  // 0, the smallest normal, 1, the largest bf16 and infinity.
  for (uint32_t u : Patterns({0x00000000u, 0x00800000u, 0x3f800000u, 0x7f7f0000u, 0x7f800000u})) {
    for (uint32_t s : {0u, 0x80000000u}) {
      float x = BitsFloat(u | s);
      ASSERT_EQ(Bits(RoundToBf16(x)), Bits(Bf16Reference(x))) << std::hex << (u | s);
    }
  }
}

TEST(HalfRound, F16MatchesTheReference) {
  // f16's smallest subnormal 2^-24 and its tie 2^-25, smallest normal 2^-14, 1, largest 65504,
  // the overflow tie 65520, infinity.
  for (uint32_t u : Patterns({0x33000000u, 0x33800000u, 0x38800000u, 0x3f800000u, 0x477fe000u,
                              0x477ff000u, 0x7f800000u})) {
    for (uint32_t s : {0u, 0x80000000u}) {
      float x = BitsFloat(u | s);
      ASSERT_EQ(Bits(RoundToF16(x)), Bits(F16Reference(x))) << std::hex << (u | s);
    }
  }
}

// The binary16 reference against the compiler's own _Float16 conversion, where the compiler has
// one (GCC 12; clang 14, which the sanitizer build uses, has none on x86-64).
TEST(HalfRound, F16ReferenceMatchesFloat16) {
#ifdef __FLT16_MAX__
  for (uint32_t u : Patterns({0x33000000u, 0x33800000u, 0x38800000u, 0x477fe000u, 0x477ff000u})) {
    for (uint32_t s : {0u, 0x80000000u}) {
      float x = BitsFloat(u | s);
      if (std::isnan(x)) continue;
      ASSERT_EQ(Bits(static_cast<float>(static_cast<_Float16>(x))), Bits(F16Reference(x)))
          << std::hex << (u | s);
    }
  }
#else
  GTEST_SKIP() << "this compiler has no _Float16; the plain (GCC) build runs this check";
#endif
}

TEST(HalfRound, EdgeValues) {
  EXPECT_EQ(Bits(RoundToBf16(1.0f + 0x1p-8f)), Bits(1.0f));  // tie: to even
  EXPECT_EQ(Bits(RoundToBf16(1.0f + 0x1p-8f + 0x1p-23f)), Bits(1.0f + 0x1p-7f));
  EXPECT_EQ(Bits(RoundToBf16(BitsFloat(0x7f7fffffu))), 0x7f800000u);  // FLT_MAX: inf
  EXPECT_EQ(Bits(RoundToBf16(BitsFloat(0x7f800001u))), 0x7fc00000u);  // signalling NaN: quieted
  EXPECT_EQ(Bits(RoundToF16(65504.0f)), Bits(65504.0f));
  EXPECT_EQ(Bits(RoundToF16(65519.996f)), Bits(65504.0f));
  EXPECT_EQ(Bits(RoundToF16(65520.0f)), 0x7f800000u);
  EXPECT_EQ(Bits(RoundToF16(-0x1p-25f)), 0x80000000u);  // the tie with 0: even, signed
  EXPECT_EQ(Bits(RoundToF16(0x1.000002p-25f)), Bits(0x1p-24f));
  EXPECT_EQ(Bits(RoundToF16(0x1.8p-24f)), Bits(0x1p-23f));  // 1.5 quanta: to even (2)
  EXPECT_EQ(Bits(RoundToF16(BitsFloat(0xff800001u))), 0xffc00000u);
  EXPECT_EQ(Bits(ApplyUnary(UnaryOp::kRoundToBf16, 3.14159265f)), 0x40490000u);
  EXPECT_EQ(Bits(ApplyUnary(UnaryOp::kRoundToF16, 3.14159265f)), Bits(3.140625f));
}

}  // namespace
}  // namespace detrain::semantics
