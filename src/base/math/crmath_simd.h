// Explicit AVX-512 and AVX2 variants of the one-argument array functions of the float32 math
// library (docs/math.md §9), for x86-64 hosts compiled by GCC; everywhere else (nvcc, other
// architectures or compilers) this header defines DETRAIN_CRMATH_SIMD 0 and nothing else.
//
// Each ISA provides a short list of primitives on its raw vector types (namespace `prim`: the
// lane count, compares, blends, gathers, conversions); crmath_simd_kernels.inc, written once,
// builds the lane types on them and then the kernels, mirroring crmath_fast.h / crmath_scalar.h
// operation for operation. IEEE add, sub, mul, div, sqrt and the float <-> double conversions
// give the same bits in scalar and vector form, so every lane computes exactly the scalar fast
// path; lanes whose rounding test fails go to the scalar `internal::FSlowPath`, hence
// out[i] == F(in[i]) bit for bit.
//
// Why a pragma region and an .inc file instead of templates: a function only gets AVX code when
// it carries the target attribute itself (GCC refuses to inline an AVX op into a template
// without it), and a template's attribute is fixed where it is defined. So each ISA namespace
// defines its primitives under `#pragma GCC target` and includes the kernels there; every
// function defined in the region is AVX-attributed and lives in an ISA-named namespace, so no
// inline baseline function is ever compiled with AVX flags (an ODR hazard on older CPUs).
//
// Lane types: `Vd` binary64 lanes, `Vu` uint64
// lanes, `Vm` predicates. Per lane, `+ - * /` on Vd are the IEEE binary64 operations (a double
// constant converts implicitly: broadcast), and `*` is fenced so that no compiler setting can
// contract it with an add into an FMA; `Sqrt`, `Abs`, unary `-` (sign flip); comparisons give
// IEEE ordered results (`!=` unordered, as in C++); `Select(m, a, b)` = m ? a : b; Vu has
// `+ - & | << >>` (logical) mod 2^64, `ShrA` (arithmetic shift), `GtU`/`LtU`, `MulSmall` (lanes
// and factor < 2^32); `AsBits`/`AsDouble` reinterpret; `TruncToInt`/`IntToDouble` convert
// exactly for integers below 2^51 in magnitude; `Gather(base, idx)` loads base[idx] per lane,
// `Lookup32(t, idx)` the same for a 32-entry table and idx < 32 (AVX-512: two-register permutes,
// much faster than a gather). `prim::LoadF`/`StoreF`/`ToDouble`/`ToFloat` move kLanes floats
// (conversions round to nearest); `prim::WidenBits` gives their bit patterns as uint64 lanes.
//
// Pure functions: thread-safe. Callers must check the CPU first (crmath_array.h `IsaSupported`).
#ifndef DETRAIN_BASE_MATH_CRMATH_SIMD_H_
#define DETRAIN_BASE_MATH_CRMATH_SIMD_H_

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !defined(__CUDACC__)
#define DETRAIN_CRMATH_SIMD 1
#else
#define DETRAIN_CRMATH_SIMD 0
#endif

#if DETRAIN_CRMATH_SIMD

#include <immintrin.h>

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "base/math/crmath_pow.h"
#include "base/math/crmath_scalar.h"

namespace detrain::crmath::internal {
// kErfTable by columns, each padded to 32 rows, for Lookup32: the same doubles, copied.
inline constexpr int kErfRows = sizeof(kErfTable) / sizeof(kErfTable[0]);
static_assert(kErfRows <= 32, "Lookup32 covers 32 rows");
struct ErfColumns {
  alignas(64) double c[kErfDeg + 1][32];
};
constexpr ErfColumns MakeErfColumns() {
  ErfColumns t{};
  for (int n = 0; n <= kErfDeg; ++n) {
    for (int j = 0; j < kErfRows; ++j) t.c[n][j] = kErfTable[j][n];
  }
  return t;
}
inline constexpr ErfColumns kErfColumns = MakeErfColumns();
}  // namespace detrain::crmath::internal

// Everything in the ISA regions is inlined into the per-function array loop.
#define DETRAIN_SIMD_INLINE inline __attribute__((always_inline))
// The product is materialized before any use, so it cannot be fused with an add (the scalar
// code runs on SSE2, which has no FMA; the vector units do).
#define DETRAIN_SIMD_NO_FMA(p) __asm__("" : "+v"(p))

// Vector parameters between functions of one region do not cross an ABI boundary; GCC 12's
// AVX-512 intrinsics read a deliberately undefined register (GCC bug 105593).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wpsabi"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

// ---- AVX-512 (F + DQ): 8 binary64 lanes ------------------------------------------------------
namespace detrain::crmath::internal::simd_avx512 {
#pragma GCC push_options
#pragma GCC target("avx512f,avx512dq")
namespace prim {

inline constexpr int kLanes = 8;
using D = __m512d;   // binary64 lanes
using U = __m512i;   // 64-bit integer lanes
using M = __mmask8;  // lane predicates
using F = __m256;    // the floats of one vector

DETRAIN_SIMD_INLINE D SetD(double c) { return _mm512_set1_pd(c); }
template <int kPredicate>
DETRAIN_SIMD_INLINE M Cmp(D a, D b) {
  return _mm512_cmp_pd_mask(a, b, kPredicate);
}
DETRAIN_SIMD_INLINE unsigned Bits(M m) { return m; }
DETRAIN_SIMD_INLINE D Blend(M m, D a, D b) { return _mm512_mask_blend_pd(m, b, a); }
DETRAIN_SIMD_INLINE U Blend(M m, U a, U b) { return _mm512_mask_blend_epi64(m, b, a); }
DETRAIN_SIMD_INLINE D Sqrt(D a) { return _mm512_sqrt_pd(a); }
DETRAIN_SIMD_INLINE U ShrA(U a, int n) { return _mm512_sra_epi64(a, _mm_cvtsi32_si128(n)); }
DETRAIN_SIMD_INLINE M GtU(U a, U b) { return _mm512_cmpgt_epu64_mask(a, b); }
DETRAIN_SIMD_INLINE U MulSmall(U a, U c) { return _mm512_mul_epu32(a, c); }
DETRAIN_SIMD_INLINE U TruncToInt(D a) { return _mm512_cvttpd_epi64(a); }
DETRAIN_SIMD_INLINE D IntToDouble(U a) { return _mm512_cvtepi64_pd(a); }
DETRAIN_SIMD_INLINE D Gather(const double* base, U idx) {
  return _mm512_i64gather_pd(idx, base, 8);
}
DETRAIN_SIMD_INLINE D Lookup32(const double* t, U idx) {
  D lo = _mm512_permutex2var_pd(_mm512_loadu_pd(t), idx, _mm512_loadu_pd(t + 8));
  D hi = _mm512_permutex2var_pd(_mm512_loadu_pd(t + 16), idx, _mm512_loadu_pd(t + 24));
  return _mm512_mask_blend_pd(_mm512_test_epi64_mask(idx, _mm512_set1_epi64(16)), lo, hi);
}
DETRAIN_SIMD_INLINE F LoadF(const float* p) { return _mm256_loadu_ps(p); }
DETRAIN_SIMD_INLINE void StoreF(float* p, F x) { _mm256_storeu_ps(p, x); }
DETRAIN_SIMD_INLINE D ToDouble(F x) { return _mm512_cvtps_pd(x); }
DETRAIN_SIMD_INLINE F ToFloat(D x) { return _mm512_cvtpd_ps(x); }
// The floats' bit patterns, zero-extended into 64-bit lanes.
DETRAIN_SIMD_INLINE U WidenBits(F x) { return _mm512_cvtepu32_epi64(_mm256_castps_si256(x)); }

}  // namespace prim
#include "base/math/crmath_simd_kernels.inc"
#pragma GCC pop_options
}  // namespace detrain::crmath::internal::simd_avx512

// ---- AVX2: 4 binary64 lanes --------------------------------------------------------------------
// Predicates are all-ones / all-zeros 64-bit lanes. AVX2 has no unsigned or 64-bit arithmetic
// compares, shifts or conversions: those are composed from exact integer operations.
namespace detrain::crmath::internal::simd_avx2 {
#pragma GCC push_options
#pragma GCC target("avx2")
namespace prim {

inline constexpr int kLanes = 4;
using D = __m256d;
using U = __m256i;
using M = __m256i;
using F = __m128;

DETRAIN_SIMD_INLINE D SetD(double c) { return _mm256_set1_pd(c); }
template <int kPredicate>
DETRAIN_SIMD_INLINE M Cmp(D a, D b) {
  return _mm256_castpd_si256(_mm256_cmp_pd(a, b, kPredicate));
}
DETRAIN_SIMD_INLINE unsigned Bits(M m) { return _mm256_movemask_pd(_mm256_castsi256_pd(m)); }
DETRAIN_SIMD_INLINE D Blend(M m, D a, D b) {
  return _mm256_blendv_pd(b, a, _mm256_castsi256_pd(m));
}
DETRAIN_SIMD_INLINE U Blend(M m, U a, U b) { return _mm256_blendv_epi8(b, a, m); }
DETRAIN_SIMD_INLINE D Sqrt(D a) { return _mm256_sqrt_pd(a); }
// With s = 2^63: a >> n (arithmetic) = ((a ^ s) >> n) - (s >> n) (logical shifts).
DETRAIN_SIMD_INLINE U ShrA(U a, int n) {
  U s = _mm256_set1_epi64x(INT64_MIN);
  __m128i count = _mm_cvtsi32_si128(n);
  return _mm256_sub_epi64(_mm256_srl_epi64(_mm256_xor_si256(a, s), count),
                          _mm256_srl_epi64(s, count));
}
// Unsigned order is the signed order of the operands with their sign bits flipped.
DETRAIN_SIMD_INLINE M GtU(U a, U b) {
  U s = _mm256_set1_epi64x(INT64_MIN);
  return _mm256_cmpgt_epi64(_mm256_xor_si256(a, s), _mm256_xor_si256(b, s));
}
DETRAIN_SIMD_INLINE U MulSmall(U a, U c) { return _mm256_mul_epu32(a, c); }
// For integers below 2^51 in magnitude, i + 1.5 2^52 is exact and its low bits hold i (two's
// complement): the bit patterns differ by exactly i.
inline constexpr double kIntShifter = 0x1.8p52;
DETRAIN_SIMD_INLINE U TruncToInt(D a) {
  D t =
      _mm256_add_pd(_mm256_round_pd(a, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC), SetD(kIntShifter));
  return _mm256_sub_epi64(_mm256_castpd_si256(t), _mm256_castpd_si256(SetD(kIntShifter)));
}
DETRAIN_SIMD_INLINE D IntToDouble(U a) {
  U t = _mm256_add_epi64(a, _mm256_castpd_si256(SetD(kIntShifter)));
  return _mm256_sub_pd(_mm256_castsi256_pd(t), SetD(kIntShifter));
}
DETRAIN_SIMD_INLINE D Gather(const double* base, U idx) {
  return _mm256_i64gather_pd(base, idx, 8);
}
DETRAIN_SIMD_INLINE D Lookup32(const double* t, U idx) { return Gather(t, idx); }
DETRAIN_SIMD_INLINE F LoadF(const float* p) { return _mm_loadu_ps(p); }
DETRAIN_SIMD_INLINE void StoreF(float* p, F x) { _mm_storeu_ps(p, x); }
DETRAIN_SIMD_INLINE D ToDouble(F x) { return _mm256_cvtps_pd(x); }
DETRAIN_SIMD_INLINE F ToFloat(D x) { return _mm256_cvtpd_ps(x); }
DETRAIN_SIMD_INLINE U WidenBits(F x) { return _mm256_cvtepu32_epi64(_mm_castps_si128(x)); }

}  // namespace prim
#include "base/math/crmath_simd_kernels.inc"
#pragma GCC pop_options
}  // namespace detrain::crmath::internal::simd_avx2

#pragma GCC diagnostic pop
#undef DETRAIN_SIMD_INLINE
#undef DETRAIN_SIMD_NO_FMA

// ---- Per-ISA entry points: FArrayAvx512 / FArrayAvx2 (the CPU must support the ISA) ----------
namespace detrain::crmath::internal {
#define DETRAIN_CRMATH_SIMD_ENTRIES(Name)                                         \
  inline void Name##ArrayAvx512(const float* in, float* out, size_t n) {          \
    simd_avx512::MapArray<simd_avx512::Name##Approx, Name##SlowPath>(in, out, n); \
  }                                                                               \
  inline void Name##ArrayAvx2(const float* in, float* out, size_t n) {            \
    simd_avx2::MapArray<simd_avx2::Name##Approx, Name##SlowPath>(in, out, n);     \
  }
DETRAIN_CRMATH_SIMD_ENTRIES(Exp)
DETRAIN_CRMATH_SIMD_ENTRIES(Expm1)
DETRAIN_CRMATH_SIMD_ENTRIES(Exp2)
DETRAIN_CRMATH_SIMD_ENTRIES(Log)
DETRAIN_CRMATH_SIMD_ENTRIES(Log1p)
DETRAIN_CRMATH_SIMD_ENTRIES(Log2)
DETRAIN_CRMATH_SIMD_ENTRIES(Tanh)
DETRAIN_CRMATH_SIMD_ENTRIES(Logistic)
DETRAIN_CRMATH_SIMD_ENTRIES(Erf)
DETRAIN_CRMATH_SIMD_ENTRIES(Rsqrt)
#undef DETRAIN_CRMATH_SIMD_ENTRIES
inline void PowArrayAvx512(const float* x, const float* y, float* out, size_t n) {
  simd_avx512::PowMapArray(x, y, out, n);
}
inline void PowArrayAvx2(const float* x, const float* y, float* out, size_t n) {
  simd_avx2::PowMapArray(x, y, out, n);
}
}  // namespace detrain::crmath::internal

#endif  // DETRAIN_CRMATH_SIMD
#endif  // DETRAIN_BASE_MATH_CRMATH_SIMD_H_
