// The one-argument float32 functions, correctly rounded (round to nearest, ties to even) for
// every input (docs/math.md). Each function F is `FFast` (binary64 kernel `FApprox` + the cheap
// rounding test, branch-free, shared verbatim with the array variants), then `FRetry` (the
// general test, for subnormal and overflowing results), then `FSlow` (special values, then the
// dd kernel of crmath_dd.h). Pure functions: thread-safe; bit-identical on every IEEE-754
// platform, CPU or CUDA device.
#ifndef DETRAIN_BASE_MATH_CRMATH_SCALAR_H_
#define DETRAIN_BASE_MATH_CRMATH_SCALAR_H_

#include "base/math/crmath_fast.h"

namespace detrain::crmath::internal {

// Relative error bounds used by the rounding tests (each a safe multiple of the kernel's bound).
inline constexpr double kErrExp = 0x1p-37;
inline constexpr double kErrExpm1 = 0x1p-46;
inline constexpr double kErrLog = 0x1p-41;
inline constexpr double kErrTanh = 0x1p-44;
inline constexpr double kErrErf = 0x1p-48;
inline constexpr double kErrRsqrt = 0x1p-50;

// A fast kernel's result for one input: y with |y - f(x)| <= rel |f(x)|, valid when ok.
struct Approx {
  double y;
  double rel;
  bool ok;
};

// FFast: the cheap test (normal-range results); FRetry: the general test, which also decides
// subnormal and overflowing results. Both return false when the dd path is needed.
#define DETRAIN_CRMATH_TESTS(Name)                          \
  DETRAIN_HD_FAST bool Name##Fast(float x, float* out) {    \
    Approx a = Name##Approx(x);                             \
    return RoundOrFlagRel(a.y, a.rel, out) & a.ok;          \
  }                                                         \
  DETRAIN_HD inline bool Name##Retry(float x, float* out) { \
    Approx a = Name##Approx(x);                             \
    return a.ok && RoundOrFlag(a.y, Abs(a.y) * a.rel, out); \
  }

DETRAIN_HD inline bool IsNanF(float x) { return x != x; }
// Written with the bits: `x + x` quiets a NaN on x86 but gives 0x7FFFFFFF on a GPU.
DETRAIN_HD inline float QuietNan(float x) { return BitsFloat(FloatBits(x) | 0x00400000u); }
DETRAIN_HD inline float InfF() { return BitsFloat(0x7f800000u); }
DETRAIN_HD inline float NanF() { return BitsFloat(0x7fc00000u); }

// ---- exp ------------------------------------------------------------------------------------
DETRAIN_HD_FAST Approx ExpApprox(float x) {
  bool ok = x > -104.0f && x < 89.0f;  // false for NaN
  double xd = ok ? x : 0.0;
  double y = ExpFastD(xd);
  return {y, kErrExp, ok};
}
DETRAIN_CRMATH_TESTS(Exp)
DETRAIN_HD inline float ExpSlow(float x) {
  if (IsNanF(x)) return QuietNan(x);
  if (x >= 89.0f) return InfF();
  if (x <= -104.0f) return 0.0f;
  return RoundDdToFloat(ExpDd(Dd{x, 0.0}));
}

// ---- expm1 ----------------------------------------------------------------------------------
DETRAIN_HD_FAST Approx Expm1Approx(float x) {
  bool ok = x > -18.0f && x < 89.0f && x != 0.0f;
  double xd = ok ? x : 1.0;
  double y = Expm1FastD(xd);
  return {y, kErrExpm1, ok};
}
DETRAIN_CRMATH_TESTS(Expm1)
DETRAIN_HD inline float Expm1Slow(float x) {
  if (IsNanF(x)) return QuietNan(x);
  if (x == 0.0f) return x;
  if (x >= 89.0f) return InfF();
  if (x <= -18.0f) return -1.0f;
  return RoundDdToFloat(Expm1Dd(Dd{x, 0.0}));
}

// ---- exp2 -----------------------------------------------------------------------------------
DETRAIN_HD_FAST Approx Exp2Approx(float x) {
  bool ok = x > -150.0f && x < 128.0f;
  double xd = ok ? x : 0.0;
  double y = Exp2FastD(xd);
  return {y, kErrExp, ok};
}
DETRAIN_CRMATH_TESTS(Exp2)
DETRAIN_HD inline float Exp2Slow(float x) {
  if (IsNanF(x)) return QuietNan(x);
  if (x >= 128.0f) return InfF();
  if (x <= -150.0f) return 0.0f;  // 2^-150 is the tie between 0 and 2^-149: even is 0
  double kd = RoundInt(x);
  Dd r = DdMulD(Dd{kLn2Hi, kLn2Lo}, x - kd);  // x - kd is exact
  Dd e = DdAddD(Expm1DdSmall(r), 1.0);
  return RoundDdToFloat(DdScale(e, Pow2(static_cast<int>(kd))));
}

// ---- log, log2 ------------------------------------------------------------------------------
DETRAIN_HD_FAST Approx LogApprox(float x) {
  bool ok = x > 0.0f && x < InfF();
  double xd = ok ? x : 1.0;
  double y = LogFastD(xd);
  return {y, kErrLog, ok};
}
DETRAIN_CRMATH_TESTS(Log)
// Special values shared by log and log2: returns true with *out set when x is not in (0, inf).
DETRAIN_HD inline bool LogSpecial(float x, float* out) {
  if (IsNanF(x)) {
    *out = QuietNan(x);
    return true;
  }
  if (x == 0.0f) {
    *out = -InfF();
    return true;
  }
  if (x < 0.0f) {
    *out = NanF();
    return true;
  }
  if (x == InfF()) {
    *out = x;
    return true;
  }
  return false;
}
DETRAIN_HD inline float LogSlow(float x) {
  float special;
  if (LogSpecial(x, &special)) return special;
  return RoundDdToFloat(LogDd(Dd{x, 0.0}));
}
DETRAIN_HD_FAST Approx Log2Approx(float x) {
  bool ok = x > 0.0f && x < InfF();
  double xd = ok ? x : 1.0;
  double y = Log2FastD(xd);
  return {y, kErrLog, ok};
}
DETRAIN_CRMATH_TESTS(Log2)
DETRAIN_HD inline float Log2Slow(float x) {
  float special;
  if (LogSpecial(x, &special)) return special;
  return RoundDdToFloat(DdMul(LogDd(Dd{x, 0.0}), Dd{kInvLn2Hi, kInvLn2Lo}));
}

// ---- log1p ----------------------------------------------------------------------------------
DETRAIN_HD_FAST Approx Log1pApprox(float x) {
  bool ok = x > -1.0f && x < InfF() && x != 0.0f;
  double xd = ok ? x : 1.0;
  bool small = xd > -0x1p-8 && xd < 0x1p-8;  // Log1pPoly's domain
  double y_small = Log1pPoly(xd);
  double y_large = LogFastD(1.0 + xd);  // 1 + x is exact for x < 2^29
  double y = Select(small, y_small, y_large);
  return {y, kErrLog, ok};
}
DETRAIN_CRMATH_TESTS(Log1p)
DETRAIN_HD inline float Log1pSlow(float x) {
  if (IsNanF(x)) return QuietNan(x);
  if (x == 0.0f) return x;
  if (x == -1.0f) return -InfF();
  if (x < -1.0f) return NanF();
  if (x == InfF()) return x;
  return RoundDdToFloat(Log1pDd(Dd{x, 0.0}));
}

// ---- tanh -----------------------------------------------------------------------------------
// tanh |x| = E / (E + 2), E = expm1(2|x|); |x| >= 9.1 rounds to 1 (1 - tanh < 2^-25), which
// the fast path returns too (an exact +-1 passes the rounding test): activations that large are
// common, and each one sent to the slow path would cost a whole vector's retry.
DETRAIN_HD_FAST Approx TanhApprox(float x) {
  float a = AbsF(x);
  bool in_range = a < 9.1f;
  bool ok = a <= InfF() && x != 0.0f;  // false for NaN
  double ad = in_range ? a : 1.0;
  double e = Expm1FastD(2.0 * ad);
  double y = WithSignOf(Select(in_range, e / (e + 2.0), 1.0), x);
  return {y, kErrTanh, ok};
}
DETRAIN_CRMATH_TESTS(Tanh)
DETRAIN_HD inline float TanhSlow(float x) {
  if (IsNanF(x)) return QuietNan(x);
  if (x == 0.0f) return x;
  float a = AbsF(x);
  float r = 1.0f;
  if (a < 9.1f) {
    Dd e = Expm1Dd(Dd{2.0 * a, 0.0});
    r = RoundDdToFloat(DdDiv(e, DdAddD(e, 2.0)));
  }
  return x < 0.0f ? -r : r;
}

// ---- logistic -------------------------------------------------------------------------------
// 1 / (1 + e^-x); x > 18 rounds to 1 (returned exactly here, as tanh's +-1), x <= -104 rounds
// to +0 (the slow path: a zero fails the rounding test's normal range).
DETRAIN_HD_FAST Approx LogisticApprox(float x) {
  bool in_range = x <= 18.0f;
  bool ok = x > -104.0f;  // false for NaN
  double xd = ok && in_range ? x : 0.0;
  double y = Select(in_range, 1.0 / (1.0 + ExpFastD(-xd)), 1.0);
  return {y, kErrExp, ok};
}
DETRAIN_CRMATH_TESTS(Logistic)
DETRAIN_HD inline float LogisticSlow(float x) {
  if (IsNanF(x)) return QuietNan(x);
  if (x > 18.0f) return 1.0f;
  if (x <= -104.0f) return 0.0f;
  Dd e = ExpDd(Dd{-static_cast<double>(x), 0.0});
  return RoundDdToFloat(DdDiv(Dd{1.0, 0.0}, DdAddD(e, 1.0)));
}

// ---- erf ------------------------------------------------------------------------------------
// |x| >= 4 rounds to +-1 (returned exactly, as tanh's).
DETRAIN_HD_FAST Approx ErfApprox(float x) {
  float a = AbsF(x);
  bool in_range = a < 4.0f;
  bool ok = a <= InfF() && x != 0.0f;  // false for NaN
  double ad = in_range ? a : 1.0;
  double y = WithSignOf(Select(in_range, ErfFastD(ad), 1.0), x);
  return {y, kErrErf, ok};
}
DETRAIN_CRMATH_TESTS(Erf)
// erf(a) = 2/sqrt(pi) a e^(-a^2) sum_n (2a^2)^n / (1*3*...*(2n+1)) (all terms positive).
DETRAIN_HD inline Dd ErfDd(double a) {
  Dd a2 = TwoProd(a, a);
  Dd z = DdScale(a2, 2.0);
  Dd term = {1.0, 0.0};
  Dd sum = term;
  for (int n = 1; n < 400; ++n) {
    term = DdDivD(DdMul(term, z), 2.0 * n + 1.0);
    sum = DdAdd(sum, term);
    if (term.hi < sum.hi * 0x1p-110) break;
  }
  Dd e = ExpDd(Dd{-a2.hi, -a2.lo});
  return DdMulD(DdMul(DdMul(e, sum), Dd{kTwoOverSqrtPiHi, kTwoOverSqrtPiLo}), a);
}
DETRAIN_HD inline float ErfSlow(float x) {
  if (IsNanF(x)) return QuietNan(x);
  if (x == 0.0f) return x;
  float a = AbsF(x);
  float r = a >= 4.0f ? 1.0f : RoundDdToFloat(ErfDd(a));
  return x < 0.0f ? -r : r;
}

// ---- rsqrt ----------------------------------------------------------------------------------
DETRAIN_HD_FAST Approx RsqrtApprox(float x) {
  bool ok = x > 0.0f && x < InfF();
  double xd = ok ? x : 1.0;
  double y = 1.0 / Sqrt(xd);
  return {y, kErrRsqrt, ok};
}
DETRAIN_CRMATH_TESTS(Rsqrt)
// Exact decision: 1/sqrt(x) is never a midpoint m between floats, and m^2 (50 bits) and x m^2
// (as an exact fma pair) are exact, so sign(1/sqrt(x) - m) = sign(1 - x m^2) is decidable.
DETRAIN_HD inline float RsqrtSlow(float x) {
  if (IsNanF(x)) return QuietNan(x);
  if (x == 0.0f) return x < 0.0f || FloatBits(x) == 0x80000000u ? -InfF() : InfF();
  if (x < 0.0f) return NanF();
  if (x == InfF()) return 0.0f;
  double y = 1.0 / Sqrt(static_cast<double>(x));
  float f = static_cast<float>(y);
  uint32_t fb = FloatBits(f);
  float lo = (y >= static_cast<double>(f)) ? f : BitsFloat(fb - 1);
  float hi = BitsFloat(FloatBits(lo) + 1);
  double mid = 0.5 * (static_cast<double>(lo) + static_cast<double>(hi));  // exact
  Dd p = TwoProd(static_cast<double>(x), mid * mid);                       // exact
  double s = 1.0 - p.hi;                                                   // exact
  return s > p.lo ? hi : lo;
}

}  // namespace detrain::crmath::internal

#undef DETRAIN_CRMATH_TESTS

#endif  // DETRAIN_BASE_MATH_CRMATH_SCALAR_H_
