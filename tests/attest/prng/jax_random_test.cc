// jax.random semantics against the JAX test values quoted in reference/jax-random.md (§2, §10b),
// plus the properties detrain adds: identical bits for any thread count and any Isa.
#include "attest/prng/jax_random.h"

#include <gtest/gtest.h>

#include <bit>
#include <cstdint>
#include <vector>

#include "attest/prng/bits_engine.h"
#include "attest/prng/initializers.h"
#include "base/thread_pool.h"

namespace detrain::prng {
namespace {

Options Original() {
  Options o;
  o.mode = Mode::kOriginal;
  return o;
}

std::vector<uint32_t> Flat(const std::vector<Key>& keys) {
  std::vector<uint32_t> out;
  for (const Key& k : keys) {
    out.push_back(k.hi);
    out.push_back(k.lo);
  }
  return out;
}

TEST(JaxRandom, SeedsWithX64) {  // tests/random_test.py::test_prng_seeds_and_keys, x64 = True
  EXPECT_EQ(KeyFromSeed(0), (Key{0, 0}));
  EXPECT_EQ(KeyFromSeed(1), (Key{0, 1}));
  EXPECT_EQ(KeyFromSeed(-1), (Key{4294967295u, 4294967295u}));
  EXPECT_EQ(KeyFromSeed(-2), (Key{4294967295u, 4294967294u}));  // JAX: int32 -2 -> [0, ...]
  EXPECT_EQ(KeyFromSeed(-3), (Key{4294967295u, 4294967293u}));
  EXPECT_EQ(KeyFromSeed(int64_t{2147483647} + 100), (Key{0, 2147483747u}));
  EXPECT_EQ(KeyFromSeed(int64_t{-2147483648} - 100), (Key{4294967295u, 2147483548u}));
  EXPECT_EQ(KeyFromSeed(0x123456789ABCDEF0), (Key{0x12345678, 0x9ABCDEF0}));
  EXPECT_EQ(KeyFromUnsignedSeed(0xFFFFFFFFFFFFFFFFull), (Key{4294967295u, 4294967295u}));
}

TEST(JaxRandom, SeedsWithX64Disabled) {  // the same table, x64 = False
  EXPECT_EQ(KeyFromSeedX64Disabled(-1), (Key{0, 4294967295u}));
  EXPECT_EQ(KeyFromSeedX64Disabled(-3), (Key{0, 4294967293u}));
  EXPECT_EQ(KeyFromSeedX64Disabled(int64_t{2147483647} + 100), (Key{0, 2147483747u}));
  EXPECT_EQ(KeyFromSeedX64Disabled(int64_t{-2147483648} - 100), (Key{0, 2147483548u}));
}

TEST(JaxRandom, OriginalSplitAndFoldIn) {  // testPRNGValues and widely quoted outputs
  auto four = Split(KeyFromSeed(0), 4, Mode::kOriginal);
  ASSERT_TRUE(four.ok());
  EXPECT_EQ(Flat(*four), (std::vector<uint32_t>{2285895361, 1501764800, 1518642379, 4090693311,
                                                433833334, 4221794875, 839183663, 3740430601}));
  auto two = Split(KeyFromSeed(0), 2, Mode::kOriginal);
  EXPECT_EQ(Flat(*two), (std::vector<uint32_t>{4146024105, 967050713, 2718843009, 1272950319}));
  auto two42 = Split(KeyFromSeed(42), 2, Mode::kOriginal);
  EXPECT_EQ(Flat(*two42), (std::vector<uint32_t>{2465931498, 3679230171, 255383827, 267815257}));
  EXPECT_EQ(FoldIn(KeyFromSeed(0), 4), (Key{2285895361, 433833334}));
}

TEST(JaxRandom, OriginalPairingWrapper) {  // raw threefry_2x32(key(0), [0, 1, 2])
  std::vector<uint32_t> words(3);
  ASSERT_TRUE(internal::OriginalWords(Key{0, 0}, 3, words.data(), Original()).ok());
  EXPECT_EQ(words, (std::vector<uint32_t>{0xf71f4ea9, 0x508efb2c, 0xa20e4081}));
}

TEST(JaxRandom, OriginalBits) {  // testRngRandomBits (seed 1701) and _RANDOM_VALUES_CASES
  const Key k1701 = KeyFromSeed(1701);
  std::vector<uint8_t> u8(3);
  std::vector<uint16_t> u16(3);
  std::vector<uint32_t> u32(3);
  std::vector<uint64_t> u64(3);
  ASSERT_TRUE(Bits8(k1701, u8, Original()).ok());
  ASSERT_TRUE(Bits16(k1701, u16, Original()).ok());
  ASSERT_TRUE(Bits32(k1701, u32, Original()).ok());
  ASSERT_TRUE(Bits64(k1701, u64, Original()).ok());
  EXPECT_EQ(u8, (std::vector<uint8_t>{216, 115, 43}));
  EXPECT_EQ(u16, (std::vector<uint16_t>{41682, 1300, 55017}));
  EXPECT_EQ(u32, (std::vector<uint32_t>{56197195, 4200222568, 961309823}));
  EXPECT_EQ(u64, (std::vector<uint64_t>{3982329540505020460ull, 16822122385914693683ull,
                                        7882654074788531506ull}));
  const Key kbits = KeyFromSeed(942802475);
  std::vector<uint32_t> b32(5);
  std::vector<uint8_t> b8(5);
  std::vector<uint16_t> b16(5);
  ASSERT_TRUE(Bits32(kbits, b32, Original()).ok());
  ASSERT_TRUE(Bits8(kbits, b8, Original()).ok());
  ASSERT_TRUE(Bits16(kbits, b16, Original()).ok());
  EXPECT_EQ(b32,
            (std::vector<uint32_t>{1978747883, 4134381225, 3628107870, 689687174, 2788938207}));
  EXPECT_EQ(b8, (std::vector<uint8_t>{10, 158, 82, 54, 158}));
  EXPECT_EQ(b16, (std::vector<uint16_t>{6738, 38161, 50695, 57337, 61600}));
}

TEST(JaxRandom, OriginalSamplersNearQuotedValues) {  // values quoted to 6-8 digits
  std::vector<float> u(5), z(5), one(1), ten(10);
  ASSERT_TRUE(Uniform(KeyFromSeed(1338574713), 0.0f, 1.0f, u, Original()).ok());
  const float u_expected[] = {0.298671f, 0.073213f, 0.873356f, 0.260549f, 0.412797f};
  for (int i = 0; i < 5; ++i) EXPECT_NEAR(u[i], u_expected[i], 1e-6) << i;
  ASSERT_TRUE(Normal(KeyFromSeed(1193674498), z, Original()).ok());
  const float z_expected[] = {-1.173234f, -1.511662f, 0.070593f, -0.099764f, 1.052845f};
  for (int i = 0; i < 5; ++i) EXPECT_NEAR(z[i], z_expected[i], 2e-6) << i;
  ASSERT_TRUE(Uniform(KeyFromSeed(0), 0.0f, 1.0f, one, Original()).ok());
  EXPECT_EQ(one[0], 0.41845703f);
  ASSERT_TRUE(Normal(KeyFromSeed(0), ten, Original()).ok());
  const float quickstart[] = {-0.3721109f, 0.26423115f,  -0.18252768f, -0.7368197f, -0.44030377f,
                              -0.1521442f, -0.67135346f, -0.5908641f,  0.73168886f, 0.5673026f};
  for (int i = 0; i < 10; ++i) EXPECT_NEAR(ten[i], quickstart[i], 1e-6) << i;
  std::vector<uint8_t> coin(5);
  ASSERT_TRUE(Bernoulli(KeyFromSeed(1612777541), 0.5f, coin, Original()).ok());
  EXPECT_EQ(coin, (std::vector<uint8_t>{0, 1, 1, 1, 0}));
}

TEST(JaxRandom, OriginalRandInt) {  // testPRNGValues
  std::vector<int32_t> i32(9);
  std::vector<int64_t> i64(9);
  ASSERT_TRUE(RandInt32(KeyFromSeed(0), 0, 8, i32, Original()).ok());
  ASSERT_TRUE(RandInt64(KeyFromSeed(0), 0, 8, i64, Original()).ok());
  EXPECT_EQ(i32, (std::vector<int32_t>{2, 1, 3, 6, 1, 5, 6, 3, 4}));
  EXPECT_EQ(i64, (std::vector<int64_t>{7, 2, 6, 2, 1, 0, 6, 7, 7}));
}

TEST(JaxRandom, PartitionableSplitIsFoldIn) {  // test_threefry_split_fold_in_symmetry
  const Key key = KeyFromSeed(72);
  auto keys = Split(key, 300, Mode::kPartitionable);
  ASSERT_TRUE(keys.ok());
  for (uint32_t i = 0; i < 300; ++i) EXPECT_EQ((*keys)[i], FoldIn(key, i)) << i;
}

TEST(JaxRandom, PermutationRounds) {  // ceil(3 ln n / ln(2^32 - 1))
  EXPECT_EQ(PermutationRounds(0), 0);
  EXPECT_EQ(PermutationRounds(1), 0);
  EXPECT_EQ(PermutationRounds(2), 1);
  EXPECT_EQ(PermutationRounds(1625), 1);
  EXPECT_EQ(PermutationRounds(1626), 2);
  EXPECT_EQ(PermutationRounds(2642245), 2);
  EXPECT_EQ(PermutationRounds(2642246), 3);
  EXPECT_EQ(PermutationRounds(4294967295ull), 3);
}

TEST(JaxRandom, PermutationIsAPermutation) {
  auto p = Permutation(KeyFromSeed(3), 5000, Options());
  ASSERT_TRUE(p.ok());
  std::vector<int> seen(5000, 0);
  for (int64_t v : *p) ++seen.at(static_cast<size_t>(v));
  for (int c : seen) ASSERT_EQ(c, 1);
  EXPECT_FALSE(Permutation(KeyFromSeed(3), -1, Options()).ok());
}

// Every sampler, written to one byte vector so runs can be compared as a whole.
std::vector<uint8_t> AllOutputs(const Options& o, size_t n) {
  const Key key{0x01234567, 0x89abcdef};
  std::vector<uint8_t> all;
  auto append = [&](const auto& v) {
    const auto* p = reinterpret_cast<const uint8_t*>(v.data());
    all.insert(all.end(), p, p + v.size() * sizeof(v[0]));
  };
  std::vector<uint8_t> b8(n), coin(n);
  std::vector<uint16_t> b16(n);
  std::vector<uint32_t> b32(n);
  std::vector<uint64_t> b64(n);
  std::vector<float> u(n), z(n), t(n), w(n);
  std::vector<int32_t> r32(n);
  std::vector<int64_t> r64(n);
  const int64_t shape[] = {static_cast<int64_t>(n), 1};
  EXPECT_TRUE(Bits8(key, b8, o).ok() && Bits16(key, b16, o).ok() && Bits32(key, b32, o).ok() &&
              Bits64(key, b64, o).ok());
  EXPECT_TRUE(Uniform(key, -3.0f, 5.0f, u, o).ok() && Normal(key, z, o).ok() &&
              TruncatedNormal(key, -1.0f, 2.0f, t, o).ok() && Bernoulli(key, 0.3f, coin, o).ok());
  EXPECT_TRUE(RandInt32(key, -7, 1000, r32, o).ok() && RandInt64(key, -5, 1ll << 40, r64, o).ok());
  EXPECT_TRUE(InitializeNamed("he_normal", key, shape, w, o).ok());
  auto perm = Permutation(key, static_cast<int64_t>(n), o);
  EXPECT_TRUE(perm.ok());
  for (const auto& v : {b8, coin}) append(v);
  append(b16), append(b32), append(b64), append(u), append(z), append(t), append(w);
  append(r32), append(r64), append(*perm);
  return all;
}

class Invariance : public ::testing::TestWithParam<Mode> {};

TEST_P(Invariance, OneAndTwoThreadsGiveIdenticalBits) {
  const size_t n = 3 * internal::kChunk + 1234;  // several chunks and a partial one
  Options one;
  one.mode = GetParam();
  ThreadPool pool(2);
  Options two = one;
  two.pool = &pool;
  EXPECT_EQ(AllOutputs(one, n), AllOutputs(two, n));
}

TEST_P(Invariance, EveryIsaGivesIdenticalBits) {
  const size_t n = 2 * internal::kChunk + 77;
  Options scalar;
  scalar.mode = GetParam();
  scalar.isa = Isa::kScalar;
  const auto reference = AllOutputs(scalar, n);
  int compared = 0;
  for (Isa isa : {Isa::kAvx2, Isa::kAvx512}) {
    if (!IsaSupported(isa)) continue;
    Options o = scalar;
    o.isa = isa;
    EXPECT_EQ(AllOutputs(o, n), reference) << IsaName(isa);
    ++compared;
  }
  if (compared == 0) GTEST_SKIP() << "no vector path on this CPU";
}

INSTANTIATE_TEST_SUITE_P(BothModes, Invariance,
                         ::testing::Values(Mode::kPartitionable, Mode::kOriginal),
                         [](const auto& info) { return std::string(ModeName(info.param)); });

}  // namespace
}  // namespace detrain::prng
