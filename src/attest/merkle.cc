// See merkle.h and schemas/merkle.md.
#include "attest/merkle.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <memory>

#include "base/file_io.h"
#include "base/pairwise_tree.h"

namespace detrain::attest {

Digest256 MerkleLeafHash(std::string_view chunk) {
  static constexpr uint8_t kLeafPrefix = 0x00;
  Sha256 h;
  h.Update(&kLeafPrefix, 1);
  h.Update(chunk);
  return h.Final();
}

Digest256 MerkleNodeHash(const Digest256& left, const Digest256& right) {
  static constexpr uint8_t kNodePrefix = 0x01;
  Sha256 h;
  h.Update(&kNodePrefix, 1);
  h.Update(left.data(), left.size());
  h.Update(right.data(), right.size());
  return h.Final();
}

// The Merkle tree is the shard tree's shape (base/pairwise_tree.h): neighbours hashed in index
// order level by level, an odd last hash carried up unchanged (schemas/merkle.md).
Digest256 MerkleRootOfLeaves(std::vector<Digest256> level) {
  if (level.empty()) return Sha256Of("");
  return PairwiseTreeInPlace(level.data(), static_cast<int64_t>(level.size()), MerkleNodeHash);
}

Digest256 MerkleRoot(std::string_view data, ThreadPool* pool) {
  size_t n = (data.size() + kMerkleChunkSize - 1) / kMerkleChunkSize;
  std::vector<Digest256> leaves(n);
  auto leaf = [&](size_t i) {
    leaves[i] = MerkleLeafHash(data.substr(i * kMerkleChunkSize, kMerkleChunkSize));
  };
  if (pool != nullptr) {
    pool->ParallelFor(n, leaf);
  } else {
    for (size_t i = 0; i < n; ++i) leaf(i);
  }
  return MerkleRootOfLeaves(std::move(leaves));
}

namespace {

// Fills buf[0, want) from fd unless EOF comes first; returns the bytes read.
Result<size_t> ReadUpTo(int fd, char* buf, size_t want, const std::string& path) {
  size_t got = 0;
  while (got < want) {
    ssize_t n = ::read(fd, buf + got, want - got);
    if (n < 0) {
      if (errno == EINTR) continue;
      return IoError(ErrnoMessage(path, errno));
    }
    if (n == 0) break;
    got += static_cast<size_t>(n);
  }
  return got;
}

}  // namespace

Result<FileDigests> DigestFile(const std::string& path, ThreadPool& pool,
                               const ProgressFn& progress) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    int err = errno;
    if (err == ENOENT) return NotFound(path + ": no such file or directory");
    return IoError(ErrnoMessage(path, err));
  }
  // A batch holds 4 chunks per thread; task 0 extends the flat hash while the others hash leaves.
  const size_t batch_chunks = 4 * pool.size();
  std::unique_ptr<char[]> buf(new char[batch_chunks * kMerkleChunkSize]);
  Sha256 flat;
  std::vector<Digest256> leaves;
  FileDigests out;
  for (;;) {
    Result<size_t> got = ReadUpTo(fd, buf.get(), batch_chunks * kMerkleChunkSize, path);
    if (!got.ok()) {
      ::close(fd);
      return got.status();
    }
    if (*got == 0) break;
    std::string_view batch(buf.get(), *got);
    size_t n = (*got + kMerkleChunkSize - 1) / kMerkleChunkSize;
    size_t base = leaves.size();
    leaves.resize(base + n);
    pool.ParallelFor(n + 1, [&](size_t i) {
      if (i == 0) {
        flat.Update(batch);
      } else {
        leaves[base + i - 1] =
            MerkleLeafHash(batch.substr((i - 1) * kMerkleChunkSize, kMerkleChunkSize));
      }
    });
    out.size += *got;
    if (progress) progress(out.size);
    if (*got < batch_chunks * kMerkleChunkSize) break;
  }
  ::close(fd);
  out.sha256 = flat.Final();
  out.leaf_count = leaves.size();
  out.merkle_root = MerkleRootOfLeaves(std::move(leaves));
  return out;
}

}  // namespace detrain::attest
