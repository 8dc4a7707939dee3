// Fast binary64 kernels of the float32 math library and the rounding test (docs/math.md §2).
// Each kernel returns an approximation with a stated relative error bound; `RoundOrFlag` turns
// it into the correctly rounded float when the whole error interval rounds to one float, and
// reports failure otherwise (the caller then takes the accurate dd path). Branch-free on purpose
// so that the array variants' block loops can vectorize. Plain `*`/`+` only: results must not
// depend on FMA contraction, which the build disables (-ffp-contract=off, nvcc --fmad=false).
// Pure functions: thread-safe, bit-identical on every IEEE-754 platform.
#ifndef DETRAIN_BASE_MATH_CRMATH_FAST_H_
#define DETRAIN_BASE_MATH_CRMATH_FAST_H_

#include "base/math/crmath_dd.h"

namespace detrain::crmath::internal {

// True (and *out = the float nearest to the exact value) when y - err and y + err round to the
// same float, where |y - exact| <= err. Both bounds are rounded, so subnormal and overflowing
// results are decided by the same single conversion as normal ones.
DETRAIN_HD_FAST bool RoundOrFlag(double y, double err, float* out) {
  float a = static_cast<float>(y - err);
  float b = static_cast<float>(y + err);
  *out = a;
  return FloatBits(a) == FloatBits(b);
}

// Branch-free helpers: data-dependent branches (random signs, mixed ranges) mispredict and
// block vectorization, so fast paths select with bit masks instead.
DETRAIN_HD_FAST double Abs(double x) { return BitsDouble(DoubleBits(x) & 0x7fffffffffffffffull); }

// The fast rounding test, for a relative error bound rel: true (and *out = the correctly rounded
// float) when y lies in the normal float range and the 29 bits of y below float precision are
// farther than rel 2^53 units of y's last place (>= the error) from the midpoint pattern
// 0x10000000. Results in the subnormal or overflow range are flagged; the slow paths then try
// the general RoundOrFlag before their dd kernel. Branch-free.
DETRAIN_HD_FAST bool RoundOrFlagRel(double y, double rel, float* out) {
  uint64_t b = DoubleBits(y);
  uint64_t tol = static_cast<uint64_t>(static_cast<int64_t>(rel * 0x1p53)) + 1;
  uint64_t low = b & 0x1fffffffu;
  bool far = low - 0x10000000u + tol > 2 * tol;            // |low - 0x10000000| > tol
  bool normal = ((b >> 52) & 0x7ff) - (1023 - 126) < 254;  // 2^-126 <= |y| < 2^128
  *out = static_cast<float>(y);
  return far & normal;
}

DETRAIN_HD_FAST double Select(bool c, double a, double b) {
  uint64_t m = 0 - static_cast<uint64_t>(c);
  return BitsDouble((DoubleBits(a) & m) | (DoubleBits(b) & ~m));
}
// |y| with the sign bit of x (a float) set into it.
DETRAIN_HD_FAST double WithSignOf(double y, float x) {
  return BitsDouble(DoubleBits(y) | (static_cast<uint64_t>(FloatBits(x) >> 31) << 63));
}
DETRAIN_HD_FAST float AbsF(float x) { return BitsFloat(FloatBits(x) & 0x7fffffffu); }

// 2^(k/128) parts for e^x: x = k ln2/128 + r, |r| <= ln2/256 (1 + 2^-40) < 2^-8.5.
struct ExpSplit {
  double scale;       // 2^(k >> 7)
  double t_hi, t_lo;  // 2^((k & 127)/128)
  double r;
};

DETRAIN_HD_FAST ExpSplit ExpReduce(double x) {
  double kd = RoundInt(x * k128OverLn2);
  int k = static_cast<int>(kd);
  double r = (x - kd * kLn2Over128A) - kd * kLn2Over128B;
  ExpSplit s;
  s.scale = Pow2(k >> 7);
  s.t_hi = kExp2Table[k & 127][0];
  s.t_lo = kExp2Table[k & 127][1];
  s.r = r;
  return s;
}

// e^x for |x| <= 120, relative error < 2^-38.5: Taylor degree 3 of e^r - 1 (truncation
// r^4/24 < 2^-38.6), Estrin form to keep the dependency chain short.
DETRAIN_HD_FAST double ExpFastD(double x) {
  ExpSplit s = ExpReduce(x);
  double r = s.r, r2 = r * r;
  double p = r + r2 * (kExpPoly[0] + r * kExpPoly[1]);
  return s.scale * (s.t_hi + s.t_hi * p);
}

// e^x - 1 for |x| <= 120, relative error < 2^-48 (degree 5: relative truncation r^5/720 < 2^-51
// of e^r - 1 itself, which matters when k = 0 and the result is p alone; 2^k T - 1 is exact
// when |x| < ln 2).
DETRAIN_HD_FAST double Expm1FastD(double x) {
  ExpSplit s = ExpReduce(x);
  double r = s.r, r2 = r * r;
  double p =
      (r + r2 * (kExpPoly[0] + r * kExpPoly[1])) + (r2 * r2) * (kExpPoly[2] + r * kExpPoly[3]);
  return (s.scale * s.t_hi - 1.0) + s.scale * (s.t_lo + s.t_hi * p);
}

// 2^x for |x| <= 160, relative error < 2^-38.5 (degree 3, |r ln 2| <= 2^-8.5 as for e^x).
DETRAIN_HD_FAST double Exp2FastD(double x) {
  double kd = RoundInt(x * 128.0);
  int k = static_cast<int>(kd);
  double r = x - kd * 0x1p-7;
  const double* c = kExp2Poly;
  double p = r * (c[0] + r * (c[1] + r * c[2]));
  double t_hi = kExp2Table[k & 127][0];
  return Pow2(k >> 7) * (t_hi + t_hi * p);
}

// u = 2^e * m' with m' = m (or m/2 for the upper buckets) in [0.707, 1.414), r = m' inv - 1.
struct LogSplit {
  double e;
  double r;
  int i;
};

// For a positive normal binary64 u. r is exact whenever u has at most 40 significant bits.
DETRAIN_HD_FAST LogSplit LogReduce(double u) {
  uint64_t b = DoubleBits(u);
  int i = static_cast<int>((b >> 44) & 255);
  uint64_t upper = i >= kLogSplit ? 1 : 0;  // then m' = m / 2 and e' = e + 1
  int e = static_cast<int>(b >> 52) - 1023 + static_cast<int>(upper);
  double m = BitsDouble((b & 0x000fffffffffffffull) | ((0x3ffull - upper) << 52));
  LogSplit s;
  s.e = static_cast<double>(e);
  s.r = m * kLogTable[i][0] - 1.0;
  s.i = i;
  return s;
}

// log1p(r) for |r| <= 2^-8 (bucket 0 of the table; 2^-9 elsewhere): Taylor to degree 5,
// Estrin form, relative truncation error r^5/6 < 2^-42.5.
DETRAIN_HD_FAST double Log1pPoly(double r) {
  const double* c = kLog1pPoly;
  double r2 = r * r;
  return (r + r2 * (c[0] + r * c[1])) + (r2 * r2) * (c[2] + r * c[3]);
}

// ln(u) for a positive normal binary64 u, relative error < 2^-42.4.
DETRAIN_HD_FAST double LogFastD(double u) {
  LogSplit s = LogReduce(u);
  double p = Log1pPoly(s.r);
  double hi = s.e * kLn2A + kLogTable[s.i][1];
  return hi + (p + (kLogTable[s.i][2] + s.e * kLn2B));
}

// log2(u) for a positive normal binary64 u, relative error < 2^-42.4; exact for powers of two.
DETRAIN_HD_FAST double Log2FastD(double u) {
  LogSplit s = LogReduce(u);
  const double* c = kLog2p1Poly;
  double r = s.r;
  double r2 = r * r;
  double p = (r * c[0] + r2 * (c[1] + r * c[2])) + (r2 * r2) * (c[3] + r * c[4]);
  return (s.e + kLogTable[s.i][3]) + (kLogTable[s.i][4] + p);
}

// erf(a) for 0 <= a < 4, relative error < 2^-50 (tables: tools/crmath/gen_tables.py).
DETRAIN_HD_FAST double ErfFastD(double a) {
  if (a < 0.25) {
    double z = a * a;
    const double* c = kErfSmall;
    double q = c[9];
    for (int n = 8; n >= 0; --n) q = c[n] + z * q;
    return a * q;
  }
  int j = static_cast<int>((a - 0.25) * 8.0);
  double t = a - (0.25 + (j + 0.5) * 0.125);
  const double* c = kErfTable[j];
  double q = c[0];
  for (int n = 1; n <= kErfDeg; ++n) q = c[n] + t * q;
  return q;
}

}  // namespace detrain::crmath::internal

#endif  // DETRAIN_BASE_MATH_CRMATH_FAST_H_
