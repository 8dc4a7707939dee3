// Unit tests of src/base/math/crmath.h: IEEE/C special values, exact and tie cases, C99 Annex F
// pow cases, erfinv properties, and agreement with glibc's binary64 functions rounded once to
// float wherever that rounding is unambiguous. The full proof of correct rounding is the
// verifier (tools/crmath; its sampled mode is the CTest test crmath_verify_sampled).
#include "base/math/crmath.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

namespace detrain::crmath {
namespace {

// The library's own bit casts (crmath_dd.h).
constexpr auto Bits = internal::FloatBits;
constexpr auto FromBits = internal::BitsFloat;

constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr float kNan = std::numeric_limits<float>::quiet_NaN();
constexpr float kMinSub = 0x1p-149f;

#define EXPECT_BITS(expected, actual) \
  EXPECT_EQ(Bits(expected), Bits(actual)) << #actual << " = " << (actual)

TEST(CrmathTest, NanInNanOut) {
  float snan = FromBits(0x7f800001u);
  for (float in : {kNan, -kNan, snan}) {
    for (float (*f)(float) :
         {Exp, Expm1, Exp2, Log, Log1p, Log2, Tanh, Logistic, Erf, Rsqrt, Erfinv, Sin, Cos}) {
      EXPECT_TRUE(std::isnan(f(in)));
    }
    EXPECT_TRUE(std::isnan(Pow(in, 2.0f)));
    EXPECT_TRUE(std::isnan(Pow(2.0f, in)));
  }
}

TEST(CrmathTest, ZerosAndInfinities) {
  EXPECT_BITS(1.0f, Exp(0.0f));
  EXPECT_BITS(1.0f, Exp(-0.0f));
  EXPECT_BITS(kInf, Exp(kInf));
  EXPECT_BITS(0.0f, Exp(-kInf));
  EXPECT_BITS(-0.0f, Expm1(-0.0f));
  EXPECT_BITS(0.0f, Expm1(0.0f));
  EXPECT_BITS(-1.0f, Expm1(-kInf));
  EXPECT_BITS(kInf, Expm1(kInf));
  EXPECT_BITS(0.0f, Exp2(-kInf));
  EXPECT_BITS(kInf, Exp2(kInf));
  for (float (*f)(float) : {Log, Log2}) {
    EXPECT_BITS(-kInf, f(0.0f));
    EXPECT_BITS(-kInf, f(-0.0f));
    EXPECT_BITS(0.0f, f(1.0f));
    EXPECT_BITS(kInf, f(kInf));
    EXPECT_TRUE(std::isnan(f(-1.0f)));
    EXPECT_TRUE(std::isnan(f(-kInf)));
    EXPECT_TRUE(std::isnan(f(-kMinSub)));
  }
  EXPECT_BITS(-0.0f, Log1p(-0.0f));
  EXPECT_BITS(-kInf, Log1p(-1.0f));
  EXPECT_TRUE(std::isnan(Log1p(-1.5f)));
  EXPECT_BITS(kInf, Log1p(kInf));
  EXPECT_BITS(-0.0f, Tanh(-0.0f));
  EXPECT_BITS(1.0f, Tanh(kInf));
  EXPECT_BITS(-1.0f, Tanh(-kInf));
  EXPECT_BITS(0.5f, Logistic(0.0f));
  EXPECT_BITS(1.0f, Logistic(kInf));
  EXPECT_BITS(0.0f, Logistic(-kInf));
  EXPECT_BITS(-0.0f, Erf(-0.0f));
  EXPECT_BITS(1.0f, Erf(kInf));
  EXPECT_BITS(-1.0f, Erf(-kInf));
  EXPECT_BITS(kInf, Rsqrt(0.0f));
  EXPECT_BITS(-kInf, Rsqrt(-0.0f));
  EXPECT_BITS(0.0f, Rsqrt(kInf));
  EXPECT_TRUE(std::isnan(Rsqrt(-1.0f)));
  EXPECT_TRUE(std::isnan(Rsqrt(-kInf)));
}

TEST(CrmathTest, SubnormalsAndThresholds) {
  // Tiny arguments: f(x) = x rounded, for functions with f(x) ~ x.
  for (float x : {kMinSub, -kMinSub, 0x1p-130f, -0x1.8p-140f, 0x1p-30f}) {
    EXPECT_BITS(x, Expm1(x));
    EXPECT_BITS(x, Log1p(x));
    EXPECT_BITS(x, Tanh(x));
  }
  EXPECT_BITS(FromBits(0x00000001u), Exp2(-149.0f));
  EXPECT_BITS(0.0f, Exp2(-150.0f));  // 2^-150 is the tie between 0 and 2^-149: even is 0
  EXPECT_BITS(FromBits(0x00000001u), Exp2(std::nextafter(-150.0f, 0.0f)));
  EXPECT_BITS(0x1p127f, Exp2(127.0f));
  EXPECT_BITS(kInf, Exp2(128.0f));
  EXPECT_BITS(kInf, Exp(88.8f));
  EXPECT_TRUE(std::isfinite(Exp(88.72283f)));
  EXPECT_BITS(kInf, Exp(88.7229f));
  EXPECT_BITS(0.0f, Exp(-104.0f));
  EXPECT_BITS(FromBits(0x00000001u), Exp(-103.9f));
  EXPECT_BITS(-1.0f, Expm1(-20.0f));
  EXPECT_BITS(1.0f, Logistic(20.0f));
  EXPECT_BITS(-149.0f, Log2(kMinSub));
  EXPECT_BITS(0x1p74f, Rsqrt(0x1p-148f));
}

// Saturated inputs (tanh and erf at +-1, logistic at 1) are decided by the fast path itself, with
// the value the slow path gives: activations that large are common, and a vector with one such
// lane would otherwise retry it alone.
TEST(CrmathTest, SaturationIsDecidedByTheFastPath) {
  for (float x : {9.1f, 9.2f, 20.0f, 1e30f, kInf}) {
    for (float s : {x, -x}) {
      float out = 0.0f;
      EXPECT_TRUE(internal::TanhFast(s, &out)) << s;
      EXPECT_BITS(s > 0 ? 1.0f : -1.0f, out);
      EXPECT_BITS(internal::TanhSlow(s), out);
    }
  }
  for (float x : {4.0f, 4.5f, 1e30f, kInf}) {
    for (float s : {x, -x}) {
      float out = 0.0f;
      EXPECT_TRUE(internal::ErfFast(s, &out)) << s;
      EXPECT_BITS(internal::ErfSlow(s), out);
    }
  }
  for (float x : {std::nextafter(18.0f, kInf), 20.0f, 1e30f, kInf}) {
    float out = 0.0f;
    EXPECT_TRUE(internal::LogisticFast(x, &out)) << x;
    EXPECT_BITS(1.0f, out);
    EXPECT_BITS(internal::LogisticSlow(x), out);
  }
  // NaN and zero still take the slow path (a NaN keeps its payload; a zero fails the test's
  // normal range).
  float out = 0.0f;
  EXPECT_FALSE(internal::TanhFast(kNan, &out));
  EXPECT_FALSE(internal::TanhFast(0.0f, &out));
  EXPECT_FALSE(internal::LogisticFast(kNan, &out));
  EXPECT_FALSE(internal::ErfFast(-kNan, &out));
}

TEST(CrmathTest, ExactResults) {
  for (int k = -149; k <= 127; ++k) {
    float p = std::ldexp(1.0f, k);
    EXPECT_BITS(p, Exp2(static_cast<float>(k)));
    EXPECT_BITS(static_cast<float>(k), Log2(p));
    if (k % 2 == 0) {
      EXPECT_BITS(std::ldexp(1.0f, -k / 2), Rsqrt(p));
    }
  }
}

TEST(CrmathTest, PowAnnexF) {
  EXPECT_BITS(1.0f, Pow(kNan, 0.0f));
  EXPECT_BITS(1.0f, Pow(kNan, -0.0f));
  EXPECT_BITS(1.0f, Pow(1.0f, kNan));
  EXPECT_BITS(1.0f, Pow(-1.0f, kInf));
  EXPECT_BITS(1.0f, Pow(-1.0f, -kInf));
  EXPECT_BITS(-kInf, Pow(-0.0f, -3.0f));
  EXPECT_BITS(kInf, Pow(-0.0f, -2.0f));
  EXPECT_BITS(kInf, Pow(0.0f, -0.5f));
  EXPECT_BITS(-0.0f, Pow(-0.0f, 3.0f));
  EXPECT_BITS(0.0f, Pow(-0.0f, 2.0f));
  EXPECT_BITS(0.0f, Pow(0.5f, kInf));
  EXPECT_BITS(kInf, Pow(0.5f, -kInf));
  EXPECT_BITS(kInf, Pow(2.0f, kInf));
  EXPECT_BITS(0.0f, Pow(2.0f, -kInf));
  EXPECT_BITS(-0.0f, Pow(-kInf, -3.0f));
  EXPECT_BITS(0.0f, Pow(-kInf, -2.0f));
  EXPECT_BITS(-kInf, Pow(-kInf, 3.0f));
  EXPECT_BITS(kInf, Pow(-kInf, 2.5f));
  EXPECT_BITS(0.0f, Pow(kInf, -1.0f));
  EXPECT_BITS(kInf, Pow(kInf, 0.5f));
  EXPECT_TRUE(std::isnan(Pow(-8.0f, 1.0f / 3.0f)));
  EXPECT_BITS(-8.0f, Pow(-2.0f, 3.0f));
  EXPECT_BITS(16.0f, Pow(-2.0f, 4.0f));
  EXPECT_BITS(kInf, Pow(-2.0f, 0x1p30f));  // huge even integer
}

TEST(CrmathTest, PowExactAndTies) {
  EXPECT_BITS(3.0f, Pow(9.0f, 0.5f));
  EXPECT_BITS(14348907.0f, Pow(3.0f, 15.0f));
  EXPECT_BITS(0.125f, Pow(0.25f, 1.5f));
  EXPECT_BITS(2.0f, Pow(256.0f, 0.125f));
  EXPECT_BITS(27.0f, Pow(6561.0f, 0.375f));  // 6561 = 3^8
  // (1 + 2^-12)^2 = 1 + 2^-11 + 2^-24, the tie between 1 + 2^-11 and its successor: even wins.
  EXPECT_BITS(1.0f + 0x1p-11f, Pow(1.0f + 0x1p-12f, 2.0f));
  // (1 + 3 * 2^-12)^2 = 1 + 3 * 2^-11 + 4.5 * 2^-23: a tie again, the even neighbour is +4 ulp.
  EXPECT_BITS(1.0f + 3 * 0x1p-11f + 0x1p-21f, Pow(1.0f + 3 * 0x1p-12f, 2.0f));
  // (1 + 2^-12 + 2^-23)^2 = 1 + 4098.5005 * 2^-23: just above a tie, rounds up.
  EXPECT_BITS(1.0f + 0x1p-11f + 3 * 0x1p-23f, Pow(1.0f + 0x1p-12f + 0x1p-23f, 2.0f));
  EXPECT_BITS(0.0f, Pow(0x1p-75f, 2.0f));                     // 2^-150: tie, even is 0
  EXPECT_BITS(FromBits(0x00000001u), Pow(0x1.8p-75f, 2.0f));  // 1.125 * 2^-149 -> 2^-149
  EXPECT_BITS(kInf, Pow(0x1p64f, 2.0f));
}

TEST(CrmathTest, ErfinvProperties) {
  EXPECT_BITS(0.0f, Erfinv(0.0f));
  EXPECT_BITS(-0.0f, Erfinv(-0.0f));
  EXPECT_BITS(kInf, Erfinv(1.0f));
  EXPECT_BITS(-kInf, Erfinv(-1.0f));
  EXPECT_TRUE(std::isnan(Erfinv(1.5f)));
  for (float x = -0.999f; x < 1.0f; x += 0.0137f) {
    EXPECT_BITS(-Erfinv(x), Erfinv(-x));
    // Giles' approximation is accurate to a few float ulps: erf(erfinv(x)) returns ~x.
    EXPECT_NEAR(Erf(Erfinv(x)), x, 4e-7f * (1.0f + std::fabs(x) * 8.0f)) << x;
  }
}

// Where glibc's binary64 result is far (2^-40 relative) from a float rounding boundary, one
// rounding to float gives the correctly rounded value, which our functions must match.
TEST(CrmathTest, AgreesWithBinary64WhereUnambiguous) {
  struct Case {
    float (*ours)(float);
    double (*ref)(double);
  };
  const Case cases[] = {{Exp, std::exp},   {Expm1, std::expm1}, {Exp2, std::exp2},
                        {Log, std::log},   {Log1p, std::log1p}, {Log2, std::log2},
                        {Tanh, std::tanh}, {Erf, std::erf},     {Sin, std::sin},
                        {Cos, std::cos}};
  int checked = 0;
  for (const Case& c : cases) {
    for (uint32_t u = 0; u < 0xffffffffu - 40503u; u += 40503u) {
      float x = FromBits(u);
      double r = c.ref(x);
      float a = static_cast<float>(r * (1 - 0x1p-40)), b = static_cast<float>(r * (1 + 0x1p-40));
      if (std::isnan(r) || Bits(a) != Bits(b)) continue;
      ASSERT_EQ(Bits(a), Bits(c.ours(x))) << "x = " << x;
      ++checked;
    }
  }
  EXPECT_GT(checked, 500000);
}

// pow's fast kernel meets its stated error bound kErrPow (docs/math.md §2), measured against
// powl (64-bit long double) over results in the normal range, weighted towards the worst case:
// x near 1 with |y log2 x| up to 128, where the error of log2 x is multiplied by |t|. The bound
// is what makes the fast rounding test correct; a kernel change that breaks it fails here
// before the verifier has to find a misrounded input.
TEST(CrmathTest, PowKernelWithinErrorBound) {
  uint64_t s = 12345;
  auto next = [&s] {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    return s >> 11;
  };
  double worst = 0.0;
  for (int i = 0; i < 400000; ++i) {
    uint32_t xb = (i & 1) ? 0x00800000u + static_cast<uint32_t>(next() % 0x7f000000u)
                          : 0x3f800000u + static_cast<uint32_t>(next() % 400000) - 200000u;
    float x = FromBits(xb);
    if (x == 1.0f) continue;
    double t = -126.0 + 254.0 * static_cast<double>(next() % 1000000) / 1e6;
    float y = static_cast<float>(t / std::log2(static_cast<double>(x)));
    internal::PowKernel k = internal::PowApprox(x, y);
    ASSERT_TRUE(k.x_ok) << x;
    long double ref = powl(static_cast<long double>(x), static_cast<long double>(y));
    if (!(ref > 0x1p-126L && ref < 0x1p127L)) continue;
    worst = std::max(worst, static_cast<double>(fabsl((k.y - ref) / ref)));
  }
  EXPECT_LT(worst, internal::kErrPow);
  EXPECT_GT(worst, internal::kErrPow / 8) << "the sample no longer reaches the worst case";
}

}  // namespace
}  // namespace detrain::crmath
