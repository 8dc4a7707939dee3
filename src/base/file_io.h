// File helpers: whole-file reads and atomic writes.
//
// WriteFileAtomic writes (only to a new path or over a regular file: CheckOutputPath) to a
// temporary file in the same directory, fsyncs it, renames it over the destination and fsyncs
// the directory, so a reader sees either the old file or the complete new one, never a
// half-written one — also after a crash. Errors name `path` (not the temporary,
// which is removed) and the OS error, e.g. "B/steps.jsonl: No space left on device"; an error of
// the directory fsync after the rename is returned too (the new file is in place but may not
// survive a power loss), but for EINVAL (a file system without directory fsync).
// Every system call that writes passes a test-only fault-injection point first
// (base/fault_injection.h).
//
// Thread safety: independent calls on different paths are safe.
#ifndef DETRAIN_BASE_FILE_IO_H_
#define DETRAIN_BASE_FILE_IO_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace detrain {

// Largest file ReadFile reads (64 GiB): beyond any artifact detrain writes, so a larger file is
// a wrong path rather than something to try to hold in memory.
inline constexpr uint64_t kMaxReadFileBytes = uint64_t{64} << 30;

// The whole contents of a regular file. Directories, devices (/dev/zero), sockets and FIFOs are
// errors: they could block or never end.
Result<std::string> ReadFile(const std::string& path);

// Reading below a root, as an untrusted tree (an audit bundle) is read: `relative` ("a/b.json")
// is opened one component at a time without following a symbolic link at any of them (the root
// itself may be one: the user named it), so a link inside the tree is refused by name — also one
// put there after the tree was listed — and never read through; '.', '..' and empty components
// are refused; the file must be regular and at most `limit` bytes. The file descriptor of
// OpenBelow is the caller's to close.
Result<int> OpenBelow(const std::string& root, std::string_view relative);
Result<std::string> ReadFileBelow(const std::string& root, std::string_view relative,
                                  uint64_t limit = kMaxReadFileBytes);
Result<uint64_t> FileSizeBelow(const std::string& root, std::string_view relative);

// Whether a file may be written at `path`: a new path, or an existing regular file (which is
// replaced). Anything else — a symbolic link, a directory, a FIFO, a device such as /dev/null, a
// socket — is refused by name, never replaced or written through. WriteFileAtomic applies it;
// so does every command that writes a named output (pack's archive).
Status CheckOutputPath(const std::string& path);

// `mode` is the file's permission bits (0600 for a private key).
Status WriteFileAtomic(const std::string& path, std::string_view contents, unsigned mode = 0644);
// The same for a file whose contents are `parts`, one after another, each written from where it
// is (a checkpoint streams its tensors from the training state, never gathered in one string).
Status WriteFileAtomic(const std::string& path, const std::vector<std::string_view>& parts,
                       unsigned mode = 0644);

// "<path>: <strerror(err)>", for messages about failed system calls.
std::string ErrnoMessage(const std::string& path, int err);

}  // namespace detrain

#endif  // DETRAIN_BASE_FILE_IO_H_
