// Correctly rounded float32 sine and cosine (round to nearest, ties to even) for every input
// (docs/math.md §3.4). The argument is reduced to x = (q + f) pi/2 with |f| <= 1/2 and
// r = f pi/2: exactly in binary64 (Cody-Waite, three parts of pi/2) for |x| < 2^20 on the fast
// path, and by Payne-Hanek in 32-bit integer limbs against 384 bits of 2/pi otherwise and on
// the slow path, which keeps r to a relative 2^-100 for every float. sin r and cos r are then
// Taylor series: in binary64 on the fast path (relative error < 2^-49, rounding test at 2^-46),
// in double-double on the slow path. No 128-bit integers, so the same code runs on CUDA devices.
// Pure functions: thread-safe, bit-identical on every IEEE-754 platform.
#ifndef DETRAIN_BASE_MATH_CRMATH_TRIG_H_
#define DETRAIN_BASE_MATH_CRMATH_TRIG_H_

#include "base/math/crmath_scalar.h"

namespace detrain::crmath::internal {

inline constexpr double kErrTrig = 0x1p-46;
inline constexpr float kPiOver4F = 0x1.921fb4p-1f;  // the float just below pi/4

// Payne-Hanek: for a finite float a >= 1/2, returns q (mod 4) and *r = f pi/2 with
// a = (q + f) pi/2 (mod 2 pi), |f| <= 1/2; *r has relative error < 2^-100 for every float.
// a = m 2^e (m < 2^24 an integer, -24 <= e <= 104). Of a 2/pi = sum_i m 2^e w_i 2^(-32(i+1))
// (w_i the limbs of kTwoOverPiBits), the terms with e - 32(i+1) >= 2 are multiples of 4 and
// drop; the next six limbs give P = m (w_i0 ... w_i0+5), a 216-bit integer with
// a 2/pi = P 2^-s (mod 4), s = 32(i0 + 6) - e in [159, 216]. The dropped tail of 2/pi adds
// less than 2^(24-s) <= 2^-135 to f, and |r| >= 2^-29.2 for every float >= 1/2 (measured over
// all of them: the minimum is at x = 0x1.f37c8ap+95).
DETRAIN_HD_SLOW int TrigReduceLarge(float a, Dd* r) {
  uint32_t b = FloatBits(a) & 0x7fffffffu;
  uint32_t m = (b & 0x007fffffu) | 0x00800000u;
  int e = static_cast<int>(b >> 23) - 150;
  int i0 = e >= 2 ? (e - 2) >> 5 : 0;
  uint32_t p[7];  // P, most significant limb first
  uint64_t carry = 0;
  for (int j = 5; j >= 0; --j) {
    uint64_t t = static_cast<uint64_t>(m) * kTwoOverPiBits[i0 + j] + carry;
    p[j + 1] = static_cast<uint32_t>(t);
    carry = t >> 32;
  }
  p[0] = static_cast<uint32_t>(carry);
  int s = 32 * (i0 + 6) - e;
  // q: bits s and s + 1 of P (bit 0 the least significant).
  int q = 0;
  for (int t = s + 1; t >= s; --t)
    q = (q << 1) | static_cast<int>((p[6 - (t >> 5)] >> (t & 31)) & 1u);
  // g: the s fraction bits of P, shifted to the top of 224 bits (f = sum g_j 2^(-32(j+1))).
  int shift = 224 - s;
  int ws = shift >> 5, bs = shift & 31;
  uint32_t g[7];
  for (int j = 0; j < 7; ++j) {
    int k = j + ws;
    uint32_t hi = k < 7 ? p[k] : 0u;
    uint32_t lo = k + 1 < 7 ? p[k + 1] : 0u;
    g[j] = bs == 0 ? hi : (hi << bs) | (lo >> (32 - bs));
  }
  // f >= 1/2: take f - 1 (two's complement of g, then negated) and the next quadrant.
  bool neg = (g[0] >> 31) != 0;
  if (neg) {
    uint64_t c = 1;
    for (int j = 6; j >= 0; --j) {
      uint64_t v = static_cast<uint64_t>(~g[j]) + c;
      g[j] = static_cast<uint32_t>(v);
      c = v >> 32;
    }
    q += 1;
  }
  Dd f = {0.0, 0.0};
  for (int j = 6; j >= 0; --j) f = DdAddD(f, static_cast<double>(g[j]) * Pow2(-32 * (j + 1)));
  Dd v = DdMul(f, Dd{kPiOver2Hi, kPiOver2Lo});
  *r = neg ? Dd{-v.hi, -v.lo} : v;
  return q & 3;
}

// sin r and cos r for |r| <= pi/4 (1 + 2^-20) in binary64: truncation < 2^-54 (sin, relative to
// sin r) and < 2^-59 (cos); rounding adds < 2^-51.
DETRAIN_HD_FAST double SinPolyD(double r) {
  double r2 = r * r;
  const double* c = kSinPoly;
  double p = c[6];
  for (int n = 5; n >= 0; --n) p = c[n] + r2 * p;
  return r + r * (r2 * p);
}
DETRAIN_HD_FAST double CosPolyD(double r) {
  double r2 = r * r;
  const double* c = kCosPoly;
  double p = c[7];
  for (int n = 6; n >= 0; --n) p = c[n] + r2 * p;
  return 1.0 + r2 * p;
}

// The fast kernel of sin (is_cos = 0) and cos (is_cos = 1). For |x| < 2^20, k = RN(x 2/pi) < 2^20:
// k C1 and k C2 are exact (33-bit parts), x - k C1 is exact (a multiple of 2^-32 below 1), so
// r = (x - k C1) - k C2 - k C3 has error < 2 ulp(r) + 2^-100; r is trusted when |r| > 2^-30
// (relative error < 2^-51 there), else the slow path decides.
DETRAIN_HD_FAST Approx TrigApprox(float x, int is_cos) {
  float a = AbsF(x);
  bool finite = a < InfF();  // false for NaN
  double ad = finite ? a : 0.0;
  int q = 0;
  double r = ad;
  bool ok = finite && x != 0.0f;
  if (ad > kPiOver4F) {
    if (ad < 0x1p20) {
      double k = RoundInt(ad * kTwoOverPi);
      r = ((ad - k * kPiOver2C1) - k * kPiOver2C2) - k * kPiOver2C3;
      q = static_cast<int>(k) & 3;
      ok = ok && Abs(r) > 0x1p-30;
    } else {
      Dd rr;
      q = TrigReduceLarge(a, &rr);
      r = rr.hi;
    }
  }
  q += is_cos;
  double y = (q & 1) ? CosPolyD(r) : SinPolyD(r);
  bool neg = ((q & 2) != 0) != (is_cos == 0 && x < 0.0f);
  return {neg ? -y : y, kErrTrig, ok};
}

// sin r (is_sin) or cos r for a dd |r| <= pi/4 (1 + 2^-20): the Taylor series to the term below
// 2^-110 (at most 15 terms), relative error < 2^-100.
DETRAIN_HD inline Dd SinCosDd(Dd r, bool is_sin) {
  Dd r2 = DdMul(r, r);
  Dd term = is_sin ? r : Dd{1.0, 0.0};
  Dd sum = term;
  for (int n = is_sin ? 2 : 1; n < 40; n += 2) {
    term = DdDivD(DdMul(term, Dd{-r2.hi, -r2.lo}), static_cast<double>(n * (n + 1)));
    sum = DdAdd(sum, term);
    if (Abs(term.hi) < Abs(sum.hi) * 0x1p-110) break;
  }
  return sum;
}

DETRAIN_HD inline float TrigSlow(float x, int is_cos) {
  if (IsNanF(x)) return QuietNan(x);
  float a = AbsF(x);
  if (a == InfF()) return NanF();
  // |x| < 2^-13: sin x = x (1 - d), cos x = 1 - d', d, d' < 2^-27, round to x and 1.
  if (a < 0x1p-13f) return is_cos ? 1.0f : x;
  Dd r = {a, 0.0};
  int q = 0;
  if (a > kPiOver4F) q = TrigReduceLarge(a, &r);
  q += is_cos;
  float y = RoundDdToFloat(SinCosDd(r, (q & 1) == 0));
  bool neg = ((q & 2) != 0) != (is_cos == 0 && x < 0.0f);
  return neg ? -y : y;
}

DETRAIN_HD inline float SinSlow(float x) { return TrigSlow(x, 0); }
DETRAIN_HD inline float CosSlow(float x) { return TrigSlow(x, 1); }

DETRAIN_HD_FAST bool SinFast(float x, float* out) {
  Approx a = TrigApprox(x, 0);
  return RoundOrFlagRel(a.y, a.rel, out) & a.ok;
}
DETRAIN_HD_FAST bool CosFast(float x, float* out) {
  Approx a = TrigApprox(x, 1);
  return RoundOrFlagRel(a.y, a.rel, out) & a.ok;
}
DETRAIN_HD_SLOW float TrigSlowPath(float x, int is_cos) {
  Approx a = TrigApprox(x, is_cos);
  float r;
  if (a.ok && RoundOrFlag(a.y, Abs(a.y) * a.rel, &r)) return r;
  return TrigSlow(x, is_cos);
}

}  // namespace detrain::crmath::internal

namespace detrain::crmath {

DETRAIN_HD inline float Sin(float x) {
  float r;
  if (DETRAIN_LIKELY(internal::SinFast(x, &r))) return r;
  return internal::TrigSlowPath(x, 0);
}
DETRAIN_HD inline float Cos(float x) {
  float r;
  if (DETRAIN_LIKELY(internal::CosFast(x, &r))) return r;
  return internal::TrigSlowPath(x, 1);
}

}  // namespace detrain::crmath

#endif  // DETRAIN_BASE_MATH_CRMATH_TRIG_H_
