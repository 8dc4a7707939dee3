// File helpers: whole-file reads and atomic writes.
//
// WriteFileAtomic writes to a temporary file in the same directory, fsyncs it, renames it over
// the destination and fsyncs the directory, so a reader sees either the old file or the complete
// new one, never a half-written one — also after a crash. Errors name `path` (not the temporary,
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

#include "base/status.h"

namespace detrain {

// Largest file ReadFile reads (64 GiB): beyond any artifact detrain writes, so a larger file is
// a wrong path rather than something to try to hold in memory.
inline constexpr uint64_t kMaxReadFileBytes = uint64_t{64} << 30;

// The whole contents of a regular file. Directories, devices (/dev/zero), sockets and FIFOs are
// errors: they could block or never end.
Result<std::string> ReadFile(const std::string& path);

// `mode` is the file's permission bits (0600 for a private key).
Status WriteFileAtomic(const std::string& path, std::string_view contents, unsigned mode = 0644);

// "<path>: <strerror(err)>", for messages about failed system calls.
std::string ErrnoMessage(const std::string& path, int err);

}  // namespace detrain

#endif  // DETRAIN_BASE_FILE_IO_H_
