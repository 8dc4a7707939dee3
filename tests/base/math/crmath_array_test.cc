// The array variants (src/base/math/crmath_array.h) give bit for bit the scalar results, on
// special values, subnormals, thresholds, hard cases that take the slow path, random bit
// patterns, and every length/alignment of a partial block; for the dispatched FArray and for
// each implementation (portable, AVX2, AVX-512) the CPU supports (the others are skipped).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <ostream>
#include <vector>

#include "base/math/crmath.h"

namespace detrain {
// Test names and failure messages show the implementation by name (found by ADL on detrain::Isa).
void PrintTo(Isa isa, std::ostream* os) { *os << IsaName(isa); }
}  // namespace detrain

namespace detrain::crmath {

namespace {

// The library's own bit casts (crmath_dd.h).
constexpr auto Bits = internal::FloatBits;
constexpr auto FromBits = internal::BitsFloat;

uint64_t Mix(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

// Uniform in [lo, hi), from the counter i.
float Uniform(uint64_t i, double lo, double hi) {
  return static_cast<float>(lo + (Mix(i) >> 11) * 0x1p-53 * (hi - lo));
}

// Specials and +-40 ulps around every threshold of the fast and slow paths (NaNs with payloads,
// quiet and signalling), then 2^20 random bit patterns, then random values in the typical
// ranges (where the fast paths and both erf branches are exercised).
std::vector<float> Inputs() {
  std::vector<float> v;
  const float centres[] = {
      0.0f,     1.0f,   0x1p-149f, 0x1p-126f, 0x1.fffffep127f, 88.72284f, 89.0f, -104.0f,
      -103.97f, -18.0f, 9.01f,     9.1f,      17.33f,          18.0f,     3.92f, 4.0f,
      0.25f,    0.375f, 128.0f,    -150.0f,   0x1p-7f,         0x1p-8f,   0.5f,  0x1p29f,
      1e-30f,   1e30f};
  for (float c : centres) {
    for (int d = -40; d <= 40; ++d) {
      v.push_back(FromBits(Bits(c) + d));
      v.push_back(FromBits(Bits(-c) + d));
    }
  }
  for (uint32_t u : {0x7f800000u, 0xff800000u, 0x7fc00000u, 0xffc00000u, 0x7f800001u, 0x7fc12345u,
                     0x7f812345u, 0xffc54321u, 0xff800001u, 0xffffffffu}) {
    v.push_back(FromBits(u));
  }
  for (uint64_t i = 0; i < (1u << 20); ++i) {
    v.push_back(FromBits(static_cast<uint32_t>(Mix(i + 1))));
  }
  for (uint64_t i = 0; i < 100000; ++i) {
    v.push_back(Uniform(i + 7777, -12.0, 12.0));
    v.push_back(Uniform(i + 1000003, -0.5, 0.5));
    v.push_back(Uniform(i + 2000003, 0.0, 100.0));
    v.push_back(Uniform(i + 3000003, -4.5, 4.5));
  }
  return v;
}

struct UnaryCase {
  const char* name;
  float (*scalar)(float);
  void (*array)(const float*, float*, size_t);
  void (*array_isa)(Isa, const float*, float*, size_t);  // nullptr: one implementation only
};

#define DETRAIN_CASE(name, F) \
  { name, F, F##Array, F##ArrayIsa }
const UnaryCase kCases[] = {DETRAIN_CASE("exp", Exp),
                            DETRAIN_CASE("expm1", Expm1),
                            DETRAIN_CASE("exp2", Exp2),
                            DETRAIN_CASE("log", Log),
                            DETRAIN_CASE("log1p", Log1p),
                            DETRAIN_CASE("log2", Log2),
                            DETRAIN_CASE("tanh", Tanh),
                            DETRAIN_CASE("logistic", Logistic),
                            DETRAIN_CASE("erf", Erf),
                            DETRAIN_CASE("rsqrt", Rsqrt),
                            {"erfinv", Erfinv, ErfinvArray, nullptr}};
#undef DETRAIN_CASE

TEST(CrmathArrayTest, UnaryArraysEqualScalar) {
  std::vector<float> in = Inputs();
  std::vector<float> out(in.size());
  for (const UnaryCase& c : kCases) {
    c.array(in.data(), out.data(), in.size());
    for (size_t i = 0; i < in.size(); ++i) {
      ASSERT_EQ(Bits(c.scalar(in[i])), Bits(out[i])) << c.name << "(" << in[i] << ")";
    }
  }
}

// ---- each implementation ----------------------------------------------------------------------

class CrmathArrayIsaTest : public testing::TestWithParam<Isa> {
 protected:
  void SetUp() override {
    if (!IsaSupported(GetParam())) {
      GTEST_SKIP() << "this CPU (or build) has no " << IsaName(GetParam()) << " support";
    }
  }
};

TEST_P(CrmathArrayIsaTest, EqualsScalar) {
  std::vector<float> in = Inputs();
  std::vector<float> want(in.size()), out(in.size());
  for (const UnaryCase& c : kCases) {
    if (c.array_isa == nullptr) continue;
    for (size_t i = 0; i < in.size(); ++i) want[i] = c.scalar(in[i]);
    c.array_isa(GetParam(), in.data(), out.data(), in.size());
    for (size_t i = 0; i < in.size(); ++i) {
      ASSERT_EQ(Bits(want[i]), Bits(out[i]))
          << c.name << "(" << in[i] << " = 0x" << std::hex << Bits(in[i]) << ")";
    }
  }
}

// Every length 0..70 (vector tails), unaligned starts, out of place (nothing written past n)
// and in place. Inputs are a mix that sends some lanes to the slow path.
TEST_P(CrmathArrayIsaTest, LengthsAlignmentsInPlace) {
  std::vector<float> in = Inputs();
  const float kCanary = -7.25f;
  for (const UnaryCase& c : kCases) {
    if (c.array_isa == nullptr) continue;
    for (size_t n = 0; n <= 70; ++n) {
      for (size_t offset = 0; offset < 4; ++offset) {
        size_t start = (n * 131 + offset * 977) % (in.size() - 80);
        const float* src = in.data() + start;
        std::vector<float> buf(n + 8, kCanary);
        c.array_isa(GetParam(), src, buf.data() + offset, n);
        std::vector<float> same(src, src + n + 4);
        c.array_isa(GetParam(), same.data() + offset, same.data() + offset, n);  // in place
        for (size_t i = 0; i < n + 8; ++i) {
          bool inside = i >= offset && i < offset + n;
          float want = inside ? c.scalar(src[i - offset]) : kCanary;
          ASSERT_EQ(Bits(want), Bits(buf[i]))
              << c.name << " n=" << n << " offset=" << offset << " i=" << i;
        }
        for (size_t i = 0; i < n; ++i) {
          ASSERT_EQ(Bits(c.scalar(src[offset + i])), Bits(same[offset + i]))
              << c.name << " in place, n=" << n << " offset=" << offset << " i=" << i;
        }
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(AllIsas, CrmathArrayIsaTest,
                         testing::Values(Isa::kScalar, Isa::kAvx2, Isa::kAvx512),
                         [](const testing::TestParamInfo<Isa>& p) {
                           return std::string(IsaName(p.param));
                         });

TEST(CrmathArrayTest, BestIsaIsSupported) { EXPECT_TRUE(IsaSupported(BestIsa())); }

TEST(CrmathArrayTest, PartialBlocksAndInPlace) {
  std::vector<float> in = Inputs();
  for (size_t n : {0, 1, 3, 63, 64, 65, 130}) {
    for (size_t offset : {0, 1, 5}) {
      std::vector<float> buf(in.begin() + offset, in.begin() + offset + n);
      ExpArray(buf.data(), buf.data(), n);  // in place
      for (size_t i = 0; i < n; ++i) ASSERT_EQ(Bits(Exp(in[offset + i])), Bits(buf[i]));
    }
  }
}

// Pow pairs: specials (both signs of x), random bit patterns, the ML range, and the regions the
// fast path is most likely to get wrong: x within 2^17 ulps of 1 with large |y|, results near
// overflow, underflow and in the subnormal range (t = y log2 x near 128, -126, -149), subnormal x.
struct PowInputs {
  std::vector<float> x, y;
  void Add(float a, float b) {
    x.push_back(a);
    y.push_back(b);
  }
};
PowInputs MakePowInputs() {
  PowInputs in;
  const float special[] = {0.0f,
                           1.0f,
                           0.5f,
                           2.0f,
                           9.0f,
                           0x1p-75f,
                           0x1p-149f,
                           0x1.fffffep127f,
                           std::numeric_limits<float>::infinity(),
                           FromBits(0x7fc00000u)};
  const float exps[] = {0.0f,
                        0.5f,
                        -0.5f,
                        2.0f,
                        3.0f,
                        -3.0f,
                        1.5f,
                        0x1p30f,
                        -0x1p-149f,
                        std::numeric_limits<float>::infinity(),
                        FromBits(0x7fc00000u)};
  for (float a : special) {
    for (float b : exps) {
      in.Add(a, b);
      in.Add(-a, b);
      in.Add(a, -b);
    }
  }
  for (uint64_t i = 0; i < 200000; ++i) {
    in.Add(FromBits(static_cast<uint32_t>(Mix(2 * i + 1))),
           FromBits(static_cast<uint32_t>(Mix(2 * i + 2))));
    in.Add(Uniform(3 * i, 0.0, 10.0), Uniform(3 * i + 1, -20.0, 20.0));
    float near1 = FromBits(0x3f800000u + static_cast<uint32_t>(Mix(5 * i) % 262144) - 131072u);
    double t = Uniform(5 * i + 1, -160.0, 140.0);
    in.Add(near1, static_cast<float>(t / std::log2(static_cast<double>(near1))));
    float xr = Uniform(5 * i + 2, 0.01, 100.0);
    const double edges[] = {128.0, -126.0, -149.0, -150.0};
    double te = edges[i % 4] + Uniform(5 * i + 3, -0.01, 0.01);
    in.Add(xr, static_cast<float>(te / std::log2(static_cast<double>(xr))));
    in.Add(FromBits(static_cast<uint32_t>(Mix(7 * i) % 0x00800000u)),
           Uniform(7 * i + 1, -2.0, 2.0));
  }
  return in;
}

TEST(CrmathArrayTest, PowArrayEqualsScalar) {
  PowInputs in = MakePowInputs();
  std::vector<float> out(in.x.size());
  PowArray(in.x.data(), in.y.data(), out.data(), in.x.size());
  for (size_t i = 0; i < in.x.size(); ++i) {
    ASSERT_EQ(Bits(Pow(in.x[i], in.y[i])), Bits(out[i]))
        << "pow(" << in.x[i] << ", " << in.y[i] << ")";
  }
}

TEST_P(CrmathArrayIsaTest, PowEqualsScalar) {
  PowInputs in = MakePowInputs();
  size_t n = in.x.size();
  std::vector<float> out(n);
  PowArrayIsa(GetParam(), in.x.data(), in.y.data(), out.data(), n);
  for (size_t i = 0; i < n; ++i) {
    ASSERT_EQ(Bits(Pow(in.x[i], in.y[i])), Bits(out[i]))
        << "pow(0x" << std::hex << Bits(in.x[i]) << ", 0x" << Bits(in.y[i]) << ")";
  }
}

// Lengths 0..70 at unaligned starts (nothing written past n), and out aliasing x or y.
TEST_P(CrmathArrayIsaTest, PowLengthsAndAliasing) {
  PowInputs in = MakePowInputs();
  const float kCanary = -7.25f;
  for (size_t n = 0; n <= 70; ++n) {
    for (size_t offset = 0; offset < 4; ++offset) {
      size_t start = (n * 131 + offset * 977) % (in.x.size() - 80);
      const float* x = in.x.data() + start;
      const float* y = in.y.data() + start;
      std::vector<float> buf(n + 8, kCanary);
      PowArrayIsa(GetParam(), x, y, buf.data() + offset, n);
      std::vector<float> xs(x, x + n), ys(y, y + n);
      PowArrayIsa(GetParam(), xs.data(), y, xs.data(), n);  // out = x
      PowArrayIsa(GetParam(), x, ys.data(), ys.data(), n);  // out = y
      for (size_t i = 0; i < n + 8; ++i) {
        bool inside = i >= offset && i < offset + n;
        float want = inside ? Pow(x[i - offset], y[i - offset]) : kCanary;
        ASSERT_EQ(Bits(want), Bits(buf[i])) << "n=" << n << " offset=" << offset << " i=" << i;
      }
      for (size_t i = 0; i < n; ++i) {
        ASSERT_EQ(Bits(Pow(x[i], y[i])), Bits(xs[i])) << "out = x, n=" << n << " i=" << i;
        ASSERT_EQ(Bits(Pow(x[i], y[i])), Bits(ys[i])) << "out = y, n=" << n << " i=" << i;
      }
    }
  }
}

}  // namespace
}  // namespace detrain::crmath
