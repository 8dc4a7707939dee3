// XXH3-128 with the default secret and seed 0, for host and CUDA device code: the hash the step
// digests use (state_digest.h, schemas/bundle.md §5.2), computed where the state lies. The host
// side of detrain hashes with libxxhash; this header is the same function written from the
// algorithm's specification (Cyan4973/xxHash doc/xxhash_spec.md, "XXH3 Algorithm Description"),
// so that a GPU can digest the state it holds without copying it out. Tests compare the two on
// every length class (0, 1-3, 4-8, 9-16, 17-128, 129-240, > 240 bytes) and many lengths.
//
// Only what the digests need: one contiguous input, the default 192-byte secret, seed 0 (every
// seed term of the specification drops out). Inputs are read as little-endian words, as the
// algorithm defines them; detrain's hosts and GPUs are little-endian.
//
// Header-only (base/host_device.h); no allocation. Thread safety: pure functions. Determinism:
// 64-bit wrap-around integer arithmetic only.
#ifndef DETRAIN_ATTEST_XXH3_BLOCK_H_
#define DETRAIN_ATTEST_XXH3_BLOCK_H_

#include "base/host_device.h"

#if defined(__CUDA_ARCH__)
#define DETRAIN_XXH3_TABLE static __device__ const
#else
#define DETRAIN_XXH3_TABLE inline constexpr
#endif

namespace detrain::attest::xxh3 {

// The specification's default secret ("kSecret").
DETRAIN_XXH3_TABLE uint8_t kSecret[192] = {
    0xb8, 0xfe, 0x6c, 0x39, 0x23, 0xa4, 0x4b, 0xbe, 0x7c, 0x01, 0x81, 0x2c, 0xf7, 0x21, 0xad, 0x1c,
    0xde, 0xd4, 0x6d, 0xe9, 0x83, 0x90, 0x97, 0xdb, 0x72, 0x40, 0xa4, 0xa4, 0xb7, 0xb3, 0x67, 0x1f,
    0xcb, 0x79, 0xe6, 0x4e, 0xcc, 0xc0, 0xe5, 0x78, 0x82, 0x5a, 0xd0, 0x7d, 0xcc, 0xff, 0x72, 0x21,
    0xb8, 0x08, 0x46, 0x74, 0xf7, 0x43, 0x24, 0x8e, 0xe0, 0x35, 0x90, 0xe6, 0x81, 0x3a, 0x26, 0x4c,
    0x3c, 0x28, 0x52, 0xbb, 0x91, 0xc3, 0x00, 0xcb, 0x88, 0xd0, 0x65, 0x8b, 0x1b, 0x53, 0x2e, 0xa3,
    0x71, 0x64, 0x48, 0x97, 0xa2, 0x0d, 0xf9, 0x4e, 0x38, 0x19, 0xef, 0x46, 0xa9, 0xde, 0xac, 0xd8,
    0xa8, 0xfa, 0x76, 0x3f, 0xe3, 0x9c, 0x34, 0x3f, 0xf9, 0xdc, 0xbb, 0xc7, 0xc7, 0x0b, 0x4f, 0x1d,
    0x8a, 0x51, 0xe0, 0x4b, 0xcd, 0xb4, 0x59, 0x31, 0xc8, 0x9f, 0x7e, 0xc9, 0xd9, 0x78, 0x73, 0x64,
    0xea, 0xc5, 0xac, 0x83, 0x34, 0xd3, 0xeb, 0xc3, 0xc5, 0x81, 0xa0, 0xff, 0xfa, 0x13, 0x63, 0xeb,
    0x17, 0x0d, 0xdd, 0x51, 0xb7, 0xf0, 0xda, 0x49, 0xd3, 0x16, 0x55, 0x26, 0x29, 0xd4, 0x68, 0x9e,
    0x2b, 0x16, 0xbe, 0x58, 0x7d, 0x47, 0xa1, 0xfc, 0x8f, 0xf8, 0xb8, 0xd1, 0x7a, 0xd0, 0x31, 0xce,
    0x45, 0xcb, 0x3a, 0x8f, 0x95, 0x16, 0x04, 0x28, 0xaf, 0xd7, 0xfb, 0xca, 0xbb, 0x4b, 0x40, 0x7e,
};

inline constexpr uint64_t kPrime32_1 = 0x9E3779B1u, kPrime32_2 = 0x85EBCA77u,
                          kPrime32_3 = 0xC2B2AE3Du;
inline constexpr uint64_t kPrime64_1 = 0x9E3779B185EBCA87u, kPrime64_2 = 0xC2B2AE3D27D4EB4Fu,
                          kPrime64_3 = 0x165667B19E3779F9u, kPrime64_4 = 0x85EBCA77C2B2AE63u,
                          kPrime64_5 = 0x27D4EB2F165667C5u;
inline constexpr uint64_t kPrimeMx1 = 0x165667919E3779F9u, kPrimeMx2 = 0x9FB21C651E98DF25u;

struct Hash128 {
  uint64_t low, high;
};

// Little-endian reads: on a GPU, whole words where the address allows (the tensors' data) and
// bytes otherwise (the secret's odd offsets, a header's); on the host, unaligned loads.
DETRAIN_HD inline uint64_t Read64(const uint8_t* p) {
#if defined(__CUDA_ARCH__)
  if ((reinterpret_cast<uint64_t>(p) & 7) == 0) return *reinterpret_cast<const uint64_t*>(p);
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | p[i];
  return v;
#else
  static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "XXH3 reads little-endian words");
  uint64_t v;
  __builtin_memcpy(&v, p, sizeof v);
  return v;
#endif
}
DETRAIN_HD inline uint32_t Read32(const uint8_t* p) {
  return static_cast<uint32_t>(p[0]) | static_cast<uint32_t>(p[1]) << 8 |
         static_cast<uint32_t>(p[2]) << 16 | static_cast<uint32_t>(p[3]) << 24;
}
DETRAIN_HD inline uint64_t Secret64(int offset) { return Read64(kSecret + offset); }
DETRAIN_HD inline uint32_t Secret32(int offset) { return Read32(kSecret + offset); }

// The full product of two 64-bit words.
DETRAIN_HD inline Hash128 Multiply128(uint64_t a, uint64_t b) {
#if defined(__CUDA_ARCH__)
  return {a * b, __umul64hi(a, b)};
#else
  const unsigned __int128 p = static_cast<unsigned __int128>(a) * b;
  return {static_cast<uint64_t>(p), static_cast<uint64_t>(p >> 64)};
#endif
}
DETRAIN_HD inline uint64_t MultiplyFold(uint64_t a, uint64_t b) {
  const Hash128 p = Multiply128(a, b);
  return p.low ^ p.high;
}
DETRAIN_HD inline uint32_t Swap32(uint32_t x) {
  return (x >> 24) | ((x >> 8) & 0xff00u) | ((x << 8) & 0xff0000u) | (x << 24);
}
DETRAIN_HD inline uint64_t Swap64(uint64_t x) {
  return static_cast<uint64_t>(Swap32(static_cast<uint32_t>(x))) << 32 |
         Swap32(static_cast<uint32_t>(x >> 32));
}
DETRAIN_HD inline uint32_t Rotl32(uint32_t x, int r) { return (x << r) | (x >> (32 - r)); }

DETRAIN_HD inline uint64_t Avalanche(uint64_t x) {
  x ^= x >> 37;
  x *= kPrimeMx1;
  return x ^ (x >> 32);
}
DETRAIN_HD inline uint64_t AvalancheXxh64(uint64_t x) {
  x ^= x >> 33;
  x *= kPrime64_2;
  x ^= x >> 29;
  x *= kPrime64_3;
  return x ^ (x >> 32);
}

// 0 to 16 bytes.
DETRAIN_HD inline Hash128 HashSmall(const uint8_t* in, uint64_t len) {
  if (len == 0) {
    return {AvalancheXxh64(Secret64(64) ^ Secret64(72)),
            AvalancheXxh64(Secret64(80) ^ Secret64(88))};
  }
  if (len <= 3) {
    const uint32_t combined = static_cast<uint32_t>(in[len - 1]) | static_cast<uint32_t>(len) << 8 |
                              static_cast<uint32_t>(in[0]) << 16 |
                              static_cast<uint32_t>(in[len >> 1]) << 24;
    const uint64_t low = static_cast<uint64_t>(Secret32(0) ^ Secret32(4)) ^ combined;
    const uint64_t high =
        static_cast<uint64_t>(Secret32(8) ^ Secret32(12)) ^ Rotl32(Swap32(combined), 13);
    return {AvalancheXxh64(low), AvalancheXxh64(high)};
  }
  if (len <= 8) {
    const uint64_t first = Read32(in), last = Read32(in + len - 4);
    const uint64_t value = (Secret64(16) ^ Secret64(24)) ^ (first | last << 32);
    const Hash128 m = Multiply128(value, kPrime64_1 + (len << 2));
    uint64_t high = m.high + (m.low << 1);
    uint64_t low = m.low ^ (high >> 3);
    low ^= low >> 35;
    low *= kPrimeMx2;
    low ^= low >> 28;
    return {low, Avalanche(high)};
  }
  const uint64_t first = Read64(in), last = Read64(in + len - 8);
  const uint64_t v1 = (Secret64(32) ^ Secret64(40)) ^ first ^ last;
  const uint64_t v2 = (Secret64(48) ^ Secret64(56)) ^ last;
  const Hash128 m = Multiply128(v1, kPrime64_1);
  uint64_t low = m.low + ((len - 1) << 54);
  uint64_t high = m.high + (v2 & 0xFFFFFFFF00000000u) +
                  static_cast<uint64_t>(static_cast<uint32_t>(v2)) * kPrime32_2;
  low ^= Swap64(high);
  const Hash128 m2 = Multiply128(low, kPrime64_2);
  return {Avalanche(m2.low), Avalanche(m2.high + high * kPrime64_2)};
}

DETRAIN_HD inline uint64_t Mix16(const uint8_t* in, int secret) {
  return MultiplyFold(Read64(in) ^ Secret64(secret), Read64(in + 8) ^ Secret64(secret + 8));
}
DETRAIN_HD inline void Mix32(uint64_t acc[2], const uint8_t* a, const uint8_t* b, int secret) {
  acc[0] += Mix16(a, secret);
  acc[1] += Mix16(b, secret + 16);
  acc[0] ^= Read64(b) + Read64(b + 8);
  acc[1] ^= Read64(a) + Read64(a + 8);
}

// 17 to 240 bytes.
DETRAIN_HD inline Hash128 HashMedium(const uint8_t* in, uint64_t len) {
  uint64_t acc[2] = {len * kPrime64_1, 0};
  if (len <= 128) {
    const int64_t rounds = static_cast<int64_t>((len - 1) >> 5) + 1;
    for (int64_t i = rounds - 1; i >= 0; --i)
      Mix32(acc, in + 16 * i, in + len - 16 * i - 16, static_cast<int>(32 * i));
  } else {
    const uint64_t chunks = len >> 5;
    for (int i = 0; i < 4; ++i) Mix32(acc, in + 32 * i, in + 32 * i + 16, 32 * i);
    acc[0] = Avalanche(acc[0]);
    acc[1] = Avalanche(acc[1]);
    for (uint64_t i = 4; i < chunks; ++i)
      Mix32(acc, in + 32 * i, in + 32 * i + 16, static_cast<int>(32 * (i - 4) + 3));
    Mix32(acc, in + len - 16, in + len - 32, 103);
  }
  const uint64_t high = acc[0] * kPrime64_1 + acc[1] * kPrime64_4 + len * kPrime64_2;
  return {Avalanche(acc[0] + acc[1]), 0 - Avalanche(high)};
}

// One 64-byte stripe into the eight accumulators.
DETRAIN_HD inline void Accumulate(uint64_t acc[8], const uint8_t* stripe, int secret) {
  for (int i = 0; i < 8; ++i) {
    const uint64_t v = Read64(stripe + 8 * i);
    const uint64_t key = v ^ Secret64(secret + 8 * i);
    acc[i ^ 1] += v;
    acc[i] += (key & 0xFFFFFFFFu) * (key >> 32);
  }
}
DETRAIN_HD inline uint64_t MergeAccumulators(const uint64_t acc[8], int secret, uint64_t start) {
  uint64_t r = start;
  for (int i = 0; i < 4; ++i)
    r += MultiplyFold(acc[2 * i] ^ Secret64(secret + 16 * i),
                      acc[2 * i + 1] ^ Secret64(secret + 16 * i + 8));
  return Avalanche(r);
}

// More than 240 bytes: blocks of 16 stripes, each followed by a scramble; the last block's
// stripes but its last, then the input's last 64 bytes.
DETRAIN_HD inline Hash128 HashLarge(const uint8_t* in, uint64_t len) {
  constexpr uint64_t kBlock = 1024;
  uint64_t acc[8] = {kPrime32_3, kPrime64_1, kPrime64_2, kPrime64_3,
                     kPrime64_4, kPrime32_2, kPrime64_5, kPrime32_1};
  const uint64_t blocks = (len - 1) / kBlock;
  for (uint64_t b = 0; b < blocks; ++b) {
    for (int s = 0; s < 16; ++s) Accumulate(acc, in + b * kBlock + 64 * s, 8 * s);
    for (int i = 0; i < 8; ++i) {
      acc[i] ^= acc[i] >> 47;
      acc[i] ^= Secret64(128 + 8 * i);
      acc[i] *= kPrime32_1;
    }
  }
  const uint64_t stripes = (len - 1 - blocks * kBlock) / 64;
  for (uint64_t s = 0; s < stripes; ++s)
    Accumulate(acc, in + blocks * kBlock + 64 * s, static_cast<int>(8 * s));
  Accumulate(acc, in + len - 64, 192 - 71);
  return {MergeAccumulators(acc, 11, len * kPrime64_1),
          MergeAccumulators(acc, 192 - 64 - 11, ~(len * kPrime64_2))};
}

DETRAIN_HD inline Hash128 Hash(const uint8_t* in, uint64_t len) {
  if (len <= 16) return HashSmall(in, len);
  if (len <= 240) return HashMedium(in, len);
  return HashLarge(in, len);
}

// The canonical 16 bytes (XXH128_canonicalFromHash): the high word, then the low, big-endian.
DETRAIN_HD inline void Canonical(Hash128 h, uint8_t out[16]) {
  for (int i = 0; i < 8; ++i) {
    out[i] = static_cast<uint8_t>(h.high >> (56 - 8 * i));
    out[8 + i] = static_cast<uint8_t>(h.low >> (56 - 8 * i));
  }
}

}  // namespace detrain::attest::xxh3

#endif  // DETRAIN_ATTEST_XXH3_BLOCK_H_
