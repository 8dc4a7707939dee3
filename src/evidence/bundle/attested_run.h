// `detrain run`: compile a program, train it, and — with `attest` — write an audit bundle
// (DESIGN.md §5, schemas/bundle.md).
//
// Crash safety: every file is written atomically (base/file_io.h). steps.jsonl is appended one
// record per step and synced with each checkpoint; manifest.json is written last, so a bundle
// without it is incomplete, and progress.json says how far the run got. `resume` continues an
// incomplete bundle on the backend it was started with (run.json names it; another is refused
// before anything is compiled): it recompiles the program (every stage must match what the
// bundle holds),
// keeps the step records up to the newest checkpoint that matches them (or none: step 0), and
// runs on from there — to the same records, and so the same final step hash, as a run that was
// never interrupted, because every step is a pure function of the state, the data and t.
//
// A NaN or infinite loss stops the run: the bundle is finished with status "stopped", naming the
// step and the tensor, and holds the records and final weights of the last good step.
//
// Processes: with `executor.cluster` of P > 1 ranks, every rank calls RunProgram; each compiles
// the program and they check they have the same stages and data (else every rank stops with an
// error naming the rank that differs). Rank 0 then runs as above — it alone writes the bundle —
// and the followers serve the train step's mesh (runtime/cluster.h) until rank 0 is done.
//
// Thread safety: one run per bundle directory; `interrupt` may be set from a signal handler.
#ifndef DETRAIN_EVIDENCE_BUNDLE_ATTESTED_RUN_H_
#define DETRAIN_EVIDENCE_BUNDLE_ATTESTED_RUN_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "attest/state_digest.h"
#include "base/status.h"
#include "runtime/executor.h"
#include "runtime/train/trainer.h"

namespace detrain::bundle {

struct RunProgress {
  enum Kind { kStarted, kStep, kCheckpoint, kDone } kind = kStep;
  int64_t steps_done = 0;  // after this event
  int64_t steps = 0;       // N
  int64_t first_step = 0;  // where this process started (after a resume)
  float loss = 0;
  std::optional<runtime::EvalResult> eval;
};

struct RunOptions {
  std::string program;     // a .dt file
  std::string output_dir;  // the bundle (attest), or where final weights go; empty: none
  bool attest = false;
  bool resume = false;
  bool embed_data = false;
  runtime::ExecutorOptions executor;
  std::optional<int64_t> steps;  // instead of the program's; recorded in the manifest
  attest::DigestPolicy step_digest = attest::DigestPolicy::kXxh3;
  std::string detrain_version;  // for environment.json
  std::function<void(const RunProgress&)> progress;
  const std::atomic<bool>* interrupt = nullptr;  // set: stop after the current step
  // Tests only: stop (as if killed) once this many steps are done, without finishing.
  std::optional<int64_t> crash_after_steps;
  // Set by RunProgram on rank 0 of a multi-process run: each rank's record (environment.json).
  nlohmann::json processes;
};

struct RunSummary {
  int64_t steps = 0;       // N
  int64_t steps_done = 0;  // steps with records
  bool complete = false;   // the bundle has its manifest (or, without attest, training finished)
  bool stopped = false;    // a non-finite loss stopped the run
  bool interrupted = false;
  std::string stop_reason;      // e.g. "step 17: loss is NaN"
  std::string final_step_hash;  // hex (attest)
  std::string root_digest;      // hex (attest, complete)
  std::optional<runtime::EvalResult> last_eval;
  float last_loss = 0;
  // A follower rank of a multi-process run (executor.cluster): the exit code rank 0 ended with.
  std::optional<int> follower_exit_code;
};

Result<RunSummary> RunProgram(const RunOptions& options);

// Rank 0's decision before the first step of a multi-process run: `records[r]` is rank r's
// account of itself (JSON text as a rank sent it, however malformed; records[0] is rank 0's).
// Returns each rank's entry for environment.json "processes", or why the run cannot start,
// naming (by `describe`) the first rank that failed to compile or differs from rank 0 in its
// detrain version, stages, data files' digests or --devices. Never throws.
Result<nlohmann::json> CheckRankRecords(const std::vector<std::string>& records,
                                        const std::function<std::string(int)>& describe);

// How a follower's error begins when rank 0 stopped the run before its first step (rank 0
// reports why).
inline constexpr char kStoppedByRankZero[] = "stopped by rank 0: ";

}  // namespace detrain::bundle

#endif  // DETRAIN_EVIDENCE_BUNDLE_ATTESTED_RUN_H_
