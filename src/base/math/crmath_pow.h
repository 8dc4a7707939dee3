// pow(x, y) for float32, correctly rounded, with the special cases of C99 Annex F (F.9.4.4).
// Fast path: ln|x| and e^t in binary64 with an error bound that grows with |t| = |y ln x|.
// Slow path: exact and midpoint results are found algebraically (PowExact), every other result
// is irrational or needs > 25 bits, and is rounded from a dd evaluation (error < 2^-90).
// Pure functions: thread-safe, bit-identical on every IEEE-754 platform.
#ifndef DETRAIN_BASE_MATH_CRMATH_POW_H_
#define DETRAIN_BASE_MATH_CRMATH_POW_H_

#include "base/math/crmath_scalar.h"

namespace detrain::crmath::internal {

// For x > 0 finite, y finite and nonzero, x != 1: t = y log2 x (relative error < 2^-42.3),
// then 2^t (relative error < 2^-38.5): relative error < 2^-37 + 2^-41 |t| (t ln 2 of it from t).
DETRAIN_HD_FAST Approx PowApprox(float x, float y) {
  uint32_t xb = FloatBits(x), yb = FloatBits(y);
  bool ok = (xb - 1u < 0x7f7fffffu) & ((yb << 1) - 1u < 0xfeffffffu) & (xb != 0x3f800000u);
  double xd = ok ? x : 2.0;
  double t = static_cast<double>(y) * Log2FastD(xd);
  t = t > 140.0 ? 140.0 : (t < -160.0 ? -160.0 : t);  // beyond: certain overflow / underflow
  return {Exp2FastD(t), 0x1p-37 + 0x1p-41 * Abs(t), ok};
}
DETRAIN_HD_FAST bool PowFast(float x, float y, float* out) {
  Approx a = PowApprox(x, y);
  return RoundOrFlagRel(a.y, a.rel, out) & a.ok;
}
DETRAIN_HD inline bool PowRetry(float x, float y, float* out) {
  Approx a = PowApprox(x, y);
  return a.ok && RoundOrFlag(a.y, a.y * a.rel, out);
}

// Splits a positive finite nonzero float into odd * 2^exp.
DETRAIN_HD inline void OddSplit(float x, uint32_t* odd, int* exp) {
  uint32_t b = FloatBits(x);
  uint32_t m = b & 0x7fffffu;
  int e = static_cast<int>(b >> 23);
  if (e == 0) {
    e = 1;
  } else {
    m |= 0x800000u;
  }
  e -= 150;
  while ((m & 1u) == 0) {
    m >>= 1;
    ++e;
  }
  *odd = m;
  *exp = e;
}

// The float nearest to r * 2^e for an integer 0 < r < 2^25 (exact double, one conversion).
DETRAIN_HD inline float ScaleToFloat(uint64_t r, int e) {
  if (e > 128) return InfF();
  if (e < -180) return 0.0f;
  return static_cast<float>(static_cast<double>(r) * Pow2(e));
}

// When x^y (x > 0 finite, y finite nonzero) is a dyadic rational with at most 25 significant
// bits (so possibly a float or a midpoint between floats), sets *out and returns true. With
// x = m 2^E (m odd) and y = n / 2^k (n odd, k >= 0, or y an integer): x^y is such a number only
// if m = s^(2^k) for an integer s (so k <= 3 unless m = 1), y > 0 or m = 1, s^n < 2^25, and
// E y is an integer.
DETRAIN_HD inline bool PowExact(float x, float y, float* out) {
  uint32_t m;
  int e;
  OddSplit(x, &m, &e);
  double ey = static_cast<double>(e) * y;  // exact: 9 bits times 24 bits
  if (ey != RoundInt(ey) || Abs(ey) > 4096.0) return false;
  if (m == 1) {
    int t = static_cast<int>(ey);
    *out = t >= 128 ? InfF() : (t <= -150 ? 0.0f : static_cast<float>(Pow2(t)));
    return true;
  }
  if (y < 0.0f) return false;
  uint32_t n;
  int ye;
  OddSplit(y, &n, &ye);
  uint64_t s = m;
  for (int k = ye; k < 0; ++k) {  // s = m^(1/2^k), or fail
    if (k < -3) return false;
    uint64_t q = static_cast<uint64_t>(Sqrt(static_cast<double>(s)));
    if (q * q != s) return false;
    s = q;
  }
  double yi = ye < 0 ? static_cast<double>(n) : static_cast<double>(y);  // the integer power
  if (yi > 16.0) return false;
  uint64_t r = 1;
  for (int i = 0; i < static_cast<int>(yi); ++i) {
    r *= s;
    if (r >= (1u << 25)) return false;
  }
  *out = ScaleToFloat(r, static_cast<int>(ey));
  return true;
}

// x^y for x > 0 finite, y finite nonzero, x != 1 (try_fast = false: accurate path only).
DETRAIN_HD inline float PowPositiveSlow(float x, float y, bool try_fast) {
  float r;
  if (try_fast && (PowFast(x, y, &r) || PowRetry(x, y, &r))) return r;
  if (PowExact(x, y, &r)) return r;
  Dd t = DdMulD(LogDd(Dd{x, 0.0}), y);
  if (t.hi > 95.0) return InfF();
  if (t.hi < -110.0) return 0.0f;
  return RoundDdToFloat(ExpDd(t));
}

// y is an odd integer (|y| < 2^24 is needed for oddness).
DETRAIN_HD inline bool IsOddInt(float y) {
  float a = AbsF(y);
  if (!(a < 0x1p24f) || a < 1.0f) return false;
  uint32_t n;
  int e;
  OddSplit(a, &n, &e);
  return e == 0;
}
DETRAIN_HD inline bool IsInt(float y) {
  float a = AbsF(y);
  if (a >= 0x1p23f) return a < InfF();
  uint32_t n;
  int e;
  if (a == 0.0f) return true;
  OddSplit(a, &n, &e);
  return e >= 0;
}

DETRAIN_HD inline float PowSlow(float x, float y, bool try_fast = true) {
  if (y == 0.0f || x == 1.0f) return 1.0f;
  if (IsNanF(x) || IsNanF(y)) return x + y;
  float ax = AbsF(x);
  bool y_odd = IsOddInt(y);
  bool neg = FloatBits(x) >> 31 != 0;
  if (AbsF(y) == InfF()) {
    if (ax == 1.0f) return 1.0f;
    return (ax < 1.0f) == (y > 0.0f) ? 0.0f : InfF();
  }
  if (ax == 0.0f || ax == InfF()) {
    bool big = (ax == 0.0f) == (y < 0.0f);  // 0^neg, inf^pos
    float r = big ? InfF() : 0.0f;
    return neg && y_odd ? -r : r;
  }
  if (neg && !IsInt(y)) return NanF();
  float r = ax == 1.0f ? 1.0f : PowPositiveSlow(ax, y, try_fast);
  return neg && y_odd ? -r : r;
}

}  // namespace detrain::crmath::internal

#endif  // DETRAIN_BASE_MATH_CRMATH_POW_H_
