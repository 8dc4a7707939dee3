// Array variants of the float32 math library: out[i] = F(in[i]) for i < n (in and out may be the
// same array). Each block of kBlock elements runs the branch-free fast kernel over the whole
// block (a loop the compiler can vectorize), recording per element whether the rounding test
// passed; a second, scalar pass recomputes the flagged elements with the scalar function. Since
// the fast kernel is the very code the scalar function runs first, out[i] == F(in[i]) bit for
// bit (tests/base/math/crmath_array_test.cc). Thread-safe (no state); deterministic.
#ifndef DETRAIN_BASE_MATH_CRMATH_ARRAY_H_
#define DETRAIN_BASE_MATH_CRMATH_ARRAY_H_

#include <cstddef>

#include "base/math/crmath_pow.h"
#include "base/math/crmath_scalar.h"

namespace detrain::crmath {
namespace internal {

inline constexpr size_t kBlock = 64;

template <bool (*FastFn)(float, float*), float (*SlowPathFn)(float)>
DETRAIN_HD inline void MapArray(const float* in, float* out, size_t n) {
  for (size_t base = 0; base < n; base += kBlock) {
    size_t len = n - base < kBlock ? n - base : kBlock;
    float x[kBlock];
    float y[kBlock];
    bool ok[kBlock];
    for (size_t i = 0; i < len; ++i) x[i] = in[base + i];  // out may alias in
    for (size_t i = 0; i < len; ++i) ok[i] = FastFn(x[i], &y[i]);
    for (size_t i = 0; i < len; ++i) out[base + i] = ok[i] ? y[i] : SlowPathFn(x[i]);
  }
}

}  // namespace internal

#define DETRAIN_CRMATH_ARRAY(Name)                                           \
  DETRAIN_HD inline void Name##Array(const float* in, float* out, size_t n) { \
    internal::MapArray<internal::Name##Fast, internal::Name##SlowPath>(in, out, n); \
  }
DETRAIN_CRMATH_ARRAY(Exp)
DETRAIN_CRMATH_ARRAY(Expm1)
DETRAIN_CRMATH_ARRAY(Exp2)
DETRAIN_CRMATH_ARRAY(Log)
DETRAIN_CRMATH_ARRAY(Log1p)
DETRAIN_CRMATH_ARRAY(Log2)
DETRAIN_CRMATH_ARRAY(Tanh)
DETRAIN_CRMATH_ARRAY(Logistic)
DETRAIN_CRMATH_ARRAY(Erf)
DETRAIN_CRMATH_ARRAY(Rsqrt)
#undef DETRAIN_CRMATH_ARRAY

// out[i] = Pow(x[i], y[i]).
DETRAIN_HD inline void PowArray(const float* x, const float* y, float* out, size_t n) {
  for (size_t base = 0; base < n; base += internal::kBlock) {
    size_t len = n - base < internal::kBlock ? n - base : internal::kBlock;
    float r[internal::kBlock];
    bool ok[internal::kBlock];
    for (size_t i = 0; i < len; ++i) ok[i] = internal::PowFast(x[base + i], y[base + i], &r[i]);
    for (size_t i = 0; i < len; ++i) {
      out[base + i] = ok[i] ? r[i] : internal::PowSlowPath(x[base + i], y[base + i]);
    }
  }
}

// out[i] = Erfinv(in[i]) (a plain loop: Erfinv has no rounding test).
DETRAIN_HD inline void ErfinvArray(const float* in, float* out, size_t n) {
  for (size_t i = 0; i < n; ++i) out[i] = Erfinv(in[i]);
}

}  // namespace detrain::crmath

#endif  // DETRAIN_BASE_MATH_CRMATH_ARRAY_H_
