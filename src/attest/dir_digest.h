// Directory digests (schemas/directory-digest.md).
//
// A directory is the set of its regular files, named by relative '/'-separated paths sorted by
// their bytes. Two digests are computed over one walk:
//   dirhash1 — SHA-256 over the lines "<sha256 hex><2 spaces><path>\n" of all files: the in-toto
//              `dirHash1` digest (Go's dirhash "h1" in hex), the same value as
//              `find . -type f | cut -c3- | LC_ALL=C sort | xargs -r sha256sum | sha256sum`.
//   oms_root — the OpenSSF model-signing v1.0 root digest for the `files` serialization: SHA-256
//              over the concatenated 32-byte file digests in path order, with the top-level paths
//              .git, .gitignore, .gitattributes and .github left out as model_signing does by
//              default.
// Symbolic links, devices, sockets and FIFOs are errors naming the path; file contents only are
// hashed (not modes, owners or times). Paths must be valid UTF-8 without newlines.
//
// Thread safety: reentrant; files are hashed in parallel on the borrowed pool, and the result
// does not depend on the thread count (per-file digests are combined in path order).
#ifndef DETRAIN_ATTEST_DIR_DIGEST_H_
#define DETRAIN_ATTEST_DIR_DIGEST_H_

#include <cstdint>
#include <string>
#include <vector>

#include "attest/sha256.h"
#include "base/status.h"
#include "base/thread_pool.h"

namespace detrain::attest {

struct FileEntryDigest {
  std::string path;  // relative, '/'-separated
  uint64_t size = 0;
  Digest256 sha256{};
};

struct DirectoryDigest {
  std::vector<FileEntryDigest> files;  // sorted by path bytes
  uint64_t total_bytes = 0;
  Digest256 dirhash1{};
  Digest256 oms_root{};
  size_t oms_file_count = 0;
};

Result<DirectoryDigest> DigestDirectory(const std::string& root, ThreadPool& pool);

// The two combinations, exposed for tests and for the bundle code.
Digest256 DirHash1(const std::vector<FileEntryDigest>& sorted_files);
Digest256 OmsRootDigest(const std::vector<FileEntryDigest>& sorted_files, size_t* used = nullptr);

}  // namespace detrain::attest

#endif  // DETRAIN_ATTEST_DIR_DIGEST_H_
