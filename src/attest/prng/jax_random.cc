// Keys, split, fold_in and random bits of jax.random (reference/jax-random.md §2-5), and the
// chunked engine of bits_engine.h. The samplers are in samplers.cc. Pure functions of their
// arguments; chunked work gives the same bits for any thread count (see jax_random.h).
#include "attest/prng/jax_random.h"

#include <algorithm>
#include <string>
#include <vector>

#include "attest/prng/bits_engine.h"
#include "base/thread_pool.h"

// The chunk buffers below are filled for [0, m) before the threefry call reads them; GCC 12's
// -Wmaybe-uninitialized cannot see that through the const pointer arguments.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

namespace detrain::prng {

// ---- Engine -------------------------------------------------------------------------------
namespace internal {
namespace {

constexpr uint64_t kMaxOriginalCount = 0xFFFFFFFFull;  // JAX switches to sub-keys from here on

Status CheckOriginalCount(uint64_t count) {
  if (count < kMaxOriginalCount) return Status::Ok();
  return Unimplemented("original-mode random bits need " + std::to_string(count) +
                       " 32-bit words; detrain supports fewer than 2^32 - 1 (JAX switches to "
                       "split sub-keys beyond that)");
}

size_t NumChunks(uint64_t n) { return static_cast<size_t>((n + kChunk - 1) / kChunk); }

}  // namespace

void RunChunks(size_t num_chunks, ThreadPool* pool, const std::function<void(size_t)>& fn) {
  if (pool != nullptr && pool->size() > 1 && num_chunks > 1) {
    pool->ParallelFor(num_chunks, fn);
    return;
  }
  for (size_t c = 0; c < num_chunks; ++c) fn(c);
}

void CounterBlocks(Key key, uint64_t begin, size_t count, Isa isa, uint32_t* y0, uint32_t* y1) {
  for (size_t j = 0; j < count; ++j) {
    const uint64_t i = begin + j;
    y0[j] = static_cast<uint32_t>(i >> 32);
    y1[j] = static_cast<uint32_t>(i);
  }
  Threefry2x32ArrayIsa(isa, key.hi, key.lo, y0, y1, y0, y1, count);
}

Status OriginalWords(Key key, uint64_t count, uint32_t* out, const Options& options) {
  DETRAIN_RETURN_IF_ERROR(CheckOriginalCount(count));
  const uint64_t half = (count + 1) / 2;  // number of blocks
  RunChunks(NumChunks(half), options.pool, [&](size_t c) {
    uint32_t y0[kChunk], y1[kChunk];
    const uint64_t begin = uint64_t{c} * kChunk;
    const size_t m = static_cast<size_t>(std::min<uint64_t>(kChunk, half - begin));
    for (size_t j = 0; j < m; ++j) {
      const uint64_t p = begin + j;
      y0[j] = static_cast<uint32_t>(p);
      y1[j] = p + half < count ? static_cast<uint32_t>(p + half) : 0u;  // the pad word is 0
    }
    Threefry2x32ArrayIsa(options.isa, key.hi, key.lo, y0, y1, y0, y1, m);
    for (size_t j = 0; j < m; ++j) {
      const uint64_t p = begin + j;
      out[p] = y0[j];
      if (p + half < count) out[p + half] = y1[j];
    }
  });
  return Status::Ok();
}

Status ForEachBits32Chunk(Key key, size_t n, const Options& options,
                          const Bits32Consumer& consume) {
  if (options.mode == Mode::kOriginal) {
    std::vector<uint32_t> words(n);
    DETRAIN_RETURN_IF_ERROR(OriginalWords(key, n, words.data(), options));
    RunChunks(NumChunks(n), options.pool, [&](size_t c) {
      const size_t begin = c * kChunk;
      consume(begin, words.data() + begin, std::min(kChunk, n - begin));
    });
    return Status::Ok();
  }
  RunChunks(NumChunks(n), options.pool, [&](size_t c) {
    uint32_t words[kChunk];
    const size_t begin = c * kChunk;
    const size_t m = std::min(kChunk, n - begin);
    Threefry2x32CounterXorIsa(options.isa, key.hi, key.lo, begin, words, m);
    consume(begin, words, m);
  });
  return Status::Ok();
}

}  // namespace internal

using internal::kChunk;

// ---- Modes and keys -----------------------------------------------------------------------
std::string_view ModeName(Mode mode) {
  return mode == Mode::kPartitionable ? "partitionable" : "original";
}

Result<Mode> ParseMode(std::string_view name) {
  if (name == "partitionable") return Mode::kPartitionable;
  if (name == "original") return Mode::kOriginal;
  return InvalidArgument("unknown PRNG mode '" + std::string(name) +
                         "' (expected partitionable or original)");
}

Key KeyFromUnsignedSeed(uint64_t seed) {
  return Key{static_cast<uint32_t>(seed >> 32), static_cast<uint32_t>(seed)};
}

Key KeyFromSeed(int64_t seed) { return KeyFromUnsignedSeed(static_cast<uint64_t>(seed)); }

Key KeyFromSeedX64Disabled(int64_t seed) {
  return Key{0, static_cast<uint32_t>(static_cast<uint64_t>(seed))};
}

Key FoldIn(Key key, uint32_t data) {
  const auto y = Threefry2x32(key.hi, key.lo, 0, data);
  return Key{y[0], y[1]};
}

Result<std::vector<Key>> Split(Key key, uint64_t n, Mode mode) {
  std::vector<Key> keys(n);
  if (mode == Mode::kPartitionable) {
    for (uint64_t i = 0; i < n; ++i) {
      const auto y =
          Threefry2x32(key.hi, key.lo, static_cast<uint32_t>(i >> 32), static_cast<uint32_t>(i));
      keys[i] = Key{y[0], y[1]};
    }
    return keys;
  }
  if (n >= internal::kMaxOriginalCount / 2) {
    return Unimplemented("original-mode split into " + std::to_string(n) +
                         " keys is beyond 2^31 - 1, which detrain does not support");
  }
  std::vector<uint32_t> words(2 * n);
  Options options;
  options.mode = mode;
  DETRAIN_RETURN_IF_ERROR(internal::OriginalWords(key, 2 * n, words.data(), options));
  for (uint64_t i = 0; i < n; ++i) keys[i] = Key{words[2 * i], words[2 * i + 1]};
  return keys;
}

// ---- Bits ---------------------------------------------------------------------------------
namespace {

// 8- and 16-bit values. Partitionable: the low bits of the 32-bit value of each index.
// Original: the 32-bit words of ceil(width * n / 32) counts, each cut into 32 / width values,
// lowest bits first (a little-endian view).
template <typename T>
Status NarrowBits(Key key, std::span<T> out, const Options& options) {
  constexpr int kWidth = 8 * sizeof(T);
  if (options.mode == Mode::kPartitionable) {
    return internal::ForEachBits32Chunk(key, out.size(), options,
                                        [&](size_t begin, const uint32_t* words, size_t count) {
                                          for (size_t j = 0; j < count; ++j)
                                            out[begin + j] = static_cast<T>(words[j]);
                                        });
  }
  constexpr size_t kPerWord = 32 / kWidth;
  const uint64_t num_words = (uint64_t{out.size()} * kWidth + 31) / 32;
  std::vector<uint32_t> words(num_words);
  DETRAIN_RETURN_IF_ERROR(internal::OriginalWords(key, num_words, words.data(), options));
  for (size_t i = 0; i < out.size(); ++i) {
    out[i] = static_cast<T>(words[i / kPerWord] >> (kWidth * (i % kPerWord)));
  }
  return Status::Ok();
}

}  // namespace

Status Bits8(Key key, std::span<uint8_t> out, const Options& options) {
  return NarrowBits(key, out, options);
}

Status Bits16(Key key, std::span<uint16_t> out, const Options& options) {
  return NarrowBits(key, out, options);
}

Status Bits32(Key key, std::span<uint32_t> out, const Options& options) {
  return internal::ForEachBits32Chunk(
      key, out.size(), options, [&](size_t begin, const uint32_t* words, size_t count) {
        std::copy(words, words + count, out.begin() + static_cast<ptrdiff_t>(begin));
      });
}

// Partitionable: (y0 << 32) | y1 of block (hi32(i), lo32(i)). Original: the 2n words of
// threefry_2x32(key, iota(2n)) as halves A, B with value j = (A[j] << 32) | B[j]; since the
// pairing puts counts j and j + n in one block, that is (y0 << 32) | y1 of block (j, j + n).
Status Bits64(Key key, std::span<uint64_t> out, const Options& options) {
  const uint64_t n = out.size();
  const bool original = options.mode == Mode::kOriginal;
  if (original && n >= internal::kMaxOriginalCount / 2) {
    return Unimplemented(
        "original-mode 64-bit random bits beyond 2^31 - 1 values are not "
        "supported");
  }
  internal::RunChunks((n + kChunk - 1) / kChunk, options.pool, [&](size_t c) {
    uint32_t y0[kChunk], y1[kChunk];
    const uint64_t begin = uint64_t{c} * kChunk;
    const size_t m = static_cast<size_t>(std::min<uint64_t>(kChunk, n - begin));
    if (original) {
      for (size_t j = 0; j < m; ++j) {
        y0[j] = static_cast<uint32_t>(begin + j);
        y1[j] = static_cast<uint32_t>(begin + j + n);
      }
      Threefry2x32ArrayIsa(options.isa, key.hi, key.lo, y0, y1, y0, y1, m);
    } else {
      internal::CounterBlocks(key, begin, m, options.isa, y0, y1);
    }
    for (size_t j = 0; j < m; ++j) out[begin + j] = (uint64_t{y0[j]} << 32) | y1[j];
  });
  return Status::Ok();
}

}  // namespace detrain::prng
