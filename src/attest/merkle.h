// Merkle digests of byte streams: fixed 1 MiB chunks, RFC 6962-style domain separation.
// The construction is specified in schemas/merkle.md; this code is its reference.
//
//   leaf(chunk)  = SHA-256(0x00 || chunk)
//   node(l, r)   = SHA-256(0x01 || l || r)
//   root(0 bytes) = SHA-256("")
//   levels are combined pairwise in index order; an odd last hash is carried up unchanged
//   (the same tree as RFC 6962's "largest power of two smaller than n" split).
//
// Leaves are hashed on a ThreadPool; the root never depends on the thread count because every
// leaf is a pure function of its chunk index and levels are combined in index order.
// Thread safety: functions are reentrant; a ThreadPool may serve one call at a time.
#ifndef DETRAIN_ATTEST_MERKLE_H_
#define DETRAIN_ATTEST_MERKLE_H_

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "attest/sha256.h"
#include "base/status.h"
#include "base/thread_pool.h"

namespace detrain::attest {

constexpr size_t kMerkleChunkSize = size_t{1} << 20;

Digest256 MerkleLeafHash(std::string_view chunk);
Digest256 MerkleNodeHash(const Digest256& left, const Digest256& right);

// Root over already-computed leaf hashes (consumed).
Digest256 MerkleRootOfLeaves(std::vector<Digest256> leaves);

// Root of an in-memory byte stream. pool may be null (single-threaded).
Digest256 MerkleRoot(std::string_view data, ThreadPool* pool);

// Digests of a whole regular file in one pass over its bytes.
struct FileDigests {
  uint64_t size = 0;
  Digest256 sha256{};       // flat SHA-256 of the bytes, as sha256sum prints it
  Digest256 merkle_root{};  // schemas/merkle.md
  uint64_t leaf_count = 0;
};

// Called after each batch read with the bytes hashed so far (for progress reports).
using ProgressFn = std::function<void(uint64_t bytes_done)>;

// Reads `path` once; the flat hash and the leaves are computed concurrently on `pool`.
// Errors name the path.
Result<FileDigests> DigestFile(const std::string& path, ThreadPool& pool,
                               const ProgressFn& progress = nullptr);

}  // namespace detrain::attest

#endif  // DETRAIN_ATTEST_MERKLE_H_
