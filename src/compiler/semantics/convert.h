// The element conversions: `convert` (a value conversion) and `bitcast-convert` (the same bits
// read as another type of the same size), for every pair of element types (docs/ir.md).
//
//   to pred        x != 0 (a NaN is nonzero: true); -0.0f is zero: false
//   from pred      0 or 1
//   int -> int     modulo 2^bits of the destination (two's complement wrap, C++20 semantics)
//   int -> f32     rounded to nearest, ties to even (the only rounding mode detrain uses)
//   f32 -> int     NaN -> 0; otherwise truncated toward zero, then saturated to the
//                  destination's range (+inf -> max, -inf -> min, 3e9f -> s32 max, -1.5f -> u32 0)
//   f32 -> f32     the same bits (NaN payloads included)
//
// Header-only, host and CUDA device (nvcc and NVRTC); no allocation, no exceptions, no libm
// decision (the only math call is an exact truncation). Thread safety: pure functions.
// Determinism: every result is a function of the operand bits alone.
#ifndef DETRAIN_COMPILER_SEMANTICS_CONVERT_H_
#define DETRAIN_COMPILER_SEMANTICS_CONVERT_H_

#include "base/host_device.h"
#include "compiler/semantics/element_traits.h"

#if !defined(__CUDACC_RTC__)
#include <math.h>
#endif

namespace detrain::semantics {

// The bits of `x` read as To (sizeof(To) == sizeof(From)): the `bitcast-convert` op.
template <typename To, typename From>
DETRAIN_HD To BitcastElement(From x) {
  static_assert(sizeof(To) == sizeof(From), "bitcast-convert needs types of one size");
  return __builtin_bit_cast(To, x);  // std::bit_cast's builtin: GCC, Clang, nvcc and NVRTC
}

DETRAIN_HD inline uint32_t FloatBits(float x) { return BitcastElement<uint32_t>(x); }
DETRAIN_HD inline float BitsFloat(uint32_t u) { return BitcastElement<float>(u); }
DETRAIN_HD inline bool IsNan(float x) { return x != x; }

namespace internal {

// f32 -> integer: NaN -> 0, otherwise round toward zero and saturate. Computed in double, where
// every float and both range ends (as doubles: exact, or 2^64 for u64 max) are representable.
template <typename D>
DETRAIN_HD D FloatToInt(float x) {
  if (IsNan(x)) return 0;
  constexpr double kMin = static_cast<double>(ElementTraits<D>::kMin);
  constexpr double kMax = static_cast<double>(ElementTraits<D>::kMax);
  double t = ::trunc(static_cast<double>(x));
  if (t <= kMin) return ElementTraits<D>::kMin;
  if (t >= kMax) return ElementTraits<D>::kMax;
  return static_cast<D>(t);
}

}  // namespace internal

// The `convert` op: an element of type From converted to type To (rules above).
template <typename To, typename From>
DETRAIN_HD To ConvertElement(From x) {
  if constexpr (kIsPred<To>) {
    return x != From(0) ? To(1) : To(0);
  } else if constexpr (kIsFloat<From> && !kIsFloat<To>) {
    return internal::FloatToInt<To>(x);
  } else if constexpr (kIsFloat<From> && kIsFloat<To>) {
    return x;
  } else {
    return static_cast<To>(x);  // int -> int wraps; int -> float rounds to nearest even
  }
}

}  // namespace detrain::semantics

#endif  // DETRAIN_COMPILER_SEMANTICS_CONVERT_H_
