// Array variants of the float32 math library: out[i] = F(in[i]) for i < n (in and out may be the
// same array), bit for bit the scalar results (tests/base/math/crmath_array_test.cc; over all
// 2^32 inputs by `crmath_verify --arrays`, docs/math.md §9).
//
// Three implementations of each one-argument function and of pow, chosen at run time by the one
// ISA dispatcher of base/isa.h (`BestIsa`, probed once): explicit AVX-512 and AVX2 kernels
// (crmath_simd.h, x86-64 hosts built with GCC), and the portable block loop below (Isa::kScalar),
// which is also the CUDA device and non-x86 path (NVRTC gets only FArray). The portable loop
// runs the branch-free scalar fast kernel over a block of kBlock elements, recording per element
// whether the rounding test passed, then recomputes the flagged elements with the slow path;
// since the fast kernel is the very code the scalar function runs first, the results are the
// scalar ones. The vector kernels repeat the same operations lane by lane (crmath_simd.h).
// Thread-safe (the probe is a function-local static); deterministic.
#ifndef DETRAIN_BASE_MATH_CRMATH_ARRAY_H_
#define DETRAIN_BASE_MATH_CRMATH_ARRAY_H_

#include "base/host_device.h"  // <cstddef> on host, its own typedefs under NVRTC
#include "base/math/crmath_pow.h"
#include "base/math/crmath_scalar.h"
#include "base/math/crmath_simd.h"

#if !defined(__CUDACC_RTC__)
#include "base/isa.h"  // host only: NVRTC gets the portable functions alone
#endif

namespace detrain::crmath {
// nvcc compiles the portable array functions only (DETRAIN_CRMATH_SIMD is 0 there) where a C++
// file gets the dispatching ones: the inline namespace gives nvcc's versions their own symbols,
// so a program linking both has no two different definitions of one inline function.
#if defined(__CUDACC__)
inline namespace cuda_portable {
#endif

namespace array_detail {

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

}  // namespace array_detail

// Per function: array_detail::FArrayPortable, array_detail::FArrayOn(isa) (isa must be supported),
// FArrayIsa(isa) (an unsupported isa runs the portable loop: tests and benchmarks) and FArray.
#if DETRAIN_CRMATH_SIMD
#define DETRAIN_CRMATH_ARRAY_ON(Name)                                         \
  namespace array_detail {                                                    \
  inline void Name##ArrayOn(Isa isa, const float* in, float* out, size_t n) { \
    switch (isa) {                                                            \
      case Isa::kAvx512:                                                      \
        return internal::Name##ArrayAvx512(in, out, n);                       \
      case Isa::kAvx2:                                                        \
        return internal::Name##ArrayAvx2(in, out, n);                         \
      case Isa::kScalar:                                                      \
        break;                                                                \
    }                                                                         \
    Name##ArrayPortable(in, out, n);                                          \
  }                                                                           \
  }                                                                           \
  inline void Name##Array(const float* in, float* out, size_t n) {            \
    array_detail::Name##ArrayOn(BestIsa(), in, out, n);                       \
  }
#elif !defined(__CUDACC_RTC__)
#define DETRAIN_CRMATH_ARRAY_ON(Name)                                         \
  namespace array_detail {                                                    \
  inline void Name##ArrayOn(Isa, const float* in, float* out, size_t n) {     \
    Name##ArrayPortable(in, out, n);                                          \
  }                                                                           \
  }                                                                           \
  DETRAIN_HD inline void Name##Array(const float* in, float* out, size_t n) { \
    array_detail::Name##ArrayPortable(in, out, n);                            \
  }
#else  // NVRTC: device code only, no ISA choice
#define DETRAIN_CRMATH_ARRAY_ON(Name)                                         \
  DETRAIN_HD inline void Name##Array(const float* in, float* out, size_t n) { \
    array_detail::Name##ArrayPortable(in, out, n);                            \
  }
#endif
#if !defined(__CUDACC_RTC__)
#define DETRAIN_CRMATH_ARRAY_ISA(Name)                                               \
  inline void Name##ArrayIsa(Isa isa, const float* in, float* out, size_t n) {       \
    array_detail::Name##ArrayOn(IsaSupported(isa) ? isa : Isa::kScalar, in, out, n); \
  }
#else
#define DETRAIN_CRMATH_ARRAY_ISA(Name)
#endif
#define DETRAIN_CRMATH_ARRAY(Name)                                                    \
  namespace array_detail {                                                            \
  DETRAIN_HD inline void Name##ArrayPortable(const float* in, float* out, size_t n) { \
    MapArray<internal::Name##Fast, internal::Name##SlowPath>(in, out, n);             \
  }                                                                                   \
  }                                                                                   \
  DETRAIN_CRMATH_ARRAY_ON(Name)                                                       \
  DETRAIN_CRMATH_ARRAY_ISA(Name)
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
#undef DETRAIN_CRMATH_ARRAY_ISA
#undef DETRAIN_CRMATH_ARRAY_ON

// out[i] = Pow(x[i], y[i]); out may be x or y. Same three implementations as above.
namespace array_detail {
DETRAIN_HD inline void PowArrayPortable(const float* x, const float* y, float* out, size_t n) {
  for (size_t base = 0; base < n; base += kBlock) {
    size_t len = n - base < kBlock ? n - base : kBlock;
    float r[kBlock];
    bool ok[kBlock];
    for (size_t i = 0; i < len; ++i) ok[i] = internal::PowFast(x[base + i], y[base + i], &r[i]);
    for (size_t i = 0; i < len; ++i) {
      out[base + i] = ok[i] ? r[i] : internal::PowSlowPath(x[base + i], y[base + i]);
    }
  }
}
#if DETRAIN_CRMATH_SIMD
inline void PowArrayOn(Isa isa, const float* x, const float* y, float* out, size_t n) {
  switch (isa) {
    case Isa::kAvx512:
      return internal::PowArrayAvx512(x, y, out, n);
    case Isa::kAvx2:
      return internal::PowArrayAvx2(x, y, out, n);
    case Isa::kScalar:
      break;
  }
  PowArrayPortable(x, y, out, n);
}
#elif !defined(__CUDACC_RTC__)
inline void PowArrayOn(Isa, const float* x, const float* y, float* out, size_t n) {
  PowArrayPortable(x, y, out, n);
}
#endif
}  // namespace array_detail

#if DETRAIN_CRMATH_SIMD
inline void PowArray(const float* x, const float* y, float* out, size_t n) {
  array_detail::PowArrayOn(BestIsa(), x, y, out, n);
}
#else
DETRAIN_HD inline void PowArray(const float* x, const float* y, float* out, size_t n) {
  array_detail::PowArrayPortable(x, y, out, n);
}
#endif
#if !defined(__CUDACC_RTC__)
inline void PowArrayIsa(Isa isa, const float* x, const float* y, float* out, size_t n) {
  array_detail::PowArrayOn(IsaSupported(isa) ? isa : Isa::kScalar, x, y, out, n);
}
#endif

// out[i] = Erfinv(in[i]) (a plain loop: Erfinv has no rounding test).
DETRAIN_HD inline void ErfinvArray(const float* in, float* out, size_t n) {
  for (size_t i = 0; i < n; ++i) out[i] = Erfinv(in[i]);
}

#if defined(__CUDACC__)
}  // namespace cuda_portable
#endif
}  // namespace detrain::crmath

#endif  // DETRAIN_BASE_MATH_CRMATH_ARRAY_H_
