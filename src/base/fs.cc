// See fs.h.
#include "base/fs.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "base/fault_injection.h"
#include "base/file_io.h"

namespace detrain {
namespace {

constexpr int kMaxDepth = 16;

Status Walk(const std::string& root, const std::string& rel, int depth,
            std::vector<std::string>* out) {
  if (depth > kMaxDepth)
    return InvalidArgument(JoinPath(root, rel) + ": directories nested too deep");
  const std::string dir = rel.empty() ? root : JoinPath(root, rel);
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) return IoError(ErrnoMessage(dir, errno));
  std::vector<std::string> names;
  while (dirent* e = ::readdir(d)) {
    std::string name = e->d_name;
    if (name != "." && name != "..") names.push_back(name);
  }
  ::closedir(d);
  std::sort(names.begin(), names.end());
  for (const std::string& name : names) {
    const std::string r = rel.empty() ? name : rel + "/" + name;
    struct stat st;
    if (::lstat(JoinPath(root, r).c_str(), &st) != 0) {
      return IoError(ErrnoMessage(JoinPath(root, r), errno));
    }
    if (S_ISDIR(st.st_mode)) {
      DETRAIN_RETURN_IF_ERROR(Walk(root, r, depth + 1, out));
    } else if (S_ISREG(st.st_mode)) {
      out->push_back(r);
    } else {
      return InvalidArgument(r + ": not a regular file or directory (" +
                             (S_ISLNK(st.st_mode) ? "a symbolic link" : "a special file") + ")");
    }
  }
  return Status::Ok();
}

}  // namespace

std::string JoinPath(const std::string& a, const std::string& b) {
  if (a.empty()) return b;
  return a.back() == '/' ? a + b : a + "/" + b;
}

std::string BaseName(const std::string& path) {
  size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

std::string DirName(const std::string& path) {
  size_t slash = path.rfind('/');
  return slash == std::string::npos ? "." : path.substr(0, slash);
}

Status MakeDirs(const std::string& path) {
  if (path.empty()) return Status::Ok();
  size_t pos = 0;
  while (pos != std::string::npos) {
    pos = path.find('/', pos + 1);
    std::string prefix = path.substr(0, pos);
    if (prefix.empty() || IsDirectory(prefix)) continue;
    if (int injected = fault::Check(fault::Op::kMakeDir, prefix); injected != 0) {
      return IoError(ErrnoMessage(prefix, injected) + " (creating the directory)");
    }
    if (::mkdir(prefix.c_str(), 0755) != 0 && errno != EEXIST) {
      return IoError(ErrnoMessage(prefix, errno) + " (creating the directory)");
    }
  }
  if (!IsDirectory(path)) return IoError(path + ": not a directory");
  return Status::Ok();
}

bool PathExists(const std::string& path) {
  struct stat st;
  return ::lstat(path.c_str(), &st) == 0;
}

bool IsDirectory(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

Result<std::vector<std::string>> ListFiles(const std::string& dir) {
  std::vector<std::string> out;
  DETRAIN_RETURN_IF_ERROR(Walk(dir, "", 0, &out));
  std::sort(out.begin(), out.end());
  return out;
}

Result<uint64_t> RegularFileSize(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) return IoError(ErrnoMessage(path, errno));
  if (!S_ISREG(st.st_mode)) return InvalidArgument(path + ": not a regular file");
  return static_cast<uint64_t>(st.st_size);
}

Status RemoveFile(const std::string& path) {
  if (int injected = fault::Check(fault::Op::kRemove, path); injected != 0) {
    return IoError(ErrnoMessage(path, injected) + " (removing it)");
  }
  if (::unlink(path.c_str()) != 0 && errno != ENOENT) return IoError(ErrnoMessage(path, errno));
  return Status::Ok();
}

Status SyncDirectory(const std::string& dir) {
  if (int injected = fault::Check(fault::Op::kSyncDir, dir); injected != 0) {
    return IoError(ErrnoMessage(dir, injected) + " (syncing the directory)");
  }
  int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return IoError(ErrnoMessage(dir, errno));
  Status st = ::fsync(fd) == 0 ? Status::Ok() : IoError(ErrnoMessage(dir, errno));
  ::close(fd);
  return st;
}

AppendFile::~AppendFile() {
  if (fd_ >= 0) ::close(fd_);
}

Status AppendFile::Open(const std::string& path, uint64_t keep_bytes) {
  DETRAIN_RETURN_IF_ERROR(Close());
  path_ = path;
  if (int injected = fault::Check(fault::Op::kCreate, path); injected != 0) {
    return IoError(ErrnoMessage(path, injected) + " (opening it)");
  }
  // No link is followed and no FIFO waited on (O_NONBLOCK: its open fails without a reader);
  // only a regular file is appended to.
  DETRAIN_RETURN_IF_ERROR(CheckOutputPath(path));
  fd_ = ::open(path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK, 0644);
  if (fd_ < 0) return IoError(ErrnoMessage(path, errno) + " (opening it)");
  struct stat st;
  if (::fstat(fd_, &st) != 0 || !S_ISREG(st.st_mode)) return IoError(path + ": not a regular file");
  if (int injected = fault::Check(fault::Op::kTruncate, path); injected != 0) {
    return IoError(ErrnoMessage(path, injected) + " (truncating it)");
  }
  if (::ftruncate(fd_, static_cast<off_t>(keep_bytes)) != 0) {
    return IoError(ErrnoMessage(path, errno) + " (truncating it)");
  }
  if (::lseek(fd_, 0, SEEK_END) < 0) return IoError(ErrnoMessage(path, errno));
  size_ = keep_bytes;
  return Status::Ok();
}

Status AppendFile::Append(const std::string& data) {
  if (fd_ < 0) return FailedPrecondition(path_ + ": appended to before it was opened");
  int err = 0;
  size_t done = 0;
  if (int injected = fault::Check(fault::Op::kWrite, path_); injected != 0) {
    // As a write that runs out of space part way: half the bytes, then the error.
    ssize_t n = ::write(fd_, data.data(), data.size() / 2);
    (void)n;
    fault::ExitIfArmed();
    err = injected;
  }
  while (err == 0 && done < data.size()) {
    ssize_t n = ::write(fd_, data.data() + done, data.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      err = errno;
    } else {
      done += static_cast<size_t>(n);
    }
  }
  if (err != 0) {
    // Cut the torn tail off (best effort: a crash can still leave one, which readers of an
    // append-only file must expect anyway), so that the file ends at a whole append.
    if (::ftruncate(fd_, static_cast<off_t>(size_)) == 0) ::lseek(fd_, 0, SEEK_END);
    return IoError(ErrnoMessage(path_, err));
  }
  size_ += data.size();
  return Status::Ok();
}

Status AppendFile::Sync() {
  if (fd_ < 0) return Status::Ok();
  if (int injected = fault::Check(fault::Op::kSync, path_); injected != 0) {
    return IoError(ErrnoMessage(path_, injected) + " (syncing it to disk)");
  }
  if (::fdatasync(fd_) != 0) return IoError(ErrnoMessage(path_, errno) + " (syncing it to disk)");
  return Status::Ok();
}

Status AppendFile::Close() {
  if (fd_ < 0) return Status::Ok();
  int fd = fd_;
  fd_ = -1;
  if (::close(fd) != 0) return IoError(ErrnoMessage(path_, errno));
  return Status::Ok();
}

}  // namespace detrain
