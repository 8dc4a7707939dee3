// Threefry-2x32-20: scalar, AVX2 and AVX-512 paths of one schedule (see threefry.h). The schedule,
// the rotations and the scalar block are threefry_block.h's; the vector paths apply the same
// rounds lane-wise in the same order, with their rotation amounts taken from ThreefryRotation.
// Pure functions: thread-safe, and identical bits on every path (tested).
#include "attest/prng/threefry.h"

#include <algorithm>

#include "attest/prng/threefry_block.h"

#if defined(__x86_64__) || defined(_M_X64)
#define DETRAIN_PRNG_X86 1
#include <immintrin.h>
#endif

namespace detrain::prng {
namespace {

using Injections = ThreefryInjections;

// The scalar block, forced inline into the array loops.
__attribute__((always_inline)) inline void BlockScalar(const Injections& inj, uint32_t& x0,
                                                       uint32_t& x1) {
  ThreefryBlock(inj, x0, x1);
}

void ArrayScalar(const Injections& inj, const uint32_t* x0, const uint32_t* x1, uint32_t* out0,
                 uint32_t* out1, size_t begin, size_t n) {
  for (size_t i = begin; i < n; ++i) {
    uint32_t a = x0[i], b = x1[i];
    BlockScalar(inj, a, b);
    out0[i] = a;
    out1[i] = b;
  }
}

// Counter-xor kernels take a run whose low counter word does not wrap: counters (hi, lo + j).
void CounterXorScalar(const Injections& inj, uint32_t hi, uint32_t lo, uint32_t* out, size_t n) {
  for (size_t j = 0; j < n; ++j) {
    uint32_t a = hi, b = lo + static_cast<uint32_t>(j);
    BlockScalar(inj, a, b);
    out[j] = a ^ b;
  }
}

#ifdef DETRAIN_PRNG_X86

// The rotation amounts of even (R0) and odd (R1) groups, as template arguments.
#define DETRAIN_R0 \
  ThreefryRotation(0, 0), ThreefryRotation(0, 1), ThreefryRotation(0, 2), ThreefryRotation(0, 3)
#define DETRAIN_R1 \
  ThreefryRotation(1, 0), ThreefryRotation(1, 1), ThreefryRotation(1, 2), ThreefryRotation(1, 3)

#define DETRAIN_AVX2 __attribute__((target("avx2")))
#define DETRAIN_AVX512 __attribute__((target("avx512f")))
// The round helpers must be inlined into their kernel: as calls, the vectors would go through
// memory (and vzeroupper) between rounds.
#define DETRAIN_AVX2_INLINE __attribute__((target("avx2"), always_inline)) inline
#define DETRAIN_AVX512_INLINE __attribute__((target("avx512f"), always_inline)) inline

// ---- AVX2: 8 blocks per vector, two vectors per iteration for instruction-level parallelism.
template <int R>
DETRAIN_AVX2_INLINE void Mix256(__m256i& x0, __m256i& x1) {
  x0 = _mm256_add_epi32(x0, x1);
  x1 = _mm256_or_si256(_mm256_slli_epi32(x1, R), _mm256_srli_epi32(x1, 32 - R));
  x1 = _mm256_xor_si256(x1, x0);
}

template <int A, int B, int C, int D>
DETRAIN_AVX2_INLINE void Group256(__m256i& x0, __m256i& x1, __m256i a, __m256i b) {
  Mix256<A>(x0, x1);
  Mix256<B>(x0, x1);
  Mix256<C>(x0, x1);
  Mix256<D>(x0, x1);
  x0 = _mm256_add_epi32(x0, a);
  x1 = _mm256_add_epi32(x1, b);
}

DETRAIN_AVX2_INLINE void Block256(const __m256i* va, const __m256i* vb, __m256i& x0, __m256i& x1) {
  // va[0], vb[0] are ks0, ks1; va[g+1], vb[g+1] the injections after group g.
  x0 = _mm256_add_epi32(x0, va[0]);
  x1 = _mm256_add_epi32(x1, vb[0]);
  Group256<DETRAIN_R0>(x0, x1, va[1], vb[1]);
  Group256<DETRAIN_R1>(x0, x1, va[2], vb[2]);
  Group256<DETRAIN_R0>(x0, x1, va[3], vb[3]);
  Group256<DETRAIN_R1>(x0, x1, va[4], vb[4]);
  Group256<DETRAIN_R0>(x0, x1, va[5], vb[5]);
}

DETRAIN_AVX2 void ArrayAvx2(const Injections& inj, const uint32_t* x0, const uint32_t* x1,
                            uint32_t* out0, uint32_t* out1, size_t n) {
  __m256i va[6], vb[6];
  va[0] = _mm256_set1_epi32(static_cast<int>(inj.ks[0]));
  vb[0] = _mm256_set1_epi32(static_cast<int>(inj.ks[1]));
  for (int g = 0; g < 5; ++g) {
    va[g + 1] = _mm256_set1_epi32(static_cast<int>(inj.a[g]));
    vb[g + 1] = _mm256_set1_epi32(static_cast<int>(inj.b[g]));
  }
  size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    __m256i a0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x0 + i));
    __m256i b0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x1 + i));
    __m256i a1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x0 + i + 8));
    __m256i b1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x1 + i + 8));
    Block256(va, vb, a0, b0);
    Block256(va, vb, a1, b1);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out0 + i), a0);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out1 + i), b0);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out0 + i + 8), a1);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out1 + i + 8), b1);
  }
  for (; i + 8 <= n; i += 8) {
    __m256i a = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x0 + i));
    __m256i b = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x1 + i));
    Block256(va, vb, a, b);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out0 + i), a);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out1 + i), b);
  }
  ArrayScalar(inj, x0, x1, out0, out1, i, n);
}

DETRAIN_AVX2 void CounterXorAvx2(const Injections& inj, uint32_t hi, uint32_t lo, uint32_t* out,
                                 size_t n) {
  __m256i va[6], vb[6];
  va[0] = _mm256_set1_epi32(static_cast<int>(inj.ks[0]));
  vb[0] = _mm256_set1_epi32(static_cast<int>(inj.ks[1]));
  for (int g = 0; g < 5; ++g) {
    va[g + 1] = _mm256_set1_epi32(static_cast<int>(inj.a[g]));
    vb[g + 1] = _mm256_set1_epi32(static_cast<int>(inj.b[g]));
  }
  const __m256i high = _mm256_set1_epi32(static_cast<int>(hi));
  const __m256i eight = _mm256_set1_epi32(8);
  __m256i low = _mm256_add_epi32(_mm256_set1_epi32(static_cast<int>(lo)),
                                 _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
  size_t j = 0;
  for (; j + 16 <= n; j += 16) {
    __m256i a0 = high, b0 = low, a1 = high, b1 = _mm256_add_epi32(low, eight);
    Block256(va, vb, a0, b0);
    Block256(va, vb, a1, b1);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + j), _mm256_xor_si256(a0, b0));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + j + 8), _mm256_xor_si256(a1, b1));
    low = _mm256_add_epi32(low, _mm256_add_epi32(eight, eight));
  }
  CounterXorScalar(inj, hi, lo + static_cast<uint32_t>(j), out + j, n - j);
}

// ---- AVX-512: 16 blocks per vector, native 32-bit rotate.
// GCC 12's _mm512_rol_epi32 expands to an intentionally undefined pass-through operand, which
// -Wuninitialized reports inside the system header; the operand is ignored (full mask).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
template <int R>
DETRAIN_AVX512_INLINE void Mix512(__m512i& x0, __m512i& x1) {
  x0 = _mm512_add_epi32(x0, x1);
  x1 = _mm512_xor_si512(_mm512_rol_epi32(x1, R), x0);
}

template <int A, int B, int C, int D>
DETRAIN_AVX512_INLINE void Group512(__m512i& x0, __m512i& x1, __m512i a, __m512i b) {
  Mix512<A>(x0, x1);
  Mix512<B>(x0, x1);
  Mix512<C>(x0, x1);
  Mix512<D>(x0, x1);
  x0 = _mm512_add_epi32(x0, a);
  x1 = _mm512_add_epi32(x1, b);
}

DETRAIN_AVX512_INLINE void Block512(const __m512i* va, const __m512i* vb, __m512i& x0,
                                    __m512i& x1) {
  x0 = _mm512_add_epi32(x0, va[0]);
  x1 = _mm512_add_epi32(x1, vb[0]);
  Group512<DETRAIN_R0>(x0, x1, va[1], vb[1]);
  Group512<DETRAIN_R1>(x0, x1, va[2], vb[2]);
  Group512<DETRAIN_R0>(x0, x1, va[3], vb[3]);
  Group512<DETRAIN_R1>(x0, x1, va[4], vb[4]);
  Group512<DETRAIN_R0>(x0, x1, va[5], vb[5]);
}

DETRAIN_AVX512 void ArrayAvx512(const Injections& inj, const uint32_t* x0, const uint32_t* x1,
                                uint32_t* out0, uint32_t* out1, size_t n) {
  __m512i va[6], vb[6];
  va[0] = _mm512_set1_epi32(static_cast<int>(inj.ks[0]));
  vb[0] = _mm512_set1_epi32(static_cast<int>(inj.ks[1]));
  for (int g = 0; g < 5; ++g) {
    va[g + 1] = _mm512_set1_epi32(static_cast<int>(inj.a[g]));
    vb[g + 1] = _mm512_set1_epi32(static_cast<int>(inj.b[g]));
  }
  size_t i = 0;
  for (; i + 32 <= n; i += 32) {
    __m512i a0 = _mm512_loadu_si512(x0 + i);
    __m512i b0 = _mm512_loadu_si512(x1 + i);
    __m512i a1 = _mm512_loadu_si512(x0 + i + 16);
    __m512i b1 = _mm512_loadu_si512(x1 + i + 16);
    Block512(va, vb, a0, b0);
    Block512(va, vb, a1, b1);
    _mm512_storeu_si512(out0 + i, a0);
    _mm512_storeu_si512(out1 + i, b0);
    _mm512_storeu_si512(out0 + i + 16, a1);
    _mm512_storeu_si512(out1 + i + 16, b1);
  }
  for (; i + 16 <= n; i += 16) {
    __m512i a = _mm512_loadu_si512(x0 + i);
    __m512i b = _mm512_loadu_si512(x1 + i);
    Block512(va, vb, a, b);
    _mm512_storeu_si512(out0 + i, a);
    _mm512_storeu_si512(out1 + i, b);
  }
  ArrayScalar(inj, x0, x1, out0, out1, i, n);
}

DETRAIN_AVX512 void CounterXorAvx512(const Injections& inj, uint32_t hi, uint32_t lo, uint32_t* out,
                                     size_t n) {
  __m512i va[6], vb[6];
  va[0] = _mm512_set1_epi32(static_cast<int>(inj.ks[0]));
  vb[0] = _mm512_set1_epi32(static_cast<int>(inj.ks[1]));
  for (int g = 0; g < 5; ++g) {
    va[g + 1] = _mm512_set1_epi32(static_cast<int>(inj.a[g]));
    vb[g + 1] = _mm512_set1_epi32(static_cast<int>(inj.b[g]));
  }
  const __m512i high = _mm512_set1_epi32(static_cast<int>(hi));
  const __m512i sixteen = _mm512_set1_epi32(16);
  __m512i low =
      _mm512_add_epi32(_mm512_set1_epi32(static_cast<int>(lo)),
                       _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15));
  size_t j = 0;
  for (; j + 32 <= n; j += 32) {
    __m512i a0 = high, b0 = low, a1 = high, b1 = _mm512_add_epi32(low, sixteen);
    Block512(va, vb, a0, b0);
    Block512(va, vb, a1, b1);
    _mm512_storeu_si512(out + j, _mm512_xor_si512(a0, b0));
    _mm512_storeu_si512(out + j + 16, _mm512_xor_si512(a1, b1));
    low = _mm512_add_epi32(low, _mm512_add_epi32(sixteen, sixteen));
  }
  CounterXorScalar(inj, hi, lo + static_cast<uint32_t>(j), out + j, n - j);
}
#pragma GCC diagnostic pop
#undef DETRAIN_R0
#undef DETRAIN_R1

#endif  // DETRAIN_PRNG_X86

}  // namespace

std::array<uint32_t, 2> Threefry2x32(uint32_t k0, uint32_t k1, uint32_t x0, uint32_t x1) {
  const Injections inj = ThreefryKeySchedule(k0, k1);
  BlockScalar(inj, x0, x1);
  return {x0, x1};
}

void Threefry2x32ArrayIsa(Isa isa, uint32_t k0, uint32_t k1, const uint32_t* x0, const uint32_t* x1,
                          uint32_t* out0, uint32_t* out1, size_t n) {
  const Injections inj = ThreefryKeySchedule(k0, k1);
  if (!IsaSupported(isa)) isa = Isa::kScalar;
  switch (isa) {
#ifdef DETRAIN_PRNG_X86
    case Isa::kAvx512:
      ArrayAvx512(inj, x0, x1, out0, out1, n);
      return;
    case Isa::kAvx2:
      ArrayAvx2(inj, x0, x1, out0, out1, n);
      return;
#else
    case Isa::kAvx512:
    case Isa::kAvx2:
#endif
    case Isa::kScalar:
      ArrayScalar(inj, x0, x1, out0, out1, 0, n);
      return;
  }
}

void Threefry2x32CounterXorIsa(Isa isa, uint32_t k0, uint32_t k1, uint64_t start, uint32_t* out,
                               size_t n) {
  const Injections inj = ThreefryKeySchedule(k0, k1);
  if (!IsaSupported(isa)) isa = Isa::kScalar;
  while (n > 0) {  // one run per value of the high counter word
    const uint32_t hi = static_cast<uint32_t>(start >> 32), lo = static_cast<uint32_t>(start);
    const size_t run = static_cast<size_t>(std::min<uint64_t>(n, (uint64_t{1} << 32) - lo));
    switch (isa) {
#ifdef DETRAIN_PRNG_X86
      case Isa::kAvx512:
        CounterXorAvx512(inj, hi, lo, out, run);
        break;
      case Isa::kAvx2:
        CounterXorAvx2(inj, hi, lo, out, run);
        break;
#else
      case Isa::kAvx512:
      case Isa::kAvx2:
#endif
      case Isa::kScalar:
        CounterXorScalar(inj, hi, lo, out, run);
        break;
    }
    start += run;
    out += run;
    n -= run;
  }
}

void Threefry2x32Array(uint32_t k0, uint32_t k1, const uint32_t* x0, const uint32_t* x1,
                       uint32_t* out0, uint32_t* out1, size_t n) {
  Threefry2x32ArrayIsa(BestIsa(), k0, k1, x0, x1, out0, out1, n);
}

}  // namespace detrain::prng
