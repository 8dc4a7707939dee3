// `detrain pack` / `unpack`: a bundle as one deterministic POSIX ustar archive, for long-term
// storage (schemas/bundle.md §8).
//
// The same bundle always gives the same bytes: one entry per regular file (no directory
// entries), sorted by path bytes, each with mode 0644, uid and gid 0, empty user and group
// names, mtime 0 and typeflag '0'; a path longer than 100 bytes is split into ustar's prefix
// and name fields at a '/'. Two zero blocks end the archive, which is padded to a multiple of
// 10240 bytes (tar's default record). Packing reads regular files only (a link, FIFO or device
// in the bundle is an error) and writes the archive atomically.
//
// Unpacking treats the archive as hostile: every header's checksum, magic, size (octal, within
// the archive) and path are checked before anything is written; absolute paths, `..` or `.`
// components, empty components, control bytes, invalid UTF-8, duplicate paths, links, devices,
// FIFOs and any other entry type are refused, naming the entry. Files go into a new temporary
// directory that is renamed to the destination only when every entry is in, so a failure leaves
// nothing behind.
//
// Thread safety: independent calls on different paths are safe.
#ifndef DETRAIN_EVIDENCE_BUNDLE_ARCHIVE_H_
#define DETRAIN_EVIDENCE_BUNDLE_ARCHIVE_H_

#include <cstdint>
#include <string>

#include "base/status.h"

namespace detrain::bundle {

struct PackResult {
  uint64_t files = 0;
  uint64_t bytes = 0;  // the archive's size
  std::string sha256;  // of the archive, hex
};

// Packs every regular file under `dir` into `archive` (which must not be inside `dir`).
Result<PackResult> PackBundle(const std::string& dir, const std::string& archive);

// Restores `archive` into `dir`, which must not exist.
Result<uint64_t> UnpackBundle(const std::string& archive, const std::string& dir);

// True when `path` is a regular file whose first block is a ustar header (what `verify` and
// `inspect` read as an archive rather than a bundle directory).
bool IsArchive(const std::string& path);

// A bundle to read from a path that is a directory or an archive: an archive is unpacked into a
// new temporary directory, removed again when this object goes.
class BundleSource {
 public:
  static Result<BundleSource> Open(const std::string& path);
  BundleSource(BundleSource&& other) noexcept;
  BundleSource& operator=(BundleSource&&) = delete;
  BundleSource(const BundleSource&) = delete;
  ~BundleSource();

  const std::string& dir() const { return dir_; }
  bool is_archive() const { return !archive_sha256_.empty(); }
  const std::string& archive_sha256() const { return archive_sha256_; }

 private:
  BundleSource() = default;
  std::string dir_;
  std::string temp_root_;  // removed on destruction
  std::string archive_sha256_;
};

}  // namespace detrain::bundle

#endif  // DETRAIN_EVIDENCE_BUNDLE_ARCHIVE_H_
