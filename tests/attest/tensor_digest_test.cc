// Tensor digests: a known answer computed independently (Python hashlib, see below), NaN
// canonicalization, sensitivity to every header field, validation errors, thread independence.
#include "attest/tensor_digest.h"

#include <gtest/gtest.h>

#include <cstring>
#include <vector>

namespace detrain::attest {
namespace {

std::string F32Bytes(const std::vector<uint32_t>& bits) {
  std::string s(bits.size() * 4, '\0');
  std::memcpy(s.data(), bits.data(), s.size());
  return s;
}

constexpr uint32_t kOne = 0x3f800000, kMinus2p5 = 0xc0200000, kZero = 0;

TEST(TensorDigestTest, KnownAnswer) {
  // python3: hdr = b'{"dtype":"f32","name":"w","shape":[2,2]}'
  //   data = pack('<4f', 1.0, -2.5, nan, 0.0) with the NaN as 0x7fc00000
  //   sha256(b'detrain.tensor.v1\0' + pack('<Q', len(hdr)) + hdr + sha256(b'\0' + data))
  std::string data = F32Bytes({kOne, kMinus2p5, 0x7fc00000, kZero});
  Result<Digest256> d = TensorDigest({"w", "f32", {2, 2}, data}, nullptr);
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  EXPECT_EQ(Sha256::ToHex(*d), "cb93e8c95e4bb8ea21ca1ed7c47b1c3b8db3f934fb875f5a6d689c0e15d1c015");
}

TEST(TensorDigestTest, EveryNaNPayloadHashesTheSame) {
  Digest256 canonical =
      *TensorDigest({"w", "f32", {2, 2}, F32Bytes({kOne, kMinus2p5, 0x7fc00000, kZero})}, nullptr);
  for (uint32_t nan : {0x7fc00001u, 0xffc00000u, 0x7f800001u, 0xffffffffu, 0x7fbfffffu}) {
    std::string data = F32Bytes({kOne, kMinus2p5, nan, kZero});
    EXPECT_EQ(*TensorDigest({"w", "f32", {2, 2}, data}, nullptr), canonical) << std::hex << nan;
  }
  // Infinity is not a NaN and must not be rewritten.
  std::string inf = F32Bytes({kOne, kMinus2p5, 0x7f800000, kZero});
  EXPECT_NE(*TensorDigest({"w", "f32", {2, 2}, inf}, nullptr), canonical);
}

TEST(TensorDigestTest, HeaderFieldsMatter) {
  std::string data = F32Bytes({kOne, kMinus2p5, kOne, kZero});
  Digest256 base = *TensorDigest({"w", "f32", {2, 2}, data}, nullptr);
  EXPECT_NE(*TensorDigest({"v", "f32", {2, 2}, data}, nullptr), base);
  EXPECT_NE(*TensorDigest({"w", "u32", {2, 2}, data}, nullptr), base);
  EXPECT_NE(*TensorDigest({"w", "f32", {4}, data}, nullptr), base);
  EXPECT_NE(*TensorDigest({"w", "f32", {1, 4}, data}, nullptr), base);
}

TEST(TensorDigestTest, IntegerDataIsNotCanonicalized) {
  // 0x7fc00001 is a NaN pattern as f32 but an ordinary integer as u32.
  std::string a = F32Bytes({0x7fc00001}), b = F32Bytes({0x7fc00000});
  EXPECT_NE(*TensorDigest({"t", "u32", {1}, a}, nullptr),
            *TensorDigest({"t", "u32", {1}, b}, nullptr));
  EXPECT_EQ(CanonicalTensorBytes("u32", a), a);
}

TEST(TensorDigestTest, OtherFloatWidthsCanonicalize) {
  std::string f16("\x01\x7c", 2), f16c("\x00\x7e", 2);
  EXPECT_EQ(CanonicalTensorBytes("f16", f16), f16c);
  std::string bf16("\x81\xff", 2), bf16c("\xc0\x7f", 2);
  EXPECT_EQ(CanonicalTensorBytes("bf16", bf16), bf16c);
  std::string f64("\x01\0\0\0\0\0\xf0\x7f", 8), f64c("\0\0\0\0\0\0\xf8\x7f", 8);
  EXPECT_EQ(CanonicalTensorBytes("f64", f64), f64c);
}

TEST(TensorDigestTest, ValidationErrors) {
  std::string data = F32Bytes({kOne, kOne});
  Result<Digest256> r = TensorDigest({"w", "f33", {2}, data}, nullptr);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), "tensor 'w': unknown dtype 'f33'");
  r = TensorDigest({"w", "f32", {3}, data}, nullptr);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), "tensor 'w': shape needs 12 bytes, data has 8");
  EXPECT_FALSE(TensorDigest({"w", "f32", {-2}, data}, nullptr).ok());
  EXPECT_EQ(DTypeSize("bf16"), 2u);
  EXPECT_EQ(DTypeSize("nope"), 0u);
}

TEST(TensorDigestTest, LargeTensorIndependentOfThreads) {
  std::vector<uint32_t> bits(3 * (1 << 18) + 5);  // 3 MiB + 20 bytes: four Merkle leaves
  for (size_t i = 0; i < bits.size(); ++i) bits[i] = static_cast<uint32_t>(i * 2654435761u);
  std::string data = F32Bytes(bits);
  TensorView t{"big", "f32", {static_cast<int64_t>(bits.size())}, data};
  Digest256 serial = *TensorDigest(t, nullptr);
  for (size_t threads : {1, 2, 5}) {
    ThreadPool pool(threads);
    EXPECT_EQ(*TensorDigest(t, &pool), serial);
  }
}

}  // namespace
}  // namespace detrain::attest
