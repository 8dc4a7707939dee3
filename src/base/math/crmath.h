// detrain's float32 math library: correctly rounded (round to nearest, ties to even) exp, expm1,
// exp2, log, log1p, log2, tanh, logistic, erf, rsqrt, pow, sin and cos (crmath_trig.h) for every
// input, plus a fully determined (not correctly rounded) erfinv. A correctly rounded result is
// unique, so these functions give the same bits on every CPU and GPU; see docs/math.md for the
// algorithms, error bounds and the exhaustive verifier (tools/crmath). Header-only, usable from
// CUDA device code (DETRAIN_HD = __host__ __device__ under nvcc; compile device code with
// --fmad=false).
//
// Thread-safety and determinism: every function is pure (no state, no errno, no libm call
// decides a result); array variants give bit for bit the scalar results.
#ifndef DETRAIN_BASE_MATH_CRMATH_H_
#define DETRAIN_BASE_MATH_CRMATH_H_

#include "base/host_device.h"  // <cstddef> on host, its own typedefs under NVRTC
#include "base/math/crmath_pow.h"
#include "base/math/crmath_scalar.h"

namespace detrain::crmath {

namespace internal {
// The out-of-line remainder of each function: the general rounding test, then the dd path.
#define DETRAIN_CRMATH_SLOW_PATH(Name)            \
  DETRAIN_HD_SLOW float Name##SlowPath(float x) { \
    float r;                                      \
    if (Name##Retry(x, &r)) return r;             \
    return Name##Slow(x);                         \
  }
DETRAIN_CRMATH_SLOW_PATH(Exp)
DETRAIN_CRMATH_SLOW_PATH(Expm1)
DETRAIN_CRMATH_SLOW_PATH(Exp2)
DETRAIN_CRMATH_SLOW_PATH(Log)
DETRAIN_CRMATH_SLOW_PATH(Log1p)
DETRAIN_CRMATH_SLOW_PATH(Log2)
DETRAIN_CRMATH_SLOW_PATH(Tanh)
DETRAIN_CRMATH_SLOW_PATH(Logistic)
DETRAIN_CRMATH_SLOW_PATH(Erf)
DETRAIN_CRMATH_SLOW_PATH(Rsqrt)
#undef DETRAIN_CRMATH_SLOW_PATH
DETRAIN_HD_SLOW float PowSlowPath(float x, float y) { return PowSlow(x, y); }
}  // namespace internal

// Each function: the inlined fast path with its rounding test (FFast), else the slow path.
#define DETRAIN_CRMATH_UNARY(Name)                             \
  DETRAIN_HD inline float Name(float x) {                      \
    float r;                                                   \
    if (DETRAIN_LIKELY(internal::Name##Fast(x, &r))) return r; \
    return internal::Name##SlowPath(x);                        \
  }
DETRAIN_CRMATH_UNARY(Exp)
DETRAIN_CRMATH_UNARY(Expm1)
DETRAIN_CRMATH_UNARY(Exp2)
DETRAIN_CRMATH_UNARY(Log)
DETRAIN_CRMATH_UNARY(Log1p)
DETRAIN_CRMATH_UNARY(Log2)
DETRAIN_CRMATH_UNARY(Tanh)
DETRAIN_CRMATH_UNARY(Logistic)
DETRAIN_CRMATH_UNARY(Erf)
DETRAIN_CRMATH_UNARY(Rsqrt)
#undef DETRAIN_CRMATH_UNARY

DETRAIN_HD inline float Pow(float x, float y) {
  float r;
  if (DETRAIN_LIKELY(internal::PowFast(x, y, &r))) return r;
  return internal::PowSlowPath(x, y);
}

// Inverse error function, Giles' single-precision approximation as XLA expands erf_inv for f32
// (M. Giles, "Approximating the erfinv function", GPU Computing Gems Jade, 2011; coefficients as
// listed in docs/math.md): w = -log1p(-x*x); for w < 5, p = poly(w - 2.5), else p =
// poly(sqrt(w) - 3); result p * x; |x| == 1 -> ±inf, |x| > 1 or NaN -> NaN. Every step is one
// float operation in a fixed order (Horner without fma, our correctly rounded Log1p, IEEE sqrt),
// so the bits are identical everywhere; the result is not correctly rounded.
DETRAIN_HD inline float Erfinv(float x) {
  if (internal::IsNanF(x)) return internal::QuietNan(x);
  float a = internal::AbsF(x);
  if (a > 1.0f) return internal::NanF();
  if (a == 1.0f) return x > 0.0f ? internal::InfF() : -internal::InfF();
  float w = -Log1p(-(x * x));
  float p;
  if (w < 5.0f) {
    w = w - 2.5f;
    p = 2.81022636e-08f;
    p = 3.43273939e-07f + p * w;
    p = -3.5233877e-06f + p * w;
    p = -4.39150654e-06f + p * w;
    p = 0.00021858087f + p * w;
    p = -0.00125372503f + p * w;
    p = -0.00417768164f + p * w;
    p = 0.246640727f + p * w;
    p = 1.50140941f + p * w;
  } else {
    w = internal::SqrtF(w) - 3.0f;
    p = -0.000200214257f;
    p = 0.000100950558f + p * w;
    p = 0.00134934322f + p * w;
    p = -0.00367342844f + p * w;
    p = 0.00573950773f + p * w;
    p = -0.0076224613f + p * w;
    p = 0.00943887047f + p * w;
    p = 1.00167406f + p * w;
    p = 2.83297682f + p * w;
  }
  return p * x;
}

}  // namespace detrain::crmath

#include "base/math/crmath_array.h"
#include "base/math/crmath_trig.h"

#endif  // DETRAIN_BASE_MATH_CRMATH_H_
