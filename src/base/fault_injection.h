// Test-only fault injection for the write primitives (base/file_io.h, base/fs.h): "fail the Nth
// write operation with ENOSPC", so that a test can fail every write of `detrain run --attest` in
// turn and check what each failure leaves on disk (tests/evidence/write_faults_test.cc).
//
// Each primitive calls Check(op, path) just before the system call it stands for: creating a
// file (mkstemp, open O_CREAT), writing its bytes (one count per WriteFileAtomic or
// AppendFile::Append, however many write(2) calls that takes), truncating, fsync / fdatasync,
// rename, mkdir (only of a directory that does not exist yet), unlink, and fsync of a directory.
// While disarmed (always, outside the tests that arm it) Check is one relaxed atomic load and
// returns 0. Armed, it counts the operations and makes operation k (1-based) fail:
//   - Mode::kOnce: operation k fails with `error`; the others run (a transient error);
//   - Mode::kSticky: operation k and every later one fail (a full disk that stays full);
//   - Mode::kExit: the process ends at operation k with _exit(kExitStatus), before the system
//     call (a write: after half its bytes), leaving what a kill -9 there would leave; for a
//     test's forked child;
//   - fail_at 0: nothing fails; the test reads the count (and the log) afterwards.
// A failed write writes the first half of its bytes before it fails (then calls ExitIfArmed),
// as a write(2) that runs out of space part way does, so torn files are exercised too.
//
// Nothing outside the tests arms it: no option, flag or environment variable reaches it, and
// nothing it does is hashed or recorded in a bundle.
//
// Thread safety: Arm / Disarm / Count / Log may be called from any thread; operations are
// counted in the order their threads reach Check (the bundle writer writes from one thread).
#ifndef DETRAIN_BASE_FAULT_INJECTION_H_
#define DETRAIN_BASE_FAULT_INJECTION_H_

#include <atomic>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace detrain::fault {

enum class Op { kCreate, kWrite, kTruncate, kSync, kRename, kMakeDir, kRemove, kSyncDir };

std::string_view OpName(Op op);

enum class Mode { kOnce, kSticky, kExit };
inline constexpr int kExitStatus = 86;

// Starts counting from zero. fail_at: the 1-based operation to fail (0: none); error: its errno.
void Arm(int64_t fail_at, int error, Mode mode = Mode::kOnce);
void Disarm();
int64_t Count();                 // operations seen since Arm
std::vector<std::string> Log();  // "OP PATH" for each of them, in order
// For a write that failed part way: ends the process when armed with Mode::kExit.
void ExitIfArmed();

namespace internal {
inline std::atomic<bool> armed{false};
int CheckArmed(Op op, const std::string& path);
}  // namespace internal

// 0, or the errno with which the primitive must fail this operation (without performing it).
inline int Check(Op op, const std::string& path) {
  if (!internal::armed.load(std::memory_order_relaxed)) return 0;
  return internal::CheckArmed(op, path);
}

}  // namespace detrain::fault

#endif  // DETRAIN_BASE_FAULT_INJECTION_H_
