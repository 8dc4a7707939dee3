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

namespace detrain {
namespace {

Status WriteAll(int fd, std::string_view data, const std::string& path) {
  while (!data.empty()) {
    ssize_t n = ::write(fd, data.data(), data.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      return IoError(ErrnoMessage(path, errno));
    }
    data.remove_prefix(static_cast<size_t>(n));
  }
  return Status::Ok();
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

Status WriteFileAtomic(const std::string& path, std::string_view contents) {
  std::string tmpl = path + ".tmp.XXXXXX";
  int fd = ::mkstemp(tmpl.data());
  if (fd < 0) return IoError(ErrnoMessage(path, errno) + " (creating a temporary file)");
  Status st = WriteAll(fd, contents, tmpl);
  if (st.ok() && ::fchmod(fd, 0644) != 0) st = IoError(ErrnoMessage(tmpl, errno));
  if (st.ok() && ::fsync(fd) != 0) st = IoError(ErrnoMessage(tmpl, errno));
  if (::close(fd) != 0 && st.ok()) st = IoError(ErrnoMessage(tmpl, errno));
  if (st.ok() && ::rename(tmpl.c_str(), path.c_str()) != 0) st = IoError(ErrnoMessage(path, errno));
  if (!st.ok()) {
    ::unlink(tmpl.c_str());
    return st;
  }
  int dfd = ::open(DirName(path).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    ::fsync(dfd);  // best effort: some file systems refuse fsync on directories
    ::close(dfd);
  }
  return Status::Ok();
}

}  // namespace detrain
