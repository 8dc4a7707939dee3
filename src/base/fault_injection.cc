// See fault_injection.h.
#include "base/fault_injection.h"

#include <unistd.h>

#include <mutex>

namespace detrain::fault {
namespace {

struct State {
  std::mutex mu;
  int64_t fail_at = 0;
  int error = 0;
  Mode mode = Mode::kOnce;
  int64_t count = 0;
  std::vector<std::string> log;
};

State& Global() {
  static State* s = new State;  // never destroyed: Check may run during static destruction
  return *s;
}

}  // namespace

std::string_view OpName(Op op) {
  switch (op) {
    case Op::kCreate:
      return "create";
    case Op::kWrite:
      return "write";
    case Op::kTruncate:
      return "truncate";
    case Op::kSync:
      return "fsync";
    case Op::kRename:
      return "rename";
    case Op::kMakeDir:
      return "mkdir";
    case Op::kRemove:
      return "unlink";
    case Op::kSyncDir:
      return "fsync-dir";
  }
  return "?";
}

void Arm(int64_t fail_at, int error, Mode mode) {
  State& s = Global();
  std::lock_guard<std::mutex> lock(s.mu);
  s.fail_at = fail_at;
  s.error = error;
  s.mode = mode;
  s.count = 0;
  s.log.clear();
  internal::armed.store(true);
}

void Disarm() { internal::armed.store(false); }

void ExitIfArmed() {
  if (!internal::armed.load()) return;
  State& s = Global();
  std::lock_guard<std::mutex> lock(s.mu);
  if (s.mode == Mode::kExit) ::_exit(kExitStatus);
}

int64_t Count() {
  State& s = Global();
  std::lock_guard<std::mutex> lock(s.mu);
  return s.count;
}

std::vector<std::string> Log() {
  State& s = Global();
  std::lock_guard<std::mutex> lock(s.mu);
  return s.log;
}

namespace internal {

int CheckArmed(Op op, const std::string& path) {
  State& s = Global();
  std::lock_guard<std::mutex> lock(s.mu);
  ++s.count;
  s.log.push_back(std::string(OpName(op)) + " " + path);
  if (s.fail_at <= 0) return 0;
  if (s.count == s.fail_at || (s.mode == Mode::kSticky && s.count > s.fail_at)) {
    if (s.mode == Mode::kExit && op != Op::kWrite) ::_exit(kExitStatus);
    return s.error;  // a write in Mode::kExit writes half, then calls ExitIfArmed
  }
  return 0;
}

}  // namespace internal
}  // namespace detrain::fault
