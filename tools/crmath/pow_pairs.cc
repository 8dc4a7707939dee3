// The weighted pow pair generator (pow_pairs.h). Uses libm only to aim the generated pairs at a
// region; results are checked against the reference, never taken from here.
#include "tools/crmath/pow_pairs.h"

#include <cmath>

#include "tools/crmath/reference.h"

namespace detrain::crmath_verify {

const char* const kPowCategoryNames[kPowCategories] = {"uniform bits",
                                                       "x near 1",
                                                       "integer y",
                                                       "exact cases (perfect powers)",
                                                       "near overflow/underflow/subnormal",
                                                       "x power of two",
                                                       "half-integer y",
                                                       "ordinary range"};

uint64_t Mix64(uint64_t i) {
  uint64_t z = i + 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

namespace {

class Bits64 {
 public:
  explicit Bits64(uint64_t seed) : state_(seed) {}
  uint64_t Next() { return Mix64(state_++ * 0x632be59bd9b4e019ull); }
  uint32_t Below(uint32_t n) { return static_cast<uint32_t>(Next() % n); }
  bool Coin() { return (Next() & 1) != 0; }
  double Uniform(double lo, double hi) { return lo + (hi - lo) * ((Next() >> 11) * 0x1p-53); }

 private:
  uint64_t state_;
};

// A positive float with random mantissa and the given unbiased exponent (clamped to normals).
float WithExponent(Bits64& r, int e) {
  e = e < -126 ? -126 : (e > 127 ? 127 : e);
  uint32_t bits = (static_cast<uint32_t>(e + 127) << 23) | (r.Below(1u << 23));
  return FromBits(bits);
}

float RandomFinite(Bits64& r) {
  float x;
  do {
    x = FromBits(static_cast<uint32_t>(r.Next()));
  } while (!std::isfinite(x));
  return x;
}

float Step(float x, int ulps) { return FromBits(Bits(x) + static_cast<uint32_t>(ulps)); }

}  // namespace

PowInput PowPair(uint64_t i) {
  Bits64 r(Mix64(i));
  float x = 1, y = 1;
  switch (i % kPowCategories) {
    case 0:
      x = FromBits(static_cast<uint32_t>(r.Next()));
      y = FromBits(static_cast<uint32_t>(r.Next()));
      break;
    case 1: {
      int k = static_cast<int>(r.Below(1u << r.Below(21)));
      x = r.Coin() ? Step(1.0f, k + 1) : FromBits(0x3f800000u - static_cast<uint32_t>(k) - 1);
      y = static_cast<float>(std::ldexp(r.Uniform(1, 2), static_cast<int>(r.Below(45)) - 12));
      y = r.Coin() ? -y : y;
      break;
    }
    case 2: {
      int n = r.Coin() ? static_cast<int>(r.Below(64)) + 2
                       : static_cast<int>(r.Below(1u << r.Below(16))) + 2;
      y = static_cast<float>(r.Coin() ? -n : n);
      x = WithExponent(r, static_cast<int>(std::lround(r.Uniform(-155, 130) / std::fabs(y))));
      x = r.Coin() ? -x : x;
      break;
    }
    case 3: {
      int k = static_cast<int>(r.Below(4));             // y = n / 2^k
      uint32_t s = 2 * r.Below(1u << r.Below(12)) + 1;  // odd base
      double m = std::pow(static_cast<double>(s), 1 << k);
      if (m >= 0x1p24) m = 3;
      int n = static_cast<int>(r.Below(24)) + 1;
      int ek = static_cast<int>(r.Below(40)) - 20;
      x = static_cast<float>(std::ldexp(m, ek * (1 << k)));
      y = static_cast<float>(std::ldexp(r.Coin() ? n : -n, -k));
      if (r.Below(4) == 0) x = Step(x, r.Coin() ? 1 : -1);
      break;
    }
    case 4: {
      x = WithExponent(r, static_cast<int>(r.Below(254)) - 126);
      if (x == 1.0f) x = 2.0f;
      double t = r.Coin() ? r.Uniform(126, 129) : r.Uniform(-152, -124);
      y = static_cast<float>(t / std::log2(static_cast<double>(x)));
      y = Step(y, static_cast<int>(r.Below(9)) - 4);
      break;
    }
    case 5: {
      int e = static_cast<int>(r.Below(277)) - 149;
      x = static_cast<float>(std::ldexp(1.0, e));
      y = static_cast<float>(std::ldexp(static_cast<double>(static_cast<int>(r.Below(2048)) - 1024),
                                        -static_cast<int>(r.Below(8))));
      if (r.Below(4) == 0) y = Step(y, 1);
      break;
    }
    case 6: {
      int n = static_cast<int>(r.Below(1u << r.Below(12)));
      y = (r.Coin() ? 1.0f : -1.0f) * (static_cast<float>(n) + 0.5f);
      x = WithExponent(r, static_cast<int>(std::lround(r.Uniform(-150, 128) / std::fabs(y))));
      break;
    }
    default: {
      x = RandomFinite(r);
      x = x < 0 ? -x : x;
      if (x == 0.0f || x == 1.0f) x = 3.0f;
      double l = std::log2(static_cast<double>(x));
      double t = r.Uniform(-150, 128);
      y = static_cast<float>(t / l);
      if (!std::isfinite(y)) y = 0.5f;
      break;
    }
  }
  return {x, y};
}

}  // namespace detrain::crmath_verify
