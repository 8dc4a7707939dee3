// The exit codes of `detrain` (README "Exit codes"; DESIGN.md §6), declared once: the CLI returns
// them, the verifier maps its outcome to one, and rank 0 of a multi-process run sends its code to
// the followers so that every process ends with it.
//
// Thread safety: constants and pure functions.
#ifndef DETRAIN_BASE_EXIT_CODE_H_
#define DETRAIN_BASE_EXIT_CODE_H_

#include "base/status.h"

namespace detrain {

enum class ExitCode : int {
  kOk = 0,            // success; verify: verified; diff: the runs are the same
  kFailed = 1,        // verification failed; diff: the runs differ; run: a non-finite loss
  kUsage = 2,         // a usage or input error
  kInternal = 3,      // an internal error
  kInterrupted = 130  // run: stopped by SIGINT or SIGTERM (128 + SIGINT, as shells report it)
};

constexpr int ToInt(ExitCode code) { return static_cast<int>(code); }

// The exit code of an error: verification failures 1, internal errors 3, anything else 2.
inline ExitCode ExitCodeOf(const Status& status) {
  switch (status.code()) {
    case StatusCode::kOk:
      return ExitCode::kOk;
    case StatusCode::kVerificationFailed:
      return ExitCode::kFailed;
    case StatusCode::kInternal:
      return ExitCode::kInternal;
    default:
      return ExitCode::kUsage;
  }
}

}  // namespace detrain

#endif  // DETRAIN_BASE_EXIT_CODE_H_
