// The Threefry-2x32-20 key schedule and block function (reference/jax-random.md §1, Random123's
// threefry2x32_20): the one definition of the rounds, for host and CUDA device code. threefry.cc's
// scalar path, the interpreter's threefry2x32 custom call and CUDA kernels call ThreefryBlock;
// the SIMD paths in threefry.cc take their rotation constants and injections from here.
//
// Schedule: ks = {k0, k1, k0 ^ k1 ^ 0x1BD11BDA}; inject ks0, ks1; five groups of four MIX rounds
// (x0 += x1; x1 = rotl(x1, r) ^ x0) with rotations ThreefryRotation(g, 0..3); after group g
// inject ks[(g+1)%3] into x0 and ks[(g+2)%3] + g + 1 into x1.
//
// Header-only (base/host_device.h); no allocation, no exceptions. Thread safety: pure functions.
// Determinism: uint32 wrap-around arithmetic only, identical on every platform.
#ifndef DETRAIN_ATTEST_PRNG_THREEFRY_BLOCK_H_
#define DETRAIN_ATTEST_PRNG_THREEFRY_BLOCK_H_

#include "base/host_device.h"

namespace detrain::prng {

inline constexpr uint32_t kThreefryParity = 0x1BD11BDA;  // Skein key-schedule parity constant
inline constexpr int kThreefryGroups = 5;
// The rotation amount of MIX round r (0..3) of group g: {13, 15, 26, 6} in even groups,
// {17, 29, 16, 24} in odd ones. A function rather than an array so that device code can use it
// and SIMD code can take it as a template argument.
DETRAIN_HD constexpr int ThreefryRotation(int g, int r) {
  return g % 2 == 0 ? (r == 0   ? 13
                       : r == 1 ? 15
                       : r == 2 ? 26
                                : 6)
                    : (r == 0   ? 17
                       : r == 1 ? 29
                       : r == 2 ? 16
                                : 24);
}

// The key schedule: ks, and the injections after each group g: x0 += a[g], x1 += b[g].
struct ThreefryInjections {
  uint32_t ks[3];
  uint32_t a[kThreefryGroups];
  uint32_t b[kThreefryGroups];
};

DETRAIN_HD inline ThreefryInjections ThreefryKeySchedule(uint32_t k0, uint32_t k1) {
  ThreefryInjections inj{};
  inj.ks[0] = k0;
  inj.ks[1] = k1;
  inj.ks[2] = k0 ^ k1 ^ kThreefryParity;
  for (uint32_t g = 0; g < kThreefryGroups; ++g) {
    inj.a[g] = inj.ks[(g + 1) % 3];
    inj.b[g] = inj.ks[(g + 2) % 3] + g + 1;
  }
  return inj;
}

DETRAIN_HD inline uint32_t ThreefryRotl(uint32_t x, int r) { return (x << r) | (x >> (32 - r)); }

DETRAIN_HD inline void ThreefryMix(uint32_t& x0, uint32_t& x1, int r) {
  x0 += x1;
  x1 = ThreefryRotl(x1, r);
  x1 ^= x0;
}

// The 20 rounds on one block (x0, x1), in place.
DETRAIN_HD inline void ThreefryBlock(const ThreefryInjections& inj, uint32_t& x0, uint32_t& x1) {
  x0 += inj.ks[0];
  x1 += inj.ks[1];
  for (int g = 0; g < kThreefryGroups; ++g) {
    for (int r = 0; r < 4; ++r) ThreefryMix(x0, x1, ThreefryRotation(g, r));
    x0 += inj.a[g];
    x1 += inj.b[g];
  }
}

}  // namespace detrain::prng

#endif  // DETRAIN_ATTEST_PRNG_THREEFRY_BLOCK_H_
