// Merkle roots: independence of the thread count, the tree shape of schemas/merkle.md checked
// against an independent recursive RFC 6962 formulation, and file hashing equal to memory hashing.
#include "attest/merkle.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

namespace detrain::attest {
namespace {

constexpr size_t kChunk = kMerkleChunkSize;

std::string Bytes(size_t n) {
  std::string s(n, '\0');
  uint32_t x = 12345;
  for (size_t i = 0; i < n; ++i) {
    x = x * 1664525u + 1013904223u;
    s[i] = static_cast<char>(x >> 24);
  }
  return s;
}

// RFC 6962 §2.1: MTH(D[n]) = node(MTH(D[0:k]), MTH(D[k:n])), k the largest power of 2 < n.
Digest256 Rfc6962Root(const std::vector<Digest256>& leaves, size_t lo, size_t hi) {
  if (hi - lo == 1) return leaves[lo];
  size_t k = 1;
  while (k * 2 < hi - lo) k *= 2;
  return MerkleNodeHash(Rfc6962Root(leaves, lo, lo + k), Rfc6962Root(leaves, lo + k, hi));
}

TEST(MerkleTest, SameRootForOneToEightThreads) {
  for (size_t size : {size_t{0}, size_t{1}, kChunk - 1, kChunk, kChunk + 1, 10 * kChunk + 7}) {
    std::string data = Bytes(size);
    Digest256 serial = MerkleRoot(data, nullptr);
    for (size_t threads = 1; threads <= 8; ++threads) {
      ThreadPool pool(threads);
      EXPECT_EQ(MerkleRoot(data, &pool), serial) << "size " << size << " threads " << threads;
    }
  }
}

TEST(MerkleTest, TreeShapeMatchesRfc6962) {
  for (size_t n_leaves : {1, 2, 3, 5, 6, 7, 8, 11}) {
    std::string data = Bytes(n_leaves * kChunk - 3);
    std::vector<Digest256> leaves;
    for (size_t i = 0; i < n_leaves; ++i) {
      leaves.push_back(MerkleLeafHash(std::string_view(data).substr(i * kChunk, kChunk)));
    }
    EXPECT_EQ(MerkleRoot(data, nullptr), Rfc6962Root(leaves, 0, n_leaves)) << n_leaves;
  }
}

TEST(MerkleTest, KnownAnswers) {
  // Empty stream: SHA-256 of nothing. One byte: SHA-256(0x00 || 'a').
  EXPECT_EQ(Sha256::ToHex(MerkleRoot("", nullptr)), Sha256Hex(""));
  EXPECT_EQ(Sha256::ToHex(MerkleRoot("a", nullptr)), Sha256Hex(std::string("\0a", 2)));
  // Two leaves: node(leaf(chunk of 'x'), leaf("y")) spelled out with plain SHA-256.
  std::string data(kChunk, 'x');
  data += 'y';
  std::string leaf0 = std::string(1, '\0') + std::string(kChunk, 'x');
  std::string leaf1 = std::string(1, '\0') + "y";
  Digest256 l0 = Sha256Of(leaf0), l1 = Sha256Of(leaf1);
  std::string node =
      std::string(1, '\1') + std::string(l0.begin(), l0.end()) + std::string(l1.begin(), l1.end());
  EXPECT_EQ(Sha256::ToHex(MerkleRoot(data, nullptr)), Sha256Hex(node));
}

TEST(MerkleTest, LeafAndNodeAreDomainSeparated) {
  // A leaf whose content is two digests must not collide with the node over them.
  Digest256 a = Sha256Of("a"), b = Sha256Of("b");
  std::string concat(a.begin(), a.end());
  concat.append(b.begin(), b.end());
  EXPECT_NE(MerkleLeafHash(concat), MerkleNodeHash(a, b));
}

TEST(MerkleTest, FileDigestsEqualMemoryDigests) {
  char tmpl[] = "/tmp/detrain_merkle_XXXXXX";
  int fd = mkstemp(tmpl);
  ASSERT_GE(fd, 0);
  close(fd);
  for (size_t size : {size_t{0}, size_t{5}, 3 * kChunk, 9 * kChunk + 1}) {
    std::string data = Bytes(size);
    std::ofstream(tmpl, std::ios::binary).write(data.data(), static_cast<long>(data.size()));
    for (size_t threads : {1, 2, 3}) {
      ThreadPool pool(threads);
      Result<FileDigests> d = DigestFile(tmpl, pool);
      ASSERT_TRUE(d.ok()) << d.status().ToString();
      EXPECT_EQ(d->size, size);
      EXPECT_EQ(d->sha256, Sha256Of(data));
      EXPECT_EQ(d->merkle_root, MerkleRoot(data, nullptr));
      EXPECT_EQ(d->leaf_count, (size + kChunk - 1) / kChunk);
    }
  }
  unlink(tmpl);
}

TEST(MerkleTest, MissingFileIsNotFound) {
  ThreadPool pool(1);
  Result<FileDigests> d = DigestFile("/nonexistent/detrain/file", pool);
  ASSERT_FALSE(d.ok());
  EXPECT_EQ(d.status().code(), StatusCode::kNotFound);
  EXPECT_NE(d.status().message().find("/nonexistent/detrain/file"), std::string::npos);
}

}  // namespace
}  // namespace detrain::attest
