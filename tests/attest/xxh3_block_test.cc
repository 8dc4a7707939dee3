// The host-and-device XXH3-128 (src/attest/xxh3_block.h) against libxxhash, the hash the host
// side of the step digests uses: every length class, from every alignment.
#include "attest/xxh3_block.h"

#include <gtest/gtest.h>
#include <xxhash.h>

#include <cstring>
#include <random>
#include <vector>

namespace detrain::attest::xxh3 {
namespace {

void ExpectLibraryHash(const uint8_t* in, size_t len) {
  const XXH128_hash_t want = XXH3_128bits(in, len);
  const Hash128 got = Hash(in, len);
  ASSERT_EQ(got.low, want.low64) << "length " << len;
  ASSERT_EQ(got.high, want.high64) << "length " << len;
}

std::vector<uint8_t> RandomBytes(size_t n, uint32_t seed) {
  std::mt19937 gen(seed);
  std::vector<uint8_t> v(n);
  for (uint8_t& b : v) b = static_cast<uint8_t>(gen());
  return v;
}

TEST(Xxh3BlockTest, EveryLengthToFourBlocksFromEveryAlignment) {
  const std::vector<uint8_t> bytes = RandomBytes(4200, 1);
  for (size_t len = 0; len <= 4100; ++len) ExpectLibraryHash(bytes.data() + len % 8, len);
}

TEST(Xxh3BlockTest, LongInputsAndBlockEdges) {
  const std::vector<uint8_t> bytes = RandomBytes((1 << 20) + 64, 2);
  for (size_t len : {size_t{16384}, size_t{16383}, size_t{16385}, size_t{65536}, size_t{1} << 20,
                     size_t{1025}, size_t{2048}, size_t{2049}, size_t{999999}})
    ExpectLibraryHash(bytes.data(), len);
}

TEST(Xxh3BlockTest, CanonicalFormIsTheLibrarys) {
  const std::vector<uint8_t> bytes = RandomBytes(300, 3);
  XXH128_canonical_t want;
  XXH128_canonicalFromHash(&want, XXH3_128bits(bytes.data(), bytes.size()));
  uint8_t got[16];
  Canonical(Hash(bytes.data(), bytes.size()), got);
  EXPECT_EQ(std::memcmp(got, want.digest, 16), 0);
}

// The all-zero and all-one inputs exercise carries and the multiplies' high words.
TEST(Xxh3BlockTest, ConstantInputs) {
  for (uint8_t fill : {uint8_t{0}, uint8_t{0xff}}) {
    const std::vector<uint8_t> bytes(3000, fill);
    for (size_t len : {size_t{0}, size_t{3}, size_t{8}, size_t{16}, size_t{128}, size_t{240},
                       size_t{241}, size_t{3000}})
      ExpectLibraryHash(bytes.data(), len);
  }
}

}  // namespace
}  // namespace detrain::attest::xxh3
