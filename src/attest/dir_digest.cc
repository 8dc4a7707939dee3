// See dir_digest.h and schemas/directory-digest.md.
#include "attest/dir_digest.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <filesystem>
#include <system_error>

#include "attest/canonical_json.h"
#include "attest/merkle.h"
#include "base/file_io.h"

namespace detrain::attest {
namespace {

namespace fs = std::filesystem;

Status CheckPathName(const std::string& rel) {
  if (rel.find('\n') != std::string::npos) {
    return InvalidArgument(rel + ": file names containing a newline cannot be digested");
  }
  if (!IsValidUtf8(rel)) return InvalidArgument(rel + ": file name is not valid UTF-8");
  return Status::Ok();
}

// Lists regular files under root (relative paths), rejecting anything else.
Status ListFiles(const std::string& root, std::vector<std::string>* out) {
  std::error_code ec;
  fs::recursive_directory_iterator it(root, fs::directory_options::none, ec);
  if (ec) return IoError(root + ": " + ec.message());
  for (const fs::recursive_directory_iterator end; it != end; it.increment(ec)) {
    if (ec) return IoError(root + ": " + ec.message());
    const fs::path& p = it->path();
    std::string rel = p.lexically_relative(root).generic_string();
    fs::file_status st = it->symlink_status(ec);
    if (ec) return IoError(p.string() + ": " + ec.message());
    if (fs::is_symlink(st)) {
      return InvalidArgument(p.string() +
                             ": is a symbolic link; symlinks are not digested "
                             "(a link's target could change without the digest changing)");
    }
    if (fs::is_directory(st)) continue;
    if (!fs::is_regular_file(st)) {
      return InvalidArgument(p.string() + ": not a regular file (device, socket or FIFO)");
    }
    DETRAIN_RETURN_IF_ERROR(CheckPathName(rel));
    out->push_back(std::move(rel));
  }
  if (ec) return IoError(root + ": " + ec.message());
  std::sort(out->begin(), out->end());  // std::string compares bytes (as unsigned char)
  return Status::Ok();
}

// Streams one file through SHA-256 without holding it in memory.
Status HashFile(const std::string& path, FileEntryDigest* out) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return IoError(ErrnoMessage(path, errno));
  Sha256 h;
  std::vector<char> buf(1 << 20);
  for (;;) {
    ssize_t n = ::read(fd, buf.data(), buf.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      int err = errno;
      ::close(fd);
      return IoError(ErrnoMessage(path, err));
    }
    if (n == 0) break;
    h.Update(buf.data(), static_cast<size_t>(n));
    out->size += static_cast<uint64_t>(n);
  }
  ::close(fd);
  out->sha256 = h.Final();
  return Status::Ok();
}

bool IsOmsDefaultIgnored(const std::string& rel) {
  size_t slash = rel.find('/');
  std::string top = rel.substr(0, slash);
  return top == ".git" || top == ".gitignore" || top == ".gitattributes" || top == ".github";
}

}  // namespace

Digest256 DirHash1(const std::vector<FileEntryDigest>& files) {
  Sha256 h;
  for (const auto& f : files) {
    h.Update(Sha256::ToHex(f.sha256));
    h.Update("  ");
    h.Update(f.path);
    h.Update("\n");
  }
  return h.Final();
}

Digest256 OmsRootDigest(const std::vector<FileEntryDigest>& files, size_t* used) {
  Sha256 h;
  size_t n = 0;
  for (const auto& f : files) {
    if (IsOmsDefaultIgnored(f.path)) continue;
    h.Update(f.sha256.data(), f.sha256.size());
    ++n;
  }
  if (used != nullptr) *used = n;
  return h.Final();
}

Result<DirectoryDigest> DigestDirectory(const std::string& root, ThreadPool& pool) {
  std::vector<std::string> paths;
  DETRAIN_RETURN_IF_ERROR(ListFiles(root, &paths));
  DirectoryDigest out;
  out.files.resize(paths.size());
  std::vector<Status> errors(paths.size());
  pool.ParallelFor(paths.size(), [&](size_t i) {
    out.files[i].path = paths[i];
    errors[i] = HashFile(root + "/" + paths[i], &out.files[i]);
  });
  for (const Status& st : errors) DETRAIN_RETURN_IF_ERROR(st);  // first error in path order
  for (const auto& f : out.files) out.total_bytes += f.size;
  out.dirhash1 = DirHash1(out.files);
  out.oms_root = OmsRootDigest(out.files, &out.oms_file_count);
  return out;
}

}  // namespace detrain::attest
