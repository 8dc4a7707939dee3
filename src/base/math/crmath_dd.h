// Double-double ("dd") arithmetic and the accurate slow-path kernels of the float32 math library:
// exp, expm1 and log of a dd argument with relative error below 2^-95 (docs/math.md §3), plus
// the one correct dd -> float rounding. Pure functions of their arguments (no state): thread-safe,
// and bit-identical on every IEEE-754 binary64 platform (explicit fma only where written).
#ifndef DETRAIN_BASE_MATH_CRMATH_DD_H_
#define DETRAIN_BASE_MATH_CRMATH_DD_H_

#if !defined(__CUDACC_RTC__)
#include <cstring>
#endif

#include "base/host_device.h"  // DETRAIN_HD, <cstdint>
#include "base/math/crmath_tables.h"

// Fast-path kernels are forced inline: they are small, and a call (returning structs through
// memory) would cost more than the kernel itself.
// Slow paths are kept out of line, so that the caller's loop holds only the fast path (inlining
// them made the compiler split the fast path into several branches: 2x slower for pow).
#if defined(__CUDACC__)
#define DETRAIN_HD_FAST __host__ __device__ __forceinline__
#define DETRAIN_HD_SLOW __host__ __device__ __noinline__
#define DETRAIN_LIKELY(c) __builtin_expect(!!(c), 1)
#elif defined(__GNUC__)
#define DETRAIN_HD_FAST inline __attribute__((always_inline))
#define DETRAIN_HD_SLOW inline __attribute__((noinline))
#define DETRAIN_LIKELY(c) __builtin_expect(!!(c), 1)
#else
#define DETRAIN_HD_FAST inline
#define DETRAIN_HD_SLOW inline
#define DETRAIN_LIKELY(c) (c)
#endif

namespace detrain::crmath::internal {

DETRAIN_HD inline uint32_t FloatBits(float x) {
#if defined(__CUDA_ARCH__)
  return __float_as_uint(x);
#else
  uint32_t u;
  std::memcpy(&u, &x, sizeof u);
  return u;
#endif
}
DETRAIN_HD inline float BitsFloat(uint32_t u) {
#if defined(__CUDA_ARCH__)
  return __uint_as_float(u);
#else
  float x;
  std::memcpy(&x, &u, sizeof x);
  return x;
#endif
}
DETRAIN_HD inline uint64_t DoubleBits(double x) {
#if defined(__CUDA_ARCH__)
  return static_cast<uint64_t>(__double_as_longlong(x));
#else
  uint64_t u;
  std::memcpy(&u, &x, sizeof u);
  return u;
#endif
}
DETRAIN_HD inline double BitsDouble(uint64_t u) {
#if defined(__CUDA_ARCH__)
  return __longlong_as_double(static_cast<long long>(u));
#else
  double x;
  std::memcpy(&x, &u, sizeof x);
  return x;
#endif
}
// 2^k as a double, for -1022 <= k <= 1023.
DETRAIN_HD inline double Pow2(int k) { return BitsDouble(static_cast<uint64_t>(k + 1023) << 52); }
// Exact fused multiply-add (one rounding), as IEEE 754 specifies it on every platform.
DETRAIN_HD inline double Fma(double a, double b, double c) {
#if defined(__CUDA_ARCH__)
  return ::fma(a, b, c);
#else
  return __builtin_fma(a, b, c);
#endif
}
DETRAIN_HD inline double Sqrt(double x) {
#if defined(__CUDA_ARCH__)
  return ::sqrt(x);
#else
  return __builtin_sqrt(x);
#endif
}
DETRAIN_HD inline float SqrtF(float x) {
#if defined(__CUDA_ARCH__)
  return ::sqrtf(x);
#else
  return __builtin_sqrtf(x);
#endif
}
// Round to nearest integer (ties to even) for |x| < 2^51, branch-free.
DETRAIN_HD inline double RoundInt(double x) {
  constexpr double kShifter = 0x1.8p52;
  return (x + kShifter) - kShifter;
}

// A double-double: hi + lo with |lo| <= ulp(hi)/2.
struct Dd {
  double hi;
  double lo;
};

DETRAIN_HD inline Dd TwoSum(double a, double b) {
  double s = a + b;
  double bb = s - a;
  double err = (a - (s - bb)) + (b - bb);
  return {s, err};
}
DETRAIN_HD inline Dd FastTwoSum(double a, double b) {  // requires |a| >= |b| or a == 0
  double s = a + b;
  return {s, b - (s - a)};
}
DETRAIN_HD inline Dd TwoProd(double a, double b) {
  double p = a * b;
  return {p, Fma(a, b, -p)};
}
DETRAIN_HD inline Dd DdAdd(Dd a, Dd b) {
  Dd s = TwoSum(a.hi, b.hi);
  Dd t = TwoSum(a.lo, b.lo);
  s.lo += t.hi;
  s = FastTwoSum(s.hi, s.lo);
  s.lo += t.lo;
  return FastTwoSum(s.hi, s.lo);
}
DETRAIN_HD inline Dd DdAddD(Dd a, double b) {
  Dd s = TwoSum(a.hi, b);
  s.lo += a.lo;
  return FastTwoSum(s.hi, s.lo);
}
DETRAIN_HD inline Dd DdMul(Dd a, Dd b) {
  Dd p = TwoProd(a.hi, b.hi);
  p.lo += a.hi * b.lo + a.lo * b.hi;
  return FastTwoSum(p.hi, p.lo);
}
DETRAIN_HD inline Dd DdMulD(Dd a, double b) {
  Dd p = TwoProd(a.hi, b);
  p.lo += a.lo * b;
  return FastTwoSum(p.hi, p.lo);
}
// a / b with three quotient digits (relative error ~2^-104).
DETRAIN_HD inline Dd DdDiv(Dd a, Dd b) {
  double q1 = a.hi / b.hi;
  Dd r = DdAdd(a, DdMulD(b, -q1));
  double q2 = r.hi / b.hi;
  r = DdAdd(r, DdMulD(b, -q2));
  double q3 = r.hi / b.hi;
  Dd q = FastTwoSum(q1, q2);
  return DdAddD(q, q3);
}
DETRAIN_HD inline Dd DdDivD(Dd a, double b) { return DdDiv(a, Dd{b, 0.0}); }
DETRAIN_HD inline Dd DdScale(Dd a, double pow2) { return {a.hi * pow2, a.lo * pow2}; }

// The float nearest to hi + lo (ties to even), including subnormal and overflowing results: hi
// is first replaced by the round-to-odd value of hi + lo in binary64 (53 >= 24 + 2 bits), after
// which the single conversion to float rounds correctly.
DETRAIN_HD inline float RoundDdToFloat(Dd a) {
  uint64_t b = DoubleBits(a.hi);
  if (a.lo != 0.0 && (b & 1) == 0) {
    bool same_sign = (a.lo > 0) == (a.hi > 0);
    b = same_sign ? b + 1 : b - 1;
  }
  return static_cast<float>(BitsDouble(b));
}

// expm1(r) for |r| <= 0.36 with relative error < 2^-100: Taylor series of degree 10 at r/256,
// then eight doublings expm1(2s) = expm1(s) * (expm1(s) + 2), which keep the relative accuracy.
DETRAIN_HD inline Dd Expm1DdSmall(Dd r) {
  Dd s = DdScale(r, 0x1p-8);
  Dd e = {kInvFactorialDd[10][0], kInvFactorialDd[10][1]};
  for (int n = 9; n >= 1; --n)
    e = DdAdd(DdMul(s, e), Dd{kInvFactorialDd[n][0], kInvFactorialDd[n][1]});
  e = DdMul(s, e);  // sum_{n=1..10} s^n / n!
  for (int i = 0; i < 8; ++i) e = DdMul(e, DdAddD(e, 2.0));
  return e;
}

// Splits x = k ln2 + r, |r| <= 0.35 (|x| < 2^40), r accurate to ~2^-100 absolute.
DETRAIN_HD inline Dd ReduceLn2(Dd x, int* k) {
  double kd = RoundInt(x.hi * kInvLn2Hi);
  *k = static_cast<int>(kd);
  Dd r = DdAddD(x, -kd * kLn2A);  // kd * kLn2A is exact
  r = DdAdd(r, TwoProd(-kd, kLn2B));
  return DdAddD(r, -kd * kLn2C);
}

// e^x for -110 < x < 110 (relative error < 2^-97).
DETRAIN_HD inline Dd ExpDd(Dd x) {
  int k;
  Dd e = Expm1DdSmall(ReduceLn2(x, &k));
  return DdScale(DdAddD(e, 1.0), Pow2(k));
}

// e^x - 1 for |x| < 110 (relative error < 2^-95).
DETRAIN_HD inline Dd Expm1Dd(Dd x) {
  if (x.hi > -0.34 && x.hi < 0.34) return Expm1DdSmall(x);
  int k;
  Dd e = Expm1DdSmall(ReduceLn2(x, &k));
  double s = Pow2(k);
  return DdAddD(DdAddD(DdScale(e, s), s), -1.0);  // 2^k e + 2^k - 1
}

// log1p(f) for f = m - 1, m in [sqrt(1/2), sqrt(2)]: 2 atanh(f / (2 + f)), series in s^2 <= 2^-5.
DETRAIN_HD inline Dd Log1pDdReduced(Dd f) {
  Dd s = DdDiv(f, DdAddD(f, 2.0));
  Dd s2 = DdMul(s, s);
  Dd sum = {kInvOddDd[22][0], kInvOddDd[22][1]};
  for (int j = 21; j >= 0; --j) sum = DdAdd(DdMul(sum, s2), Dd{kInvOddDd[j][0], kInvOddDd[j][1]});
  return DdScale(DdMul(s, sum), 2.0);
}

// ln(a) for a > 0 with a.hi a normal double (relative error < 2^-98).
DETRAIN_HD inline Dd LogDd(Dd a) {
  uint64_t b = DoubleBits(a.hi);
  int e = static_cast<int>((b >> 52) & 0x7ff) - 1023;
  double scale = Pow2(-e);
  Dd m = DdScale(a, scale);  // m in [1, 2)
  if (m.hi > 1.4142135623730951) {
    m = DdScale(m, 0.5);
    e += 1;
  }
  Dd f = DdAddD(m, -1.0);
  Dd lg = Log1pDdReduced(f);
  if (e == 0) return lg;
  Dd e_ln2 = DdAdd(TwoProd(e, kLn2Hi), Dd{e * kLn2Lo, 0.0});
  return DdAdd(e_ln2, lg);
}

// log1p(x) for a binary64 x > -1 given exactly as hi + lo.
DETRAIN_HD inline Dd Log1pDd(Dd x) {
  if (x.hi > -0.29 && x.hi < 0.41) return Log1pDdReduced(x);
  return LogDd(DdAddD(x, 1.0));
}

}  // namespace detrain::crmath::internal

#endif  // DETRAIN_BASE_MATH_CRMATH_DD_H_
