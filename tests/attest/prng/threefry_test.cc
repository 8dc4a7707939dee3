// Threefry-2x32-20 block function: Random123 known-answer vectors (reference/jax-random.md §10a)
// and identical bits from the scalar, AVX2 and AVX-512 paths (unsupported paths are skipped).
#include "attest/prng/threefry.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "attest/prng/bits_engine.h"
#include "attest/prng/threefry_block.h"

namespace detrain::prng {
namespace {

struct Kat {
  uint32_t ctr0, ctr1, key0, key1, out0, out1;
};

// Random123 kat_vectors, threefry2x32 with 20 rounds (the rows JAX's testThreefry2x32 asserts).
constexpr Kat kKat20[] = {
    {0x00000000, 0x00000000, 0x00000000, 0x00000000, 0x6b200159, 0x99ba4efe},
    {0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff, 0x1cb996fc, 0xbb002be7},
    {0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344, 0xc4923a9c, 0x483df7a0},
};

TEST(Threefry, Random123KnownAnswers) {
  for (const Kat& k : kKat20) {
    const auto y = Threefry2x32(k.key0, k.key1, k.ctr0, k.ctr1);
    EXPECT_EQ(y[0], k.out0);
    EXPECT_EQ(y[1], k.out1);
  }
}

// The host+device block (threefry_block.h) on its own: the same known answers, and the key
// schedule's parity word.
TEST(ThreefryBlock, KnownAnswersAndSchedule) {
  for (const Kat& k : kKat20) {
    ThreefryInjections schedule = ThreefryKeySchedule(k.key0, k.key1);
    uint32_t x0 = k.ctr0, x1 = k.ctr1;
    ThreefryBlock(schedule, x0, x1);
    EXPECT_EQ(x0, k.out0);
    EXPECT_EQ(x1, k.out1);
  }
  ThreefryInjections zero = ThreefryKeySchedule(0, 0);
  EXPECT_EQ(zero.ks[2], 0x1BD11BDAu);
  EXPECT_EQ(zero.b[0], 0x1BD11BDAu + 1);  // after group 0: ks[(0+2)%3] + 1
  EXPECT_EQ(zero.a[1], 0x1BD11BDAu);      // after group 1: ks[(1+1)%3]
  EXPECT_EQ(ThreefryRotation(0, 2), 26);
  EXPECT_EQ(ThreefryRotation(3, 1), 29);
}

TEST(Threefry, ArrayKnownAnswersOnEveryPath) {
  for (Isa isa : {Isa::kScalar, Isa::kAvx2, Isa::kAvx512}) {
    for (const Kat& k : kKat20) {
      // 37 copies: exercises the two-vector loop, the one-vector loop and the scalar tail.
      std::vector<uint32_t> x0(37, k.ctr0), x1(37, k.ctr1), y0(37), y1(37);
      Threefry2x32ArrayIsa(isa, k.key0, k.key1, x0.data(), x1.data(), y0.data(), y1.data(), 37);
      for (size_t i = 0; i < 37; ++i) {
        ASSERT_EQ(y0[i], k.out0) << IsaName(isa) << " " << i;
        ASSERT_EQ(y1[i], k.out1) << IsaName(isa) << " " << i;
      }
    }
  }
}

// JAX's testThreefry2x32Large (there with 10^7 copies): the pairing wrapper over 2m counts of
// the pi row gives m copies of out0 followed by m copies of out1.
TEST(Threefry, PairingWrapperLarge) {
  const size_t m = 100000;
  std::vector<uint32_t> words(2 * m);
  // threefry_2x32 over count c with c[j] = ctr0, c[j + m] = ctr1 is block (ctr0, ctr1) for every
  // j; OriginalWords uses an iota count, so build the blocks directly with the array form.
  std::vector<uint32_t> x0(m, 0x243f6a88), x1(m, 0x85a308d3);
  Threefry2x32Array(0x13198a2e, 0x03707344, x0.data(), x1.data(), words.data(), words.data() + m,
                    m);
  for (size_t j = 0; j < m; ++j) {
    ASSERT_EQ(words[j], 0xc4923a9cu) << j;
    ASSERT_EQ(words[j + m], 0x483df7a0u) << j;
  }
}

TEST(Threefry, IsaPathsAgreeOnRandomInputs) {
  const size_t n = 1000;  // not a multiple of 8, 16 or 32
  std::vector<uint32_t> x0(n), x1(n);
  uint32_t state = 12345;
  for (size_t i = 0; i < n; ++i) {  // any fixed pseudo-random inputs will do
    state = state * 1664525u + 1013904223u;
    x0[i] = state;
    state = state * 1664525u + 1013904223u;
    x1[i] = state;
  }
  std::vector<uint32_t> ref0(n), ref1(n);
  Threefry2x32ArrayIsa(Isa::kScalar, 0xdeadbeef, 0x01234567, x0.data(), x1.data(), ref0.data(),
                       ref1.data(), n);
  for (size_t i = 0; i < n; ++i) {
    const auto y = Threefry2x32(0xdeadbeef, 0x01234567, x0[i], x1[i]);
    ASSERT_EQ(ref0[i], y[0]);
    ASSERT_EQ(ref1[i], y[1]);
  }
  int vector_paths = 0;
  for (Isa isa : {Isa::kAvx2, Isa::kAvx512}) {
    if (!IsaSupported(isa)) continue;
    ++vector_paths;
    for (size_t len : {size_t{0}, size_t{1}, size_t{7}, size_t{8}, size_t{15}, size_t{16},
                       size_t{31}, size_t{33}, n}) {
      std::vector<uint32_t> y0(len), y1(len);
      Threefry2x32ArrayIsa(isa, 0xdeadbeef, 0x01234567, x0.data(), x1.data(), y0.data(), y1.data(),
                           len);
      for (size_t i = 0; i < len; ++i) {
        ASSERT_EQ(y0[i], ref0[i]) << IsaName(isa) << " len " << len << " index " << i;
        ASSERT_EQ(y1[i], ref1[i]) << IsaName(isa) << " len " << len << " index " << i;
      }
    }
  }
  if (vector_paths == 0) GTEST_SKIP() << "this CPU has neither AVX2 nor AVX-512";
}

TEST(Threefry, InPlaceAliasing) {
  for (Isa isa : {Isa::kScalar, Isa::kAvx2, Isa::kAvx512}) {
    std::vector<uint32_t> a(50), b(50);
    for (uint32_t i = 0; i < 50; ++i) {
      a[i] = i;
      b[i] = 1000 + i;
    }
    Threefry2x32ArrayIsa(isa, 7, 9, a.data(), b.data(), a.data(), b.data(), 50);
    for (uint32_t i = 0; i < 50; ++i) {
      const auto y = Threefry2x32(7, 9, i, 1000 + i);
      ASSERT_EQ(a[i], y[0]);
      ASSERT_EQ(b[i], y[1]);
    }
  }
}

// The fused partitionable kernel, including a run across a carry into the high counter word.
TEST(Threefry, CounterXorMatchesBlocksOnEveryPath) {
  for (Isa isa : {Isa::kScalar, Isa::kAvx2, Isa::kAvx512}) {
    for (uint64_t start :
         {uint64_t{0}, uint64_t{5}, (uint64_t{1} << 32) - 37, (uint64_t{7} << 32) + 1}) {
      const size_t n = 101;
      std::vector<uint32_t> out(n);
      Threefry2x32CounterXorIsa(isa, 0xabcdef01, 0x23456789, start, out.data(), n);
      for (size_t j = 0; j < n; ++j) {
        const uint64_t i = start + j;
        const auto y = Threefry2x32(0xabcdef01, 0x23456789, static_cast<uint32_t>(i >> 32),
                                    static_cast<uint32_t>(i));
        ASSERT_EQ(out[j], y[0] ^ y[1]) << IsaName(isa) << " counter " << i;
      }
    }
  }
}

TEST(Threefry, BestIsaIsSupported) {
  EXPECT_TRUE(IsaSupported(BestIsa()));
  EXPECT_TRUE(IsaSupported(Isa::kScalar));
}

}  // namespace
}  // namespace detrain::prng
