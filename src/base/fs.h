// Directory helpers for bundles: create, list, remove, and an append-only log file.
//
// ListFiles walks a directory tree and returns every regular file's path relative to it, sorted
// bytewise (a deterministic order); anything that is neither a regular file nor a directory — a
// symlink, a FIFO, a device — is an error naming it, so a reader never follows a link out of a
// bundle or blocks on a pipe. Depth is bounded.
//
// Thread safety: independent calls on different paths are safe.
#ifndef DETRAIN_BASE_FS_H_
#define DETRAIN_BASE_FS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"

namespace detrain {

// a + "/" + b (b relative).
std::string JoinPath(const std::string& a, const std::string& b);
// The last component of a path, and everything before it ("." when there is no slash).
std::string BaseName(const std::string& path);
std::string DirName(const std::string& path);

// mkdir -p.
Status MakeDirs(const std::string& path);

bool PathExists(const std::string& path);
bool IsDirectory(const std::string& path);

// Regular files under `dir`, relative, sorted. Errors on other file types and depth > 16.
Result<std::vector<std::string>> ListFiles(const std::string& dir);

// Size of a regular file (an error for anything else).
Result<uint64_t> RegularFileSize(const std::string& path);

Status RemoveFile(const std::string& path);  // absent is fine

// The directory's entries reach the disk (after creating or renaming files in it).
Status SyncDirectory(const std::string& dir);

// A file written by appending: open truncates it to `keep_bytes` (0: empty), Append writes
// whole strings, Sync makes them durable (fdatasync). An Append that fails (a full disk) cuts
// what it wrote off again, so that after an error the file ends at the last whole append.
class AppendFile {
 public:
  AppendFile() = default;
  ~AppendFile();
  AppendFile(const AppendFile&) = delete;
  AppendFile& operator=(const AppendFile&) = delete;

  Status Open(const std::string& path, uint64_t keep_bytes);
  Status Append(const std::string& data);
  Status Sync();
  Status Close();

 private:
  int fd_ = -1;
  std::string path_;
  uint64_t size_ = 0;  // the bytes of the file: kept, then appended
};

}  // namespace detrain

#endif  // DETRAIN_BASE_FS_H_
