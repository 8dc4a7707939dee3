// See file_io.h.
#include "base/file_io.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <string>

#include "base/budget.h"
#include "base/fault_injection.h"

namespace detrain {
namespace {

// Writes all of `data`; 0 or the errno of the write that failed. An injected failure
// (fault_injection.h) first writes half of the bytes, as a write that runs out of space part way
// does.
// Writes `parts` in order; an injected fault (one per call) writes half of the first part.
int WriteAll(int fd, const std::vector<std::string_view>& parts, const std::string& path) {
  if (int injected = fault::Check(fault::Op::kWrite, path); injected != 0) {
    if (!parts.empty()) {
      ssize_t ignored = ::write(fd, parts[0].data(), parts[0].size() / 2);
      (void)ignored;
    }
    fault::ExitIfArmed();
    return injected;
  }
  for (std::string_view data : parts) {
    while (!data.empty()) {
      ssize_t n = ::write(fd, data.data(), data.size());
      if (n < 0) {
        if (errno == EINTR) continue;
        return errno;
      }
      data.remove_prefix(static_cast<size_t>(n));
    }
  }
  return 0;
}

int SyncFd(int fd, const std::string& path) {
  if (int injected = fault::Check(fault::Op::kSync, path); injected != 0) return injected;
  return ::fsync(fd) == 0 ? 0 : errno;
}

std::string DirName(const std::string& path) {
  size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

}  // namespace

std::string ErrnoMessage(const std::string& path, int err) {
  return path + ": " + std::strerror(err);
}

namespace {

// The whole contents of the open file `fd` (closed here), which must be a regular file of at
// most `limit` bytes; errors name `path`.
Result<std::string> ReadOpenFile(int fd, const std::string& path, uint64_t limit) {
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    int err = errno;
    ::close(fd);
    return IoError(ErrnoMessage(path, err));
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    return IoError(path + ": not a regular file (directory, device, socket or FIFO)");
  }
  limit = std::min(limit, kMaxReadFileBytes);
  if (static_cast<uint64_t>(st.st_size) > limit) {
    ::close(fd);
    return IoError(path + ": file is " + std::to_string(st.st_size) + " bytes; at most " +
                   std::to_string(limit) + " can be read");
  }
  // The whole file is held in memory: it must fit the memory budget (base/budget.h).
  if (Status fits = CheckTensorBytes(st.st_size, path + ": reading the file"); !fits.ok()) {
    ::close(fd);
    return fits;
  }
  std::string out;
  out.reserve(static_cast<size_t>(st.st_size));
  char buf[1 << 16];
  for (;;) {
    ssize_t n = ::read(fd, buf, sizeof(buf));
    if (n < 0) {
      if (errno == EINTR) continue;
      int err = errno;
      ::close(fd);
      return IoError(ErrnoMessage(path, err));
    }
    if (n == 0) break;
    // st_size is only a hint (files in /proc report 0, and a file may grow while it is read).
    if (out.size() + static_cast<size_t>(n) > limit) {
      ::close(fd);
      return IoError(path + ": file grew past " + std::to_string(limit) +
                     " bytes while being read");
    }
    out.append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  return out;
}

}  // namespace

Result<std::string> ReadFile(const std::string& path) {
  // O_NONBLOCK so that opening a FIFO does not wait for a writer; it is rejected below anyway,
  // and the flag does not affect reads of a regular file.
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    int err = errno;
    if (err == ENOENT) return NotFound(path + ": no such file");
    return IoError(ErrnoMessage(path, err));
  }
  return ReadOpenFile(fd, path, kMaxReadFileBytes);
}

Result<int> OpenBelow(const std::string& root, std::string_view relative) {
  const std::string path = root.empty()         ? std::string(relative)
                           : root.back() == '/' ? root + std::string(relative)
                                                : root + "/" + std::string(relative);
  if (relative.empty() || relative.front() == '/') {
    return InvalidArgument(path + ": not a relative path below " + root);
  }
  int dir = ::open(root.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir < 0) return IoError(ErrnoMessage(root, errno));
  size_t begin = 0;
  for (;;) {
    const size_t slash = relative.find('/', begin);
    const bool last = slash == std::string_view::npos;
    const std::string part(relative.substr(begin, last ? std::string_view::npos : slash - begin));
    if (part.empty() || part == "." || part == "..") {
      ::close(dir);
      return InvalidArgument(path + ": a path component is empty, '.' or '..'");
    }
    // O_NOFOLLOW refuses a link as the last component (ELOOP); O_DIRECTORY a non-directory
    // before it; O_NONBLOCK keeps a FIFO from blocking the open.
    const int flags = O_RDONLY | O_CLOEXEC | O_NOFOLLOW | (last ? O_NONBLOCK : O_DIRECTORY);
    int next = ::openat(dir, part.c_str(), flags);
    int err = errno;
    if (next < 0) {
      struct stat st;
      const bool link =
          ::fstatat(dir, part.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(st.st_mode);
      ::close(dir);
      const std::string at =
          root + "/" + std::string(relative.substr(0, last ? relative.size() : slash));
      if (link) return InvalidArgument(at + ": a symbolic link, which is not followed");
      if (err == ENOENT) return NotFound(at + ": no such file");
      return IoError(ErrnoMessage(at, err));
    }
    ::close(dir);
    if (last) return next;
    dir = next;
    begin = slash + 1;
  }
}

Result<std::string> ReadFileBelow(const std::string& root, std::string_view relative,
                                  uint64_t limit) {
  DETRAIN_ASSIGN_OR_RETURN(int fd, OpenBelow(root, relative));
  return ReadOpenFile(fd, root + "/" + std::string(relative), limit);
}

Result<uint64_t> FileSizeBelow(const std::string& root, std::string_view relative) {
  DETRAIN_ASSIGN_OR_RETURN(int fd, OpenBelow(root, relative));
  struct stat st;
  const int rc = ::fstat(fd, &st);
  const int err = errno;
  ::close(fd);
  const std::string path = root + "/" + std::string(relative);
  if (rc != 0) return IoError(ErrnoMessage(path, err));
  if (!S_ISREG(st.st_mode)) return InvalidArgument(path + ": not a regular file");
  return static_cast<uint64_t>(st.st_size);
}

Status CheckOutputPath(const std::string& path) {
  struct stat st;
  if (::lstat(path.c_str(), &st) != 0) {
    if (errno == ENOENT) return Status::Ok();
    return IoError(ErrnoMessage(path, errno));
  }
  if (S_ISREG(st.st_mode)) return Status::Ok();
  const char* what = S_ISLNK(st.st_mode)                          ? "a symbolic link"
                     : S_ISDIR(st.st_mode)                        ? "a directory"
                     : S_ISFIFO(st.st_mode)                       ? "a FIFO"
                     : S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode) ? "a device"
                                                                  : "a special file";
  return InvalidArgument(path + ": exists and is " + what +
                         "; an output must be a new path or a regular file");
}

Status WriteFileAtomic(const std::string& path, std::string_view contents, unsigned mode) {
  return WriteFileAtomic(path, std::vector<std::string_view>{contents}, mode);
}

Status WriteFileAtomic(const std::string& path, const std::vector<std::string_view>& contents,
                       unsigned mode) {
  // Every error names `path`, the file the caller asked for, not the temporary: that is the
  // file a user knows, and the temporary is gone when the error is returned.
  DETRAIN_RETURN_IF_ERROR(CheckOutputPath(path));
  std::string tmp = path + ".tmp.XXXXXX";
  int fd = -1;
  if (int injected = fault::Check(fault::Op::kCreate, path); injected != 0) {
    errno = injected;
  } else {
    fd = ::mkstemp(tmp.data());
  }
  if (fd < 0) return IoError(ErrnoMessage(path, errno) + " (creating its temporary file)");
  int err = WriteAll(fd, contents, path);
  const char* doing = err != 0 ? "" : nullptr;
  if (doing == nullptr && ::fchmod(fd, static_cast<mode_t>(mode)) != 0) {
    err = errno;
    doing = " (setting its mode)";
  }
  if (doing == nullptr && (err = SyncFd(fd, path)) != 0) doing = " (syncing it to disk)";
  if (::close(fd) != 0 && doing == nullptr) {
    err = errno;
    doing = " (closing it)";
  }
  if (doing == nullptr) {
    if (int injected = fault::Check(fault::Op::kRename, path); injected != 0) {
      err = injected;
    } else if (::rename(tmp.c_str(), path.c_str()) != 0) {
      err = errno;
    }
    if (err != 0) doing = " (renaming its temporary file into place)";
  }
  if (doing != nullptr) {
    ::unlink(tmp.c_str());
    return IoError(ErrnoMessage(path, err) + doing);
  }
  // The rename reaches the disk only with the directory. Some file systems refuse fsync on a
  // directory (EINVAL); any other error means the new file may not survive a power loss.
  const std::string dir = DirName(path);
  if (int injected = fault::Check(fault::Op::kSyncDir, dir); injected != 0) {
    err = injected;
  } else {
    int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0) {
      err = errno;
    } else {
      err = ::fsync(dfd) == 0 ? 0 : errno;
      ::close(dfd);
    }
  }
  if (err != 0 && err != EINVAL) {
    return IoError(ErrnoMessage(dir, err) + " (syncing the directory after writing " +
                   path.substr(path.rfind('/') + 1) + ")");
  }
  return Status::Ok();
}

}  // namespace detrain
