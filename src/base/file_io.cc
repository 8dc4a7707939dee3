// See file_io.h.
#include "base/file_io.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

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
int WriteAll(int fd, std::string_view data, const std::string& path) {
  if (int injected = fault::Check(fault::Op::kWrite, path); injected != 0) {
    ssize_t ignored = ::write(fd, data.data(), data.size() / 2);
    (void)ignored;
    fault::ExitIfArmed();
    return injected;
  }
  while (!data.empty()) {
    ssize_t n = ::write(fd, data.data(), data.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      return errno;
    }
    data.remove_prefix(static_cast<size_t>(n));
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

Result<std::string> ReadFile(const std::string& path) {
  // O_NONBLOCK so that opening a FIFO does not wait for a writer; it is rejected below anyway,
  // and the flag does not affect reads of a regular file.
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    int err = errno;
    if (err == ENOENT) return NotFound(path + ": no such file");
    return IoError(ErrnoMessage(path, err));
  }
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
  if (static_cast<uint64_t>(st.st_size) > kMaxReadFileBytes) {
    ::close(fd);
    return IoError(path + ": file is " + std::to_string(st.st_size) + " bytes; at most " +
                   std::to_string(kMaxReadFileBytes) + " can be read");
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
    if (out.size() + static_cast<size_t>(n) > kMaxReadFileBytes) {
      ::close(fd);
      return IoError(path + ": file grew past " + std::to_string(kMaxReadFileBytes) +
                     " bytes while being read");
    }
    out.append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  return out;
}

Status WriteFileAtomic(const std::string& path, std::string_view contents, unsigned mode) {
  // Every error names `path`, the file the caller asked for, not the temporary: that is the
  // file a user knows, and the temporary is gone when the error is returned.
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
