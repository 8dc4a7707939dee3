// Internal to detrain_prng: the chunked generator under every jax.random function.
//
// Work is cut into fixed chunks of kChunk elements (or kChunk threefry blocks). A chunk's output
// depends only on the key, the mode and the chunk's position, never on the thread that runs it
// or on the Isa, which is why all results are identical for any ThreadPool size and any path.
//
// Thread safety: the functions only write the output ranges of the chunks they are given.
#ifndef DETRAIN_ATTEST_PRNG_BITS_ENGINE_H_
#define DETRAIN_ATTEST_PRNG_BITS_ENGINE_H_

#include <cstddef>
#include <cstdint>
#include <functional>

#include "attest/prng/jax_random.h"

namespace detrain::prng::internal {

constexpr size_t kChunk = 4096;

// Runs fn(c) once for each c in [0, num_chunks), on `pool` when it has more than one thread.
void RunChunks(size_t num_chunks, ThreadPool* pool, const std::function<void(size_t)>& fn);

// Partitionable-mode blocks for flat indices [begin, begin + count): y0[j], y1[j] =
// threefry2x32(key, hi32(begin + j), lo32(begin + j)). count <= kChunk.
void CounterBlocks(Key key, uint64_t begin, size_t count, Isa isa, uint32_t* y0, uint32_t* y1);

// Original mode's primitive: the `count` words of JAX's threefry_2x32(key, iota_uint32(count)),
// where count[j] and count[j + h] (h = ceil(count / 2), a missing last one read as 0) form
// block j, whose two output words land at j and j + h. count must be < 2^32 - 1.
Status OriginalWords(Key key, uint64_t count, uint32_t* out, const Options& options);

// Delivers the n words of random_bits(key, 32, (n,)) for options.mode as consecutive chunks:
// consume(begin, words, count) with words[0..count) = bits[begin..begin+count). Chunks may run
// concurrently; consume must write only what belongs to [begin, begin + count).
using Bits32Consumer = std::function<void(size_t begin, const uint32_t* words, size_t count)>;
Status ForEachBits32Chunk(Key key, size_t n, const Options& options, const Bits32Consumer& consume);

}  // namespace detrain::prng::internal

#endif  // DETRAIN_ATTEST_PRNG_BITS_ENGINE_H_
