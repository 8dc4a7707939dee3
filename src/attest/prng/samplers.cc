// The samplers of jax.random on top of random bits (reference/jax-random.md §6-9): uniform,
// normal, truncated_normal, bernoulli, permutation and randint, all in float32 / int32 / int64
// exactly as JAX's formulas compute them. Each elementwise sampler is one pass over chunks of
// bits, so it parallelizes like the bits themselves, with results independent of the thread
// count and Isa. Thread-safe: no shared mutable state.
#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>
#include <numeric>
#include <string>
#include <type_traits>
#include <vector>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "attest/prng/bits_engine.h"
#include "attest/prng/jax_random.h"
#include "base/math/crmath.h"

namespace detrain::prng {
namespace {

// np.array(np.sqrt(2), float32): sqrt(2) rounded to float32 (0x3FB504F3).
const float kSqrt2F = static_cast<float>(1.4142135623730951);

// JAX's mantissa trick for float32: 23 random bits under the exponent of 1.0 give [1, 2); minus
// 1 is exact. Then f * (max - min) + min: XLA contracts this multiply-add into one fused
// multiply-add on CPU (and GPU), so JAX's bits are those of fmaf; we write the fma explicitly
// (exact everywhere, so still deterministic). On [0, 1) it equals the unfused form. Finally
// lax.max(minval, value), where a NaN value stays NaN.
inline float UniformFromBits(uint32_t bits, float minval, float range) {
  const float unit = std::bit_cast<float>((bits >> 9) | 0x3F800000u) - 1.0f;
  const float value = std::fma(unit, range, minval);
  return value < minval ? minval : value;
}

// The uniform conversion of a run of words, scalar: std::fma is libm's fmaf unless the function
// is compiled for a CPU with an FMA instruction, hence the second copy with target("fma").
inline void UniformWordsBody(const uint32_t* words, size_t n, float minval, float range,
                             float* dst) {
  for (size_t j = 0; j < n; ++j) dst[j] = UniformFromBits(words[j], minval, range);
}

#if defined(__x86_64__)
__attribute__((target("fma"))) void UniformWordsFma(const uint32_t* words, size_t n, float minval,
                                                    float range, float* dst) {
  UniformWordsBody(words, n, minval, range, dst);
}

// The same conversion 8 / 16 lanes at a time, operation for operation: shift, or, subtract,
// fused multiply-add, then max(minval, value). MAXPS(a, b) is `a > b ? a : b` (b when either is
// NaN), so MAXPS(minval, value) is exactly the scalar `value < minval ? minval : value`.
__attribute__((target("avx2,fma"))) void UniformWordsAvx2(const uint32_t* words, size_t n,
                                                          float minval, float range, float* dst) {
  const __m256i one_bits = _mm256_set1_epi32(0x3F800000);
  const __m256 one = _mm256_set1_ps(1.0f), lo = _mm256_set1_ps(minval),
               scale = _mm256_set1_ps(range);
  size_t j = 0;
  for (; j + 8 <= n; j += 8) {
    const __m256i b = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(words + j));
    const __m256 unit =
        _mm256_sub_ps(_mm256_castsi256_ps(_mm256_or_si256(_mm256_srli_epi32(b, 9), one_bits)), one);
    _mm256_storeu_ps(dst + j, _mm256_max_ps(lo, _mm256_fmadd_ps(unit, scale, lo)));
  }
  UniformWordsBody(words + j, n - j, minval, range, dst + j);
}

// GCC 12's AVX-512 headers use deliberately undefined pass-through operands that
// -Wmaybe-uninitialized reports; they are ignored by the full-mask forms used here.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
__attribute__((target("avx512f"))) void UniformWordsAvx512(const uint32_t* words, size_t n,
                                                           float minval, float range, float* dst) {
  const __m512i one_bits = _mm512_set1_epi32(0x3F800000);
  const __m512 one = _mm512_set1_ps(1.0f), lo = _mm512_set1_ps(minval),
               scale = _mm512_set1_ps(range);
  size_t j = 0;
  for (; j + 16 <= n; j += 16) {
    const __m512i b = _mm512_loadu_si512(words + j);
    const __m512 unit =
        _mm512_sub_ps(_mm512_castsi512_ps(_mm512_or_si512(_mm512_srli_epi32(b, 9), one_bits)), one);
    _mm512_storeu_ps(dst + j, _mm512_max_ps(lo, _mm512_fmadd_ps(unit, scale, lo)));
  }
  UniformWordsBody(words + j, n - j, minval, range, dst + j);
}
#pragma GCC diagnostic pop

bool HaveFma() {
  static const bool have = __builtin_cpu_supports("fma");
  return have;
}
#endif

// Every path computes the same correctly rounded operations, so the choice never changes bits.
void UniformWords(Isa isa, const uint32_t* words, size_t n, float minval, float range, float* dst) {
#if defined(__x86_64__)
  if (isa == Isa::kAvx512 && IsaSupported(Isa::kAvx512)) {
    return UniformWordsAvx512(words, n, minval, range, dst);
  }
  if (isa == Isa::kAvx2 && IsaSupported(Isa::kAvx2) && HaveFma()) {
    return UniformWordsAvx2(words, n, minval, range, dst);
  }
  if (HaveFma()) return UniformWordsFma(words, n, minval, range, dst);
#endif
  UniformWordsBody(words, n, minval, range, dst);
}

struct NoPost {};

// uniform(key, minval, maxval) followed by post(u) for each element, in one pass over chunks.
template <typename Post>
Status UniformThen(Key key, float minval, float maxval, std::span<float> out,
                   const Options& options, const Post& post) {
  const float range = maxval - minval;
  return internal::ForEachBits32Chunk(key, out.size(), options,
                                      [&](size_t begin, const uint32_t* words, size_t count) {
                                        float* dst = out.data() + begin;
                                        UniformWords(options.isa, words, count, minval, range, dst);
                                        if constexpr (!std::is_same_v<Post, NoPost>) {
                                          for (size_t j = 0; j < count; ++j) dst[j] = post(dst[j]);
                                        }
                                      });
}

// Unsigned remainder with XLA's semantics for a zero divisor (x % 0 == x).
template <typename U>
inline U RemU(U x, U y) {
  return y == 0 ? x : static_cast<U>(x % y);
}

template <typename U>
Status BitsOfWidth(Key key, std::span<U> out, const Options& options) {
  if constexpr (sizeof(U) == 4) {
    return Bits32(key, out, options);
  } else {
    return Bits64(key, out, options);
  }
}

// JAX's _randint for a signed type S with unsigned twin U: 2 * nbits random bits per value
// (two split keys), combined modulo span through mult = (2^(nbits/2) % span)^2 % span, with
// every operation wrapping in U as XLA's does.
template <typename S, typename U>
Status RandIntImpl(Key key, int64_t minval_in, int64_t maxval_in, std::span<S> out,
                   const Options& options) {
  constexpr int kBits = 8 * sizeof(U);
  constexpr int64_t kMin = std::numeric_limits<S>::min();
  constexpr int64_t kMax = std::numeric_limits<S>::max();
  const bool maxval_out_of_range = maxval_in > kMax;
  const S minval = static_cast<S>(std::clamp(minval_in, kMin, kMax));
  const S maxval = static_cast<S>(std::clamp(maxval_in, kMin, kMax));
  DETRAIN_ASSIGN_OR_RETURN(auto keys, Split(key, 2, options.mode));
  std::vector<U> higher(out.size()), lower(out.size());
  DETRAIN_RETURN_IF_ERROR(BitsOfWidth<U>(keys[0], higher, options));
  DETRAIN_RETURN_IF_ERROR(BitsOfWidth<U>(keys[1], lower, options));

  U span = static_cast<U>(static_cast<U>(maxval) - static_cast<U>(minval));
  if (maxval <= minval) span = 1;
  if (maxval_out_of_range && maxval > minval) span = static_cast<U>(span + 1);
  U multiplier = RemU<U>(static_cast<U>(U{1} << (kBits / 2)), span);
  multiplier = RemU<U>(static_cast<U>(multiplier * multiplier), span);
  for (size_t i = 0; i < out.size(); ++i) {
    const U offset = RemU<U>(
        static_cast<U>(RemU<U>(higher[i], span) * multiplier + RemU<U>(lower[i], span)), span);
    out[i] = static_cast<S>(static_cast<U>(static_cast<U>(minval) + offset));
  }
  return Status::Ok();
}

}  // namespace

Status Uniform(Key key, float minval, float maxval, std::span<float> out, const Options& options) {
  return UniformThen(key, minval, maxval, out, options, NoPost{});
}

Status Normal(Key key, std::span<float> out, const Options& options) {
  const float lo = std::nextafter(-1.0f, 0.0f);  // -0.99999994f, so erfinv stays finite
  return UniformThen(key, lo, 1.0f, out, options,
                     [](float u) { return kSqrt2F * crmath::Erfinv(u); });
}

Status TruncatedNormal(Key key, float lower, float upper, std::span<float> out,
                       const Options& options) {
  const float a = crmath::Erf(lower / kSqrt2F);
  const float b = crmath::Erf(upper / kSqrt2F);
  // jnp.clip to the open interval (lower, upper): maximum first, then minimum.
  const float clip_lo = std::nextafter(lower, std::numeric_limits<float>::infinity());
  const float clip_hi = std::nextafter(upper, -std::numeric_limits<float>::infinity());
  return UniformThen(key, a, b, out, options, [=](float u) {
    float z = kSqrt2F * crmath::Erfinv(u);
    z = z < clip_lo ? clip_lo : z;
    return z > clip_hi ? clip_hi : z;
  });
}

Status Bernoulli(Key key, float p, std::span<uint8_t> out, const Options& options) {
  return internal::ForEachBits32Chunk(
      key, out.size(), options, [&](size_t begin, const uint32_t* words, size_t count) {
        for (size_t j = 0; j < count; ++j) {
          out[begin + j] = UniformFromBits(words[j], 0.0f, 1.0f) < p ? 1 : 0;
        }
      });
}

int PermutationRounds(uint64_t n) {
  // ceil(3 ln n / ln M) with M = 2^32 - 1 is the least r with M^r >= n^3 (never equal for
  // n > 1, as M is not a perfect cube), computed exactly in 128-bit integers.
  if (n <= 1) return 0;
  const unsigned __int128 cube = static_cast<unsigned __int128>(n) * n * n;
  unsigned __int128 power = 1;
  int rounds = 0;
  while (power < cube) {
    power *= 0xFFFFFFFFu;
    ++rounds;
  }
  return rounds;
}

Result<std::vector<int64_t>> Permutation(Key key, int64_t n, const Options& options) {
  if (n < 0 || n > std::numeric_limits<int32_t>::max()) {
    return InvalidArgument("permutation size " + std::to_string(n) + " is outside [0, 2^31 - 1]");
  }
  const size_t size = static_cast<size_t>(n);
  std::vector<int64_t> values(size), next(size);
  std::iota(values.begin(), values.end(), int64_t{0});
  std::vector<uint32_t> sort_keys(size), order(size);
  for (int round = 0; round < PermutationRounds(size); ++round) {
    DETRAIN_ASSIGN_OR_RETURN(auto keys, Split(key, 2, options.mode));
    key = keys[0];
    DETRAIN_RETURN_IF_ERROR(Bits32(keys[1], sort_keys, options));
    std::iota(order.begin(), order.end(), 0u);
    std::stable_sort(order.begin(), order.end(),
                     [&](uint32_t a, uint32_t b) { return sort_keys[a] < sort_keys[b]; });
    for (size_t i = 0; i < size; ++i) next[i] = values[order[i]];
    values.swap(next);
  }
  return values;
}

Status RandInt32(Key key, int64_t minval, int64_t maxval, std::span<int32_t> out,
                 const Options& options) {
  return RandIntImpl<int32_t, uint32_t>(key, minval, maxval, out, options);
}

Status RandInt64(Key key, int64_t minval, int64_t maxval, std::span<int64_t> out,
                 const Options& options) {
  return RandIntImpl<int64_t, uint64_t>(key, minval, maxval, out, options);
}

}  // namespace detrain::prng
