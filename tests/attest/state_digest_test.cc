// State digests, the step chain's hash and the batch digest (src/attest/state_digest.h).
#include "attest/state_digest.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "attest/merkle.h"
#include "attest/xxh3_block.h"

namespace detrain::attest {
namespace {

std::vector<TensorView> State(const std::string& w, const std::string& b) {
  return {{"w", "f32", {2}, w}, {"b", "f32", {1}, b}};
}

TEST(StateDigestTest, OrderOfTensorsDoesNotMatterButEveryByteDoes) {
  const std::string w(8, '\1'), b(4, '\2');
  for (DigestPolicy p : {DigestPolicy::kXxh3, DigestPolicy::kSha256, DigestPolicy::kXxh3Chunked}) {
    Result<StateDigests> a = DigestState(State(w, b), p, nullptr);
    std::vector<TensorView> reversed = State(w, b);
    std::swap(reversed[0], reversed[1]);
    Result<StateDigests> r = DigestState(reversed, p, nullptr);
    ASSERT_TRUE(a.ok() && r.ok());
    EXPECT_EQ(a->state, r->state);
    EXPECT_EQ(a->state.size(), p == DigestPolicy::kSha256 ? 32u : 16u);
    EXPECT_EQ(a->state.size(), DigestSize(p));
    ASSERT_EQ(a->tensors.size(), 2u);
    EXPECT_EQ(a->tensors[0].first, "b");  // name order
    EXPECT_EQ(a->tensors[1].first, "w");
    std::string w2 = w;
    w2[7] ^= 1;
    Result<StateDigests> c = DigestState(State(w2, b), p, nullptr);
    ASSERT_TRUE(c.ok());
    EXPECT_NE(c->state, a->state);
    EXPECT_EQ(c->tensors[0], a->tensors[0]) << "b is unchanged";
    EXPECT_NE(c->tensors[1], a->tensors[1]) << "w changed";
  }
}

TEST(StateDigestTest, NameDtypeAndShapeAreHashed) {
  const std::string bytes(8, '\0');
  auto digest = [&](TensorView t) { return DigestState({t}, DigestPolicy::kXxh3, nullptr)->state; };
  const std::string base = digest({"w", "f32", {2}, bytes});
  EXPECT_NE(digest({"v", "f32", {2}, bytes}), base);
  EXPECT_NE(digest({"w", "s32", {2}, bytes}), base);
  EXPECT_NE(digest({"w", "f32", {1, 2}, bytes}), base);
}

TEST(StateDigestTest, Sha256PolicyIsTheMerkleRootOfTensorDigests) {
  const std::string w(8, '\3'), b(4, '\4');
  Result<StateDigests> d = DigestState(State(w, b), DigestPolicy::kSha256, nullptr);
  ASSERT_TRUE(d.ok());
  Result<Digest256> tb = TensorDigest({"b", "f32", {1}, b}, nullptr);
  Result<Digest256> tw = TensorDigest({"w", "f32", {2}, w}, nullptr);
  ASSERT_TRUE(tb.ok() && tw.ok());
  Digest256 root = MerkleRootOfLeaves({*tb, *tw});
  EXPECT_EQ(d->state, std::string(reinterpret_cast<const char*>(root.data()), 32));
  Result<Digest256> r = StateSha256Root(State(w, b), nullptr);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(*r, root);
}

// The chunked policy, composed here from the specification (schemas/bundle.md 5.2) with the
// host-and-device hash (xxh3_block.h): leaves of 16 KiB, the prefix, the state over the tensors;
// the same with any thread pool.
std::string Xxh3Bytes(std::string_view bytes) {
  uint8_t out[16];
  xxh3::Canonical(xxh3::Hash(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()), out);
  return std::string(reinterpret_cast<const char*>(out), 16);
}
std::string U64le(uint64_t v) {
  std::string s;
  for (int i = 0; i < 8; ++i) s.push_back(static_cast<char>(v >> (8 * i)));
  return s;
}

TEST(StateDigestTest, ChunkedPolicyIsLeavesOf16KiBUnderThePrefix) {
  std::string big(3 * kDigestChunkBytes + 12, '\0');
  for (size_t i = 0; i < big.size(); ++i) big[i] = static_cast<char>(i * 131 + i / 977);
  const std::string exact(kDigestChunkBytes, '\7'), small(4, '\1');
  const std::vector<TensorView> state = {{"w", "f32", {3 * 4096 + 3}, big},
                                         {"count", "s32", {}, small},
                                         {"v", "f32", {4096}, exact},
                                         {"e", "f32", {0}, ""}};
  std::string all;
  std::vector<std::string> want;
  for (const TensorView* t : {&state[1], &state[3], &state[2], &state[0]}) {  // name order
    const std::string header =
        "{\"dtype\":\"" + std::string(t->dtype) + "\",\"name\":\"" + std::string(t->name) +
        "\",\"shape\":" + (t->shape.empty() ? "[]" : "[" + std::to_string(t->shape[0]) + "]") + "}";
    std::string in = U64le(header.size()) + header + U64le(t->data.size());
    for (size_t at = 0; at < t->data.size(); at += kDigestChunkBytes)
      in += Xxh3Bytes(t->data.substr(at, kDigestChunkBytes));
    Result<std::string> prefix = ChunkedTensorPrefix(*t);
    ASSERT_TRUE(prefix.ok());
    EXPECT_EQ(*prefix, in.substr(0, prefix->size()));
    want.push_back(Xxh3Bytes(in));
    all += want.back();
  }
  ThreadPool pool(3);
  for (ThreadPool* p : {static_cast<ThreadPool*>(nullptr), &pool}) {
    Result<StateDigests> d = DigestState(state, DigestPolicy::kXxh3Chunked, p);
    ASSERT_TRUE(d.ok());
    ASSERT_EQ(d->tensors.size(), 4u);
    for (size_t i = 0; i < 4; ++i) EXPECT_EQ(d->tensors[i].second, want[i]) << i;
    EXPECT_EQ(d->state, Xxh3Bytes(all));
  }
  // Not the unchunked policy's digest.
  EXPECT_NE(DigestState(state, DigestPolicy::kXxh3, nullptr)->state, Xxh3Bytes(all));
}

TEST(StateDigestTest, DuplicateNamesAndUnknownDtypesAreErrors) {
  std::vector<TensorView> dup = {{"w", "f32", {1}, "aaaa"}, {"w", "f32", {1}, "bbbb"}};
  EXPECT_FALSE(DigestState(dup, DigestPolicy::kXxh3, nullptr).ok());
  EXPECT_FALSE(DigestState({{"w", "f99", {1}, "aaaa"}}, DigestPolicy::kXxh3, nullptr).ok());
}

TEST(StepHashTest, EveryFieldChangesTheHash) {
  StepHashInput in;
  in.step = 3;
  in.key_hi = 1;
  in.key_lo = 2;
  in.learning_rate_bits = 0x3a83126f;
  in.loss_bits = 0x3f317218;
  in.state_digest = std::string(16, '\5');
  const Digest256 base = StepHash(in);
  std::vector<StepHashInput> variants(10, in);
  variants[0].previous[0] ^= 1;
  variants[1].step = 4;
  variants[2].batch[31] ^= 1;
  variants[3].key_hi ^= 1;
  variants[4].key_lo ^= 1;
  variants[5].learning_rate_bits ^= 1;
  variants[6].loss_bits ^= 1;
  variants[7].state_digest[15] ^= 1;
  variants[8].roots = {Digest256{}, Digest256{}};
  variants[9].eval_bits = {0};
  for (size_t i = 0; i < variants.size(); ++i) EXPECT_NE(StepHash(variants[i]), base) << i;
  // The lengths are framed: a digest moved from the state into a root is not the same input.
  StepHashInput a = in, b = in;
  a.state_digest = std::string(32, '\0');
  b.state_digest = "";
  b.roots = {Digest256{}};
  EXPECT_NE(StepHash(a), StepHash(b));
}

TEST(StepHashTest, GenesisAndBatchDigestsDependOnEveryInput) {
  Digest256 p{}, o{};
  const Digest256 g = GenesisHash("chain", p, o);
  EXPECT_NE(GenesisHash("chain2", p, o), g);
  o[0] = 1;
  EXPECT_NE(GenesisHash("chain", p, o), g);
  const Digest256 d = BatchDigest(0, {1, 2}, {"ab", "c"});
  EXPECT_NE(BatchDigest(1, {1, 2}, {"ab", "c"}), d);
  EXPECT_NE(BatchDigest(0, {2, 1}, {"ab", "c"}), d);
  EXPECT_NE(BatchDigest(0, {1, 2}, {"ab", "d"}), d);
  EXPECT_EQ(BatchDigest(0, {1, 2}, {"ab", "c"}), d);
}

}  // namespace
}  // namespace detrain::attest
