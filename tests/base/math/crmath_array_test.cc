// The array variants (src/base/math/crmath_array.h) give bit for bit the scalar results, on
// special values, subnormals, thresholds, hard cases that take the slow path, random bit
// patterns, and every length/alignment of a partial block.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <vector>

#include "base/math/crmath.h"

namespace detrain::crmath {
namespace {

uint32_t Bits(float x) {
  uint32_t u;
  std::memcpy(&u, &x, 4);
  return u;
}
float FromBits(uint32_t u) {
  float x;
  std::memcpy(&x, &u, 4);
  return x;
}

uint64_t Mix(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

// Specials and neighbourhoods of thresholds, then random bit patterns, then random values in
// [-12, 12] (where most fast paths are exercised).
std::vector<float> Inputs() {
  std::vector<float> v;
  const float centres[] = {0.0f, 1.0f, 0x1p-149f, 0x1p-126f, 0x1.fffffep127f, 88.72284f,
                           -103.97f, 9.01f, 17.33f, 3.92f, 128.0f, -150.0f, 0x1p-7f, 0.5f};
  for (float c : centres) {
    for (int d = -40; d <= 40; ++d) {
      v.push_back(FromBits(Bits(c) + d));
      v.push_back(FromBits(Bits(-c) + d));
    }
  }
  for (uint32_t u : {0x7f800000u, 0xff800000u, 0x7fc00000u, 0x7f800001u, 0xffffffffu}) {
    v.push_back(FromBits(u));
  }
  for (uint64_t i = 0; i < 200000; ++i) v.push_back(FromBits(static_cast<uint32_t>(Mix(i + 1))));
  for (uint64_t i = 0; i < 100000; ++i) {
    v.push_back(static_cast<float>((Mix(i + 7777) >> 11) * 0x1p-53 * 24.0 - 12.0));
  }
  return v;
}

struct UnaryCase {
  const char* name;
  float (*scalar)(float);
  void (*array)(const float*, float*, size_t);
};

const UnaryCase kCases[] = {
    {"exp", Exp, ExpArray},       {"expm1", Expm1, Expm1Array},
    {"exp2", Exp2, Exp2Array},    {"log", Log, LogArray},
    {"log1p", Log1p, Log1pArray}, {"log2", Log2, Log2Array},
    {"tanh", Tanh, TanhArray},    {"logistic", Logistic, LogisticArray},
    {"erf", Erf, ErfArray},       {"rsqrt", Rsqrt, RsqrtArray},
    {"erfinv", Erfinv, ErfinvArray}};

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

TEST(CrmathArrayTest, PowArrayEqualsScalar) {
  std::vector<float> x, y;
  const float special[] = {0.0f, -0.0f, 1.0f, -1.0f, 0.5f, 2.0f, 9.0f, 0x1p-75f,
                           std::numeric_limits<float>::infinity(), FromBits(0x7fc00000u)};
  for (float a : special) {
    for (float b : {0.0f, 0.5f, -0.5f, 2.0f, 3.0f, -3.0f, 1.5f, 0x1p30f, FromBits(0x7fc00000u)}) {
      x.push_back(a);
      y.push_back(b);
      x.push_back(-a);
      y.push_back(b);
    }
  }
  for (uint64_t i = 0; i < 200000; ++i) {
    x.push_back(FromBits(static_cast<uint32_t>(Mix(2 * i + 1))));
    y.push_back(FromBits(static_cast<uint32_t>(Mix(2 * i + 2))));
    x.push_back(static_cast<float>((Mix(3 * i) >> 11) * 0x1p-53 * 10.0));
    y.push_back(static_cast<float>((Mix(3 * i + 1) >> 11) * 0x1p-53 * 40.0 - 20.0));
  }
  std::vector<float> out(x.size());
  PowArray(x.data(), y.data(), out.data(), x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    ASSERT_EQ(Bits(Pow(x[i], y[i])), Bits(out[i])) << "pow(" << x[i] << ", " << y[i] << ")";
  }
}

}  // namespace
}  // namespace detrain::crmath
