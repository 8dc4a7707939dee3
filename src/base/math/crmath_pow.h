// pow(x, y) for float32, correctly rounded, with the special cases of C99 Annex F (F.9.4.4).
// Fast path: ln|x| and e^t in binary64 with an error bound that grows with |t| = |y ln x|.
// Slow path: exact and midpoint results are found algebraically (PowExact), every other result
// is irrational or needs > 25 bits, and is rounded from a dd evaluation (error < 2^-90).
// Pure functions: thread-safe, bit-identical on every IEEE-754 platform.
#ifndef DETRAIN_BASE_MATH_CRMATH_POW_H_
#define DETRAIN_BASE_MATH_CRMATH_POW_H_

#include "base/math/crmath_scalar.h"

namespace detrain::crmath::internal {

// Relative error bound of PowApprox (docs/math.md §2): < 2^-38.3, see below.
inline constexpr double kErrPow = 0x1p-38;

// The fast kernel's result: y ~ x^y with relative error < kErrPow when x_ok and y is finite;
// k128 = round(128 t) (low 32 bits), which tells whether y is in the normal float range.
struct PowKernel {
  double y;
  uint32_t k128;
  bool x_ok;  // x > 0 normal (zero, subnormal, negative, inf and NaN x take the slow path)
};

// x^y for x > 0 normal and y finite. A short chain on purpose (pow is latency-bound):
// 1. log2 x from the float's bits: x = 2^k z, z in [kPowLogOff, 2 kPowLogOff), bucket i of z,
//    r = z invc_i - 1 exact (24 x 24 bits; |r| <= 2^-9.0001), log2 x = k + log2 c_i +
//    log2(1 + r), the last by Taylor degree 5 (relative truncation |r|^5/6 < 2^-47.5). The bucket
//    containing 1 has invc = 1 and log2 c = 0, so there is no cancellation near x = 1; elsewhere
//    |log2 x| > 2^-9.5 and the rounding errors stay below 2^-51 relative: log2 x has relative
//    error < 2^-47.4.
// 2. t = y log2 x (one more rounding: relative error < 2^-47.3), clamped to [-160, 140]
//    (beyond: certain underflow to 0 or overflow to inf, which the slow path returns). The error
//    of t is then < 160 2^-47.3 absolute, i.e. < 2^-40.5 relative in 2^t.
// 3. 2^t = 2^(m + j/128) 2^(s/128), 128 t = 128 m + j + s exactly (|s| <= 1/2, by the round-to-int
//    shifter); 2^(m + j/128) is built by adding the integer into the table entry's bits, and
//    2^(s/128) - 1 is Taylor degree 3 (truncation (ln2/256)^4/24 < 2^-38.7, rounding < 2^-51).
// Total: < 2^-38.65 + 2^-40.5 < 2^-38.3 < kErrPow. An infinite or NaN y (or t) ends at a clamp
// bound (`t < 140 ? t : 140` is 140 for NaN), so k128 flags it without a separate test.
DETRAIN_HD_FAST PowKernel PowApprox(float x, float y) {
  uint32_t xb = FloatBits(x);
  bool x_ok = xb - 0x00800000u < 0x7f000000u;
  uint32_t tmp = xb - kPowLogOff;
  int i = static_cast<int>((tmp >> 15) & 255);
  double k = static_cast<double>(static_cast<int32_t>(tmp) >> 23);
  double z = BitsFloat(xb - (tmp & 0xff800000u));
  double r = z * kPowInvC[i] - 1.0;
  const double* c = kLog2p1Poly;
  double r2 = r * r;
  double p = (r * c[0] + r2 * (c[1] + r * c[2])) + (r2 * r2) * (c[3] + r * c[4]);
  double l = (k + kPowLog2CHi[i]) + (kPowLog2CLo[i] + p);
  double t = static_cast<double>(y) * l;
  t = t < 140.0 ? t : 140.0;
  t = t > -160.0 ? t : -160.0;
  constexpr double kShifter = 0x1.8p52;
  double t128 = t * 128.0;  // exact
  double a = t128 + kShifter;
  uint64_t ki = DoubleBits(a);
  double s = t128 - (a - kShifter);  // exact, |s| <= 1/2
  double scale = BitsDouble(kPowExp2Bits[ki & 127] + (ki << 45));
  const double* q = kPowExp2Poly;
  double pe = s * (q[0] + s * (q[1] + s * q[2]));
  return {scale + scale * pe, static_cast<uint32_t>(ki), x_ok};
}

// The fast rounding test (RoundOrFlagRel's, docs/math.md §1) for a normal-range result: x^y
// is in [2^-126, 2^128) whenever 128 t rounds into [-16127, 16383] (|s| <= 1/2 and the error
// cannot cross a power of two there), which is cheaper to test than y's exponent.
DETRAIN_HD_FAST bool PowFast(float x, float y, float* out) {
  PowKernel a = PowApprox(x, y);
  constexpr uint64_t kTol = static_cast<uint64_t>(kErrPow * 0x1p53) + 1;
  uint64_t low = DoubleBits(a.y) & 0x1fffffffu;
  bool far = low - 0x10000000u + kTol > 2 * kTol;
  bool in_range = a.k128 + (126u * 128u - 1u) < 254u * 128u - 1u;
  *out = static_cast<float>(a.y);
  return far & in_range & a.x_ok;
}
// The general test (subnormal and overflowing results), for finite y.
DETRAIN_HD inline bool PowRetry(float x, float y, float* out) {
  PowKernel a = PowApprox(x, y);
  bool y_finite = (FloatBits(y) & 0x7fffffffu) < 0x7f800000u;
  return a.x_ok && y_finite && RoundOrFlag(a.y, a.y * kErrPow, out);
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
  if (IsNanF(x) || IsNanF(y)) return QuietNan(IsNanF(x) ? x : y);  // x86's x + y, on any device
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
