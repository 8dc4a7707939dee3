// Unit tests of crmath::Sin and crmath::Cos (src/base/math/crmath_trig.h): special values, known
// correctly rounded results (computed with mpmath at 400 bits), symmetry, the fast path against
// the dd path, and the fast kernel's error bound. The proof of correct rounding over all 2^32
// inputs is `crmath_verify --exhaustive --functions=sin,cos` (docs/math.md §3.4).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>

#include "base/math/crmath.h"

namespace detrain::crmath {
namespace {

constexpr auto Bits = internal::FloatBits;
constexpr auto FromBits = internal::BitsFloat;
constexpr float kInf = std::numeric_limits<float>::infinity();

uint64_t Next(uint64_t* s) {
  *s = *s * 6364136223846793005ull + 1442695040888963407ull;
  return *s >> 11;
}

TEST(CrmathTrigTest, SpecialValues) {
  EXPECT_EQ(Bits(Sin(0.0f)), 0x00000000u);
  EXPECT_EQ(Bits(Sin(-0.0f)), 0x80000000u);
  EXPECT_EQ(Bits(Cos(0.0f)), Bits(1.0f));
  EXPECT_EQ(Bits(Cos(-0.0f)), Bits(1.0f));
  // Invalid: crmath's own NaN (docs/ir.md, the NaN rule); a NaN operand comes back quieted.
  for (float x : {kInf, -kInf}) {
    EXPECT_EQ(Bits(Sin(x)), 0x7fc00000u);
    EXPECT_EQ(Bits(Cos(x)), 0x7fc00000u);
  }
  EXPECT_EQ(Bits(Sin(FromBits(0xff800123u))), 0xffc00123u);
  EXPECT_EQ(Bits(Cos(FromBits(0x7fa00000u))), 0x7fe00000u);
  // Tiny inputs: sin x rounds to x (subnormals included), cos x to 1.
  for (uint32_t b : {0x00000001u, 0x00400000u, 0x00800000u, 0x39000000u, 0x397fffffu}) {
    EXPECT_EQ(Bits(Sin(FromBits(b))), b);
    EXPECT_EQ(Bits(Sin(FromBits(b | 0x80000000u))), b | 0x80000000u);
    EXPECT_EQ(Bits(Cos(FromBits(b))), Bits(1.0f));
  }
}

// Correctly rounded values, from mpmath (400 bits, rounded to 24 bits ties-to-even).
TEST(CrmathTrigTest, KnownResults) {
  struct Case {
    uint32_t x, sin, cos;
  };
  const Case cases[] = {
      {0x3f800000u, 0x3f576aa4u, 0x3f0a5140u},  // 1
      {0x3f000000u, 0x3ef57744u, 0x3f60a940u},  // 0.5
      {0x40490fdbu, 0xb3bbbd2eu, 0xbf800000u},  // float(pi): sin < 0, as float(pi) > pi
      {0xc2c80000u, 0x3f01a12eu, 0x3f5cc0eeu},  // -100
      {0x48800000u, 0xbdac404eu, 0xbf7f17cau},  // 2^18
      {0x49742400u, 0xbeb33259u, 0x3f6fcefdu},  // 1e6, the last Cody-Waite binade
      {0x49800000u, 0x3ea93666u, 0x3f719d6du},  // 2^20, the Payne-Hanek threshold
      {0x7149f2cau, 0xbf4a89b0u, 0xbf1c9222u},  // 1e30
      {0x7f000000u, 0x3f1f9631u, 0x3f482b8fu},  // 2^127
      {0x7f7fffffu, 0xbf0599b3u, 0x3f5a5f96u},  // FLT_MAX
  };
  for (const Case& c : cases) {
    EXPECT_EQ(Bits(Sin(FromBits(c.x))), c.sin) << std::hex << c.x;
    EXPECT_EQ(Bits(Cos(FromBits(c.x))), c.cos) << std::hex << c.x;
  }
}

TEST(CrmathTrigTest, OddAndEven) {
  uint64_t s = 7;
  for (int i = 0; i < 200000; ++i) {
    float x = FromBits(static_cast<uint32_t>(Next(&s)) & 0x7f7fffffu);
    EXPECT_EQ(Bits(Sin(-x)), Bits(Sin(x)) ^ 0x80000000u) << x;
    EXPECT_EQ(Bits(Cos(-x)), Bits(Cos(x))) << x;
  }
}

// The fast path returns only what the dd path computes: compared on random inputs of every
// magnitude and on inputs near multiples of pi/2 (where r cancels most).
TEST(CrmathTrigTest, FastPathAgreesWithTheDdPath) {
  uint64_t s = 11;
  int fast = 0;
  for (int i = 0; i < 300000; ++i) {
    float x;
    if (i % 2 == 0) {
      x = FromBits(static_cast<uint32_t>(Next(&s)) & 0xff7fffffu);
    } else {
      double k = static_cast<double>(Next(&s) % 200000);
      x = static_cast<float>(k * 1.5707963267948966);
    }
    float f;
    if (internal::SinFast(x, &f)) {
      ++fast;
      ASSERT_EQ(Bits(f), Bits(internal::SinSlow(x))) << std::hexfloat << x;
    }
    if (internal::CosFast(x, &f)) ASSERT_EQ(Bits(f), Bits(internal::CosSlow(x))) << x;
  }
  EXPECT_GT(fast, 250000);  // the fast path decides nearly every input
}

// The fast kernel meets its error bound kErrTrig with a margin (docs/math.md §3.4), measured
// against glibc's long double sinl/cosl (64-bit significand) for |x| < 2^24; the rounding test
// relies on the bound.
TEST(CrmathTrigTest, FastKernelWithinErrorBound) {
  uint64_t s = 3;
  double worst = 0.0;
  for (int i = 0; i < 400000; ++i) {
    float x = FromBits(0x3c000000u + static_cast<uint32_t>(Next(&s) % (0x4b800000u - 0x3c000000u)));
    for (int is_cos = 0; is_cos < 2; ++is_cos) {
      internal::Approx a = internal::TrigApprox(x, is_cos);
      if (!a.ok) continue;
      long double ref =
          is_cos ? cosl(static_cast<long double>(x)) : sinl(static_cast<long double>(x));
      worst = std::max(worst, static_cast<double>(fabsl((a.y - ref) / ref)));
    }
  }
  EXPECT_LT(worst, internal::kErrTrig / 8);
}

}  // namespace
}  // namespace detrain::crmath
