// Threefry-2x32 with 20 rounds: the block function of JAX's default PRNG (Random123's
// threefry2x32_20), as specified in shared/reference/jax-random.md §1.
//
// The block function maps a key (k0, k1) and a counter (x0, x1) to two 32-bit words. The array
// form applies it elementwise, which is the `threefry2x32` primitive of JAX/XLA (not JAX's
// `threefry_2x32` wrapper with its pairing of count[j] and count[j + n/2]; see jax_random.h).
//
// Three implementations compute the same function: portable scalar code (threefry_block.h, also
// the device form), AVX2 (8 lanes) and AVX-512 (16 lanes), chosen with base/isa.h. The vector
// ones are compiled with per-function target attributes and only called after a run-time CPU
// check, so the library runs on any x86-64. All arithmetic is on
// uint32 with wrap-around, so every path gives identical bits; tests assert it.
//
// Thread safety: pure functions, no shared state. Determinism: outputs depend only on inputs.
#ifndef DETRAIN_ATTEST_PRNG_THREEFRY_H_
#define DETRAIN_ATTEST_PRNG_THREEFRY_H_

#include <array>
#include <cstddef>
#include <cstdint>

#include "base/isa.h"  // the instruction-set paths (Isa, IsaSupported, BestIsa)

namespace detrain::prng {

struct Key {
  uint32_t hi = 0, lo = 0;
};  // JAX's uint32[2] key data

inline bool operator==(const Key& a, const Key& b) { return a.hi == b.hi && a.lo == b.lo; }

// threefry2x32 with 20 rounds on one block: key (k0,k1), counter words (x0,x1) -> 2 words.
std::array<uint32_t, 2> Threefry2x32(uint32_t k0, uint32_t k1, uint32_t x0, uint32_t x1);

// Elementwise over arrays of n blocks (the op XLA/JAX calls threefry2x32): out0/out1 from x0/x1.
// Uses the fastest implementation the CPU supports (BestIsa). out0/out1 may alias x0/x1 exactly
// (same pointer), but must not otherwise overlap them.
void Threefry2x32Array(uint32_t k0, uint32_t k1, const uint32_t* x0, const uint32_t* x1,
                       uint32_t* out0, uint32_t* out1, size_t n);

// Threefry2x32Array forced onto one path (for tests and benchmarks). If `isa` is not supported
// here, the scalar path runs instead, so the result is still correct.
void Threefry2x32ArrayIsa(Isa isa, uint32_t k0, uint32_t k1, const uint32_t* x0, const uint32_t* x1,
                          uint32_t* out0, uint32_t* out1, size_t n);

// The partitionable-mode random bits, fused: out[j] = y0 ^ y1 where (y0, y1) =
// threefry2x32(k0, k1, hi32(start + j), lo32(start + j)), with the 64-bit counters generated in
// registers. Same Isa fallback rule as Threefry2x32ArrayIsa.
void Threefry2x32CounterXorIsa(Isa isa, uint32_t k0, uint32_t k1, uint64_t start, uint32_t* out,
                               size_t n);

}  // namespace detrain::prng

#endif  // DETRAIN_ATTEST_PRNG_THREEFRY_H_
