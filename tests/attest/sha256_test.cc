// SHA-256 known answers (FIPS 180-2 / NIST CSRC examples) and streaming equivalence.
#include "attest/sha256.h"

#include <gtest/gtest.h>

#include <string>

namespace detrain::attest {
namespace {

TEST(Sha256Test, NistVectors) {
  EXPECT_EQ(Sha256Hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(Sha256Hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(Sha256Hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  EXPECT_EQ(Sha256Hex(std::string(1000000, 'a')),
            "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

TEST(Sha256Test, StreamingEqualsOneShotForEverySplit) {
  std::string msg;
  for (int i = 0; i < 300; ++i) msg += static_cast<char>(i * 7 + 3);
  const std::string expected = Sha256Hex(msg);
  for (size_t split = 0; split <= msg.size(); split += 13) {
    Sha256 h;
    h.Update(std::string_view(msg).substr(0, split));
    h.Update(std::string_view(msg).substr(split));
    EXPECT_EQ(h.HexDigest(), expected) << "split at " << split;
  }
}

TEST(Sha256Test, ResetStartsOver) {
  Sha256 h;
  h.Update("garbage");
  (void)h.Final();
  h.Reset();
  h.Update("abc");
  EXPECT_EQ(h.HexDigest(), Sha256Hex("abc"));
}

TEST(Sha256Test, HexParsing) {
  Digest256 d;
  ASSERT_TRUE(ParseDigestHex(Sha256Hex("abc"), &d));
  EXPECT_EQ(d, Sha256Of("abc"));
  EXPECT_TRUE(ParseDigestHex(std::string(64, 'F'), &d));
  EXPECT_FALSE(ParseDigestHex(std::string(63, 'a'), &d));
  EXPECT_FALSE(ParseDigestHex(std::string(64, 'g'), &d));
}

}  // namespace
}  // namespace detrain::attest
