// See archive.h. The ustar header's fields are written and checked here byte by byte; packing
// streams each file into a temporary archive (its SHA-256 computed on the way) renamed at the
// end, and BundleSource unpacks an archive into a temporary directory its destructor removes.
#include "evidence/bundle/archive.h"

#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <set>
#include <vector>

#include "attest/canonical_json.h"
#include "attest/merkle.h"
#include "attest/sha256.h"
#include "base/file_io.h"
#include "base/fs.h"
#include "base/thread_pool.h"

namespace detrain::bundle {
namespace {

constexpr size_t kBlock = 512;
constexpr uint64_t kRecord = 10240;  // tar's default record: 20 blocks
// ustar's 11 octal digits of size.
constexpr uint64_t kMaxEntryBytes = (uint64_t{1} << 33) - 1;
constexpr uint64_t kMaxEntries = 1'000'000;
constexpr size_t kMaxDepth = 16;
constexpr size_t kChunk = size_t{1} << 20;

// Field offsets and sizes of a ustar header (POSIX.1-1988).
struct Field {
  size_t offset, size;
};
constexpr Field kName{0, 100}, kMode{100, 8}, kUid{108, 8}, kGid{116, 8}, kSize{124, 12},
    kMtime{136, 12}, kChecksum{148, 8}, kTypeflag{156, 1}, kLinkname{157, 100}, kMagic{257, 6},
    kVersion{263, 2}, kPrefix{345, 155};

void PutOctal(char* block, Field f, uint64_t value) {
  // f.size - 1 digits, zero-padded, then NUL.
  std::snprintf(block + f.offset, f.size, "%0*llo", static_cast<int>(f.size - 1),
                static_cast<unsigned long long>(value));
}

uint64_t ChecksumOf(const char* block) {
  uint64_t sum = 0;
  for (size_t i = 0; i < kBlock; ++i) {
    const bool in_field = i >= kChecksum.offset && i < kChecksum.offset + kChecksum.size;
    sum += in_field ? uint64_t{' '} : static_cast<unsigned char>(block[i]);
  }
  return sum;
}

std::string FieldText(const char* block, Field f) {
  const char* p = block + f.offset;
  size_t n = 0;
  while (n < f.size && p[n] != '\0') ++n;
  return std::string(p, n);
}

// An octal number field: optional leading spaces, digits, then NUL or spaces.
std::optional<uint64_t> ParseOctal(const char* block, Field f) {
  const char* p = block + f.offset;
  size_t i = 0;
  while (i < f.size && p[i] == ' ') ++i;
  uint64_t v = 0;
  size_t digits = 0;
  for (; i < f.size && p[i] >= '0' && p[i] <= '7'; ++i, ++digits) {
    if (v > (UINT64_MAX >> 3)) return std::nullopt;
    v = v * 8 + static_cast<uint64_t>(p[i] - '0');
  }
  if (digits == 0) return std::nullopt;
  for (; i < f.size; ++i) {
    if (p[i] != '\0' && p[i] != ' ') return std::nullopt;
  }
  return v;
}

// A header for a regular file at `path`; false when the path cannot be stored.
bool MakeHeader(const std::string& path, uint64_t size, char* block) {
  std::memset(block, 0, kBlock);
  std::string name = path, prefix;
  if (name.size() > kName.size) {
    // Split at a '/' so that the name part fits in 100 bytes and the prefix in 155.
    size_t cut = std::string::npos;
    for (size_t i = 0; i < path.size(); ++i) {
      if (path[i] == '/' && path.size() - i - 1 <= kName.size && i <= kPrefix.size) {
        cut = i;
        break;
      }
    }
    if (cut == std::string::npos) return false;
    prefix = path.substr(0, cut);
    name = path.substr(cut + 1);
  }
  std::memcpy(block + kName.offset, name.data(), name.size());
  std::memcpy(block + kPrefix.offset, prefix.data(), prefix.size());
  PutOctal(block, kMode, 0644);
  PutOctal(block, kUid, 0);
  PutOctal(block, kGid, 0);
  PutOctal(block, kSize, size);
  PutOctal(block, kMtime, 0);
  block[kTypeflag.offset] = '0';
  std::memcpy(block + kMagic.offset, "ustar", 6);  // with its NUL
  std::memcpy(block + kVersion.offset, "00", 2);
  std::snprintf(block + kChecksum.offset, kChecksum.size, "%06o",
                static_cast<unsigned>(ChecksumOf(block) & 0777777u));
  block[kChecksum.offset + 7] = ' ';
  return true;
}

bool ValidHeader(const char* block) {
  const std::string magic(block + kMagic.offset, 5);
  if (magic != "ustar") return false;
  std::optional<uint64_t> sum = ParseOctal(block, kChecksum);
  return sum.has_value() && *sum == ChecksumOf(block);
}

bool AllZero(const char* block) {
  for (size_t i = 0; i < kBlock; ++i) {
    if (block[i] != 0) return false;
  }
  return true;
}

// Why an entry's path may not be unpacked, or "".
std::string PathProblem(const std::string& path) {
  if (path.empty()) return "an empty path";
  if (path[0] == '/') return "an absolute path";
  if (!attest::IsValidUtf8(path)) return "a path that is not valid UTF-8";
  for (unsigned char c : path) {
    if (c < 0x20 || c == 0x7f) return "a control byte in its path";
    if (c == '\\') return "a backslash in its path";
  }
  size_t depth = 0, start = 0;
  while (start <= path.size()) {
    size_t end = path.find('/', start);
    if (end == std::string::npos) end = path.size();
    const std::string part = path.substr(start, end - start);
    if (part.empty()) return "an empty path component";
    if (part == "..") return "a '..' component";
    if (part == ".") return "a '.' component";
    if (part.size() > 255) return "a path component longer than 255 bytes";
    if (++depth > kMaxDepth) return "a path deeper than 16 components";
    start = end + 1;
  }
  return "";
}

Status WriteAllFd(int fd, const char* data, size_t size, const std::string& path) {
  while (size > 0) {
    ssize_t n = ::write(fd, data, size);
    if (n < 0) {
      if (errno == EINTR) continue;
      return IoError(ErrnoMessage(path, errno));
    }
    data += n;
    size -= static_cast<size_t>(n);
  }
  return Status::Ok();
}

Status ReadExact(int fd, uint64_t offset, char* data, size_t size, const std::string& path) {
  size_t done = 0;
  while (done < size) {
    ssize_t n = ::pread(fd, data + done, size - done, static_cast<off_t>(offset + done));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return IoError(ErrnoMessage(path, errno));
    if (n == 0) return DataLoss(path + ": ends early (truncated)");
    done += static_cast<size_t>(n);
  }
  return Status::Ok();
}

// The directories of `relative` (an entry's checked path, or "." for none) below `root`, made one
// at a time; an error names the entry (`named`), not the temporary root.
Status MakeEntryDirs(const std::string& root, const std::string& relative,
                     const std::string& named) {
  if (relative == "." || relative.empty()) return Status::Ok();
  for (size_t end = relative.find('/');; end = relative.find('/', end + 1)) {
    const std::string path = JoinPath(root, relative.substr(0, end));
    if (::mkdir(path.c_str(), 0755) != 0 && errno != EEXIST) {
      return IoError(named + ": creating its directory: " + std::strerror(errno));
    }
    struct stat st;
    if (::lstat(path.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
      return InvalidArgument(named + ": \"" + relative.substr(0, end) +
                             "\" is a file of an earlier entry, not a directory");
    }
    if (end == std::string::npos) return Status::Ok();
  }
}

class Fd {
 public:
  explicit Fd(int fd = -1) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }
  int release() {
    int f = fd_;
    fd_ = -1;
    return f;
  }

 private:
  int fd_;
};

std::string Canonical(const std::string& path) {
  std::error_code ec;
  std::filesystem::path p = std::filesystem::weakly_canonical(path, ec);
  return ec ? path : p.string();
}

}  // namespace

Result<PackResult> PackBundle(const std::string& dir, const std::string& archive) {
  if (!IsDirectory(dir)) return InvalidArgument(dir + ": not a bundle directory");
  const std::string cdir = Canonical(dir) + "/", carchive = Canonical(archive);
  if (carchive.rfind(cdir, 0) == 0) {
    return InvalidArgument(archive + ": inside the bundle it would pack");
  }
  if (!PathExists(JoinPath(dir, "manifest.json"))) {
    return InvalidArgument(dir + ": no manifest.json; pack a finished bundle");
  }
  DETRAIN_RETURN_IF_ERROR(CheckOutputPath(archive));
  DETRAIN_ASSIGN_OR_RETURN(std::vector<std::string> files, ListFiles(dir));
  std::string tmp = archive + ".tmp.XXXXXX";
  Fd out(::mkstemp(tmp.data()));
  if (out.get() < 0) return IoError(ErrnoMessage(archive, errno) + " (creating its temporary)");
  PackResult result;
  attest::Sha256 sha;
  std::string buf;
  auto emit = [&](const char* data, size_t size) -> Status {
    sha.Update(data, size);
    result.bytes += size;
    return WriteAllFd(out.get(), data, size, archive);
  };
  Status status = [&]() -> Status {
    char header[kBlock];
    for (const std::string& rel : files) {
      const std::string path = JoinPath(dir, rel);
      Fd in(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
      if (in.get() < 0) return IoError(ErrnoMessage(path, errno));
      struct stat st {};
      if (::fstat(in.get(), &st) != 0) return IoError(ErrnoMessage(path, errno));
      if (!S_ISREG(st.st_mode)) return InvalidArgument(path + ": not a regular file");
      const uint64_t size = static_cast<uint64_t>(st.st_size);
      if (size > kMaxEntryBytes) return InvalidArgument(path + ": larger than ustar's 8 GiB");
      if (!MakeHeader(rel, size, header)) {
        return InvalidArgument(rel + ": a path ustar cannot store (over 255 bytes)");
      }
      DETRAIN_RETURN_IF_ERROR(emit(header, kBlock));
      for (uint64_t off = 0; off < size; off += kChunk) {
        const size_t n = static_cast<size_t>(std::min<uint64_t>(kChunk, size - off));
        buf.resize(n);
        Status r = ReadExact(in.get(), off, buf.data(), n, path);
        if (!r.ok()) return DataLoss(path + ": changed while it was packed");
        DETRAIN_RETURN_IF_ERROR(emit(buf.data(), n));
      }
      const size_t pad = static_cast<size_t>((kBlock - size % kBlock) % kBlock);
      const std::string zeros(pad, '\0');
      DETRAIN_RETURN_IF_ERROR(emit(zeros.data(), pad));
      ++result.files;
    }
    // The end: two zero blocks, then zeros to a whole record.
    uint64_t end = result.bytes + 2 * kBlock;
    end = (end + kRecord - 1) / kRecord * kRecord;
    const std::string zeros(static_cast<size_t>(end - result.bytes), '\0');
    DETRAIN_RETURN_IF_ERROR(emit(zeros.data(), zeros.size()));
    if (::fchmod(out.get(), 0644) != 0 || ::fsync(out.get()) != 0) {
      return IoError(ErrnoMessage(archive, errno));
    }
    if (::close(out.release()) != 0) return IoError(ErrnoMessage(archive, errno));
    if (::rename(tmp.c_str(), archive.c_str()) != 0) return IoError(ErrnoMessage(archive, errno));
    return SyncDirectory(DirName(archive));
  }();
  if (!status.ok()) {
    ::unlink(tmp.c_str());
    return status;
  }
  result.sha256 = sha.HexDigest();
  return result;
}

Result<uint64_t> UnpackBundle(const std::string& archive, const std::string& dir) {
  DETRAIN_ASSIGN_OR_RETURN(uint64_t total, RegularFileSize(archive));
  if (PathExists(dir)) return InvalidArgument(dir + ": exists; unpack into a new directory");
  Fd in(::open(archive.c_str(), O_RDONLY | O_CLOEXEC));
  if (in.get() < 0) return IoError(ErrnoMessage(archive, errno));
  std::string tmp = dir + ".tmp.XXXXXX";
  if (::mkdtemp(tmp.data()) == nullptr) {
    return IoError(ErrnoMessage(dir, errno) + " (creating its temporary directory)");
  }
  uint64_t files = 0;
  Status status = [&]() -> Status {
    std::set<std::string> seen;
    char header[kBlock];
    std::string buf;
    uint64_t off = 0;
    for (uint64_t entry = 0;; ++entry) {
      if (off + kBlock > total) {
        return DataLoss(archive + ": truncated at byte " + std::to_string(off) +
                        " (no end-of-archive marker)");
      }
      DETRAIN_RETURN_IF_ERROR(ReadExact(in.get(), off, header, kBlock, archive));
      if (AllZero(header)) {
        // The end: a second zero block must follow.
        char second[kBlock];
        if (off + 2 * kBlock > total)
          return DataLoss(archive + ": truncated end-of-archive marker");
        DETRAIN_RETURN_IF_ERROR(ReadExact(in.get(), off + kBlock, second, kBlock, archive));
        if (!AllZero(second)) {
          return DataLoss(archive + ": a zero block at byte " + std::to_string(off) +
                          " followed by data");
        }
        // After the marker, only the zeros that fill its record (kRecord): anything more — a
        // hidden entry, a second archive, garbage — is a payload nobody would check.
        const uint64_t marker_end = off + 2 * kBlock;
        const uint64_t record_end = (marker_end + kRecord - 1) / kRecord * kRecord;
        if (total > record_end) {
          return DataLoss(archive + ": " + std::to_string(total - marker_end) +
                          " bytes after the end-of-archive marker at byte " + std::to_string(off) +
                          " (more than the zeros of its record)");
        }
        std::string rest(static_cast<size_t>(total - marker_end), '\0');
        DETRAIN_RETURN_IF_ERROR(ReadExact(in.get(), marker_end, rest.data(), rest.size(), archive));
        if (rest.find_first_not_of('\0') != std::string::npos) {
          return DataLoss(archive + ": data after the end-of-archive marker at byte " +
                          std::to_string(off));
        }
        return Status::Ok();
      }
      const std::string where =
          archive + ": entry " + std::to_string(entry + 1) + " (byte " + std::to_string(off) + ")";
      if (entry >= kMaxEntries) return InvalidArgument(where + ": more than 1000000 entries");
      if (!ValidHeader(header)) {
        return DataLoss(where + ": not a ustar header (bad magic or checksum)");
      }
      const std::string prefix = FieldText(header, kPrefix), name = FieldText(header, kName);
      const std::string path = prefix.empty() ? name : prefix + "/" + name;
      const std::string named = where + " \"" + path + "\"";
      const char type = header[kTypeflag.offset];
      std::optional<uint64_t> size = ParseOctal(header, kSize);
      if (!size.has_value()) return DataLoss(named + ": its size field is not an octal number");
      if (type == '1' || type == '2') {
        return InvalidArgument(named + ": a link (to \"" + FieldText(header, kLinkname) +
                               "\"); a bundle archive holds regular files only");
      }
      const bool is_dir = type == '5';
      if (type != '0' && type != '\0' && !is_dir) {
        return InvalidArgument(named + ": entry type '" + std::string(1, type) +
                               "' (not a regular file or directory)");
      }
      std::string clean = path;
      if (is_dir && !clean.empty() && clean.back() == '/') clean.pop_back();
      if (std::string why = PathProblem(clean); !why.empty()) {
        return InvalidArgument(named + ": " + why);
      }
      if (!seen.insert(clean).second) return InvalidArgument(named + ": a duplicate path");
      off += kBlock;
      if (*size > total - off) {
        return DataLoss(named + ": " + std::to_string(*size) + " bytes, past the end of the " +
                        "archive (truncated or a lying size)");
      }
      // Errors name the archive and the entry, never the temporary directory (removed on error).
      if (Status made = MakeEntryDirs(tmp, is_dir ? clean : DirName(clean), named); !made.ok()) {
        return made;
      }
      if (is_dir) {
        if (*size != 0) return DataLoss(named + ": a directory with data");
        continue;
      }
      const std::string target = JoinPath(tmp, clean);
      Fd out(::open(target.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644));
      if (out.get() < 0) return IoError(ErrnoMessage(named, errno));
      for (uint64_t done = 0; done < *size; done += kChunk) {
        const size_t n = static_cast<size_t>(std::min<uint64_t>(kChunk, *size - done));
        buf.resize(n);
        DETRAIN_RETURN_IF_ERROR(ReadExact(in.get(), off + done, buf.data(), n, archive));
        DETRAIN_RETURN_IF_ERROR(WriteAllFd(out.get(), buf.data(), n, named));
      }
      if (::fsync(out.get()) != 0) return IoError(ErrnoMessage(named, errno));
      off += (*size + kBlock - 1) / kBlock * kBlock;
      ++files;
    }
  }();
  if (status.ok() && ::rename(tmp.c_str(), dir.c_str()) != 0) {
    status = IoError(ErrnoMessage(dir, errno));
  }
  if (!status.ok()) {
    std::error_code ec;
    std::filesystem::remove_all(tmp, ec);
    return status;
  }
  DETRAIN_RETURN_IF_ERROR(SyncDirectory(DirName(dir)));
  return files;
}

bool IsArchive(const std::string& path) {
  Result<uint64_t> size = RegularFileSize(path);
  if (!size.ok() || *size < kBlock) return false;
  Fd in(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  char header[kBlock];
  return in.get() >= 0 && ReadExact(in.get(), 0, header, kBlock, path).ok() && ValidHeader(header);
}

Result<BundleSource> BundleSource::Open(const std::string& path) {
  BundleSource s;
  if (IsDirectory(path)) {
    s.dir_ = path;
    return s;
  }
  if (!PathExists(path)) return NotFound(path + ": no such bundle directory or archive");
  if (!IsArchive(path)) {
    return InvalidArgument(path +
                           ": neither a bundle directory nor a bundle archive (detrain "
                           "pack)");
  }
  {
    ThreadPool pool(1);
    DETRAIN_ASSIGN_OR_RETURN(attest::FileDigests d, attest::DigestFile(path, pool));
    s.archive_sha256_ = attest::Sha256::ToHex(d.sha256);
  }
  std::error_code ec;
  std::string root = (std::filesystem::temp_directory_path(ec) / "detrain-unpack.XXXXXX").string();
  if (ec || ::mkdtemp(root.data()) == nullptr) {
    return IoError("creating a temporary directory to unpack " + path +
                   " into: " + std::strerror(errno));
  }
  s.temp_root_ = root;
  std::string name = BaseName(path);
  if (name.size() > 4 && name.substr(name.size() - 4) == ".tar") name.resize(name.size() - 4);
  if (PathProblem(name) != "") name = "bundle";
  s.dir_ = JoinPath(root, name);
  DETRAIN_RETURN_IF_ERROR(UnpackBundle(path, s.dir_).status());
  return s;
}

BundleSource::BundleSource(BundleSource&& o) noexcept
    : dir_(std::move(o.dir_)),
      temp_root_(std::move(o.temp_root_)),
      archive_sha256_(std::move(o.archive_sha256_)) {
  o.temp_root_.clear();
}

BundleSource::~BundleSource() {
  if (!temp_root_.empty()) {
    std::error_code ec;
    std::filesystem::remove_all(temp_root_, ec);
  }
}

}  // namespace detrain::bundle
