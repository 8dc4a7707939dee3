// jax.random, bit for bit: keys, split, fold_in, random bits and the samplers built on them.
//
// Every function reproduces the JAX function of the same name for a threefry2x32 key, in either
// setting of `jax_threefry_partitionable` (Mode), as specified in shared/reference/jax-random.md
// and checked against vectors from real JAX (tests/attest/prng/testdata/jax_vectors.json).
// Arrays are flat, in row-major order: for these functions a shape matters only through its
// element count, so callers pass spans of prod(shape) elements.
//
// Integer outputs (keys, bits, bernoulli, permutation, randint) and `uniform` equal JAX's
// exactly. `normal`, `truncated_normal` and the initializers use detrain's correctly rounded
// erf and its erfinv (base/math/crmath.h: Giles' polynomial as XLA expands it, but over a
// correctly rounded log1p) where XLA uses its own float32 log1p and erf, so they can differ
// from JAX in the last bits; docs/prng.md gives the measured differences.
//
// Thread safety: pure functions of their arguments. With Options::pool set, work is split into
// fixed chunks whose results do not depend on which thread computes them, so the outputs are
// identical for any pool size, and for any Isa.
#ifndef DETRAIN_ATTEST_PRNG_JAX_RANDOM_H_
#define DETRAIN_ATTEST_PRNG_JAX_RANDOM_H_

#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "attest/prng/threefry.h"
#include "base/status.h"

namespace detrain {
class ThreadPool;
}

namespace detrain::prng {

// jax_threefry_partitionable = True (JAX's default since 0.5.0) or False ("original").
enum class Mode { kPartitionable, kOriginal };

std::string_view ModeName(Mode mode);  // "partitionable" | "original"
Result<Mode> ParseMode(std::string_view name);

struct Options {
  Mode mode = Mode::kPartitionable;
  Isa isa = BestIsa();         // the threefry path; every path gives the same bits
  ThreadPool* pool = nullptr;  // null: run on the calling thread
};

// ---- Keys ---------------------------------------------------------------------------------
// jax.random.key(seed) with jax_enable_x64 = True: the 64-bit seed's two words, {hi, lo}.
Key KeyFromSeed(int64_t seed);
Key KeyFromUnsignedSeed(uint64_t seed);  // np.uint64 seeds: same bit-cast
// What JAX computes with x64 disabled (outside jit): the seed becomes int32 by keeping its low 32
// bits, so the key is {0, uint32(seed)}. Offered for comparing with such runs only.
Key KeyFromSeedX64Disabled(int64_t seed);

// split(key, n): n keys, flattened. Partitionable: key i = threefry(key, hi32(i), lo32(i)), so
// split(key, n)[i] == FoldIn(key, i). Original: words of threefry_2x32(key, iota(2n)).
Result<std::vector<Key>> Split(Key key, uint64_t n, Mode mode);
// fold_in(key, data): threefry(key, 0, data). Mode-independent.
Key FoldIn(Key key, uint32_t data);

// ---- Bits ---------------------------------------------------------------------------------
// jax.random.bits(key, shape, uint{8,16,32,64}) with out.size() == prod(shape).
Status Bits8(Key key, std::span<uint8_t> out, const Options& options);
Status Bits16(Key key, std::span<uint16_t> out, const Options& options);
Status Bits32(Key key, std::span<uint32_t> out, const Options& options);
Status Bits64(Key key, std::span<uint64_t> out, const Options& options);

// ---- Samplers (float32, as jax.random with dtype=float32) --------------------------------
// uniform(key, shape, float32, minval, maxval): mantissa trick, then max(minval, f*(max-min)+min).
Status Uniform(Key key, float minval, float maxval, std::span<float> out, const Options& options);
// normal(key, shape, float32): sqrt(2) * erfinv(uniform(nextafter(-1, 0), 1)).
Status Normal(Key key, std::span<float> out, const Options& options);
// truncated_normal(key, lower, upper, shape, float32), clipped to the open interval.
Status TruncatedNormal(Key key, float lower, float upper, std::span<float> out,
                       const Options& options);
// bernoulli(key, p (float32), shape): uniform < p; out holds 0 or 1.
Status Bernoulli(Key key, float p, std::span<uint8_t> out, const Options& options);
// permutation(key, n): JAX's sort-based shuffle of 0..n-1 (rounds of stable sorts by random
// 32-bit keys). n < 2^31.
Result<std::vector<int64_t>> Permutation(Key key, int64_t n, const Options& options);
// randint(key, shape, minval, maxval, int32 | int64). For int32, bounds outside the int32 range
// are clipped as JAX does (maxval = 2^31 means "up to INT32_MAX inclusive").
Status RandInt32(Key key, int64_t minval, int64_t maxval, std::span<int32_t> out,
                 const Options& options);
Status RandInt64(Key key, int64_t minval, int64_t maxval, std::span<int64_t> out,
                 const Options& options);

// The number of sort rounds permutation uses for n elements: ceil(3 ln n / ln(2^32 - 1)).
int PermutationRounds(uint64_t n);

}  // namespace detrain::prng

#endif  // DETRAIN_ATTEST_PRNG_JAX_RANDOM_H_
