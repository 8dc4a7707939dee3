// File helpers: whole-file reads and atomic writes.
//
// WriteFileAtomic writes to a temporary file in the same directory, fsyncs it, renames it over
// the destination and fsyncs the directory, so a reader sees either the old file or the complete
// new one, never a half-written one — also after a crash. Errors name the path and the reason.
//
// Thread safety: independent calls on different paths are safe.
#ifndef DETRAIN_BASE_FILE_IO_H_
#define DETRAIN_BASE_FILE_IO_H_

#include <string>
#include <string_view>

#include "base/status.h"

namespace detrain {

Result<std::string> ReadFile(const std::string& path);

Status WriteFileAtomic(const std::string& path, std::string_view contents);

// "<path>: <strerror(err)>", for messages about failed system calls.
std::string ErrnoMessage(const std::string& path, int err);

}  // namespace detrain

#endif  // DETRAIN_BASE_FILE_IO_H_
