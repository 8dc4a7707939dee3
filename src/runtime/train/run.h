// `detrain run`, the part every run shares (DESIGN.md §7): compile the program, open its session
// (session.h) on the executor, on one process or on every rank of a cluster, and train —
// without a bundle here (Train); with one in evidence/bundle/attested_run.h, which runs its own
// loop through RunOnRanks.
//
// Processes: with `executor.cluster` of P > 1 ranks, every rank compiles the program and they
// check they have the same stages and data (else every rank stops with an error naming the rank
// that differs). Rank 0 then runs the loop, and the followers serve the train step's mesh
// (runtime/cluster.h) until rank 0 says how it ended.
//
// Thread safety: one run per output directory; `interrupt` may be set from a signal handler.
#ifndef DETRAIN_RUNTIME_TRAIN_RUN_H_
#define DETRAIN_RUNTIME_TRAIN_RUN_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"
#include "runtime/executor.h"
#include "runtime/train/session.h"

namespace detrain::runtime {

struct RunProgress {
  enum Kind { kStarted, kStep, kCheckpoint, kDone } kind = kStep;
  int64_t steps_done = 0;  // after this event
  int64_t steps = 0;       // N
  int64_t first_step = 0;  // where this process started (after a resume)
  float loss = 0;
  std::optional<EvalResult> eval;
};

struct RunOptions {
  std::string program;     // a .dt file or a run spec
  std::string output_dir;  // the bundle (attested), or where final weights go; empty: none
  ExecutorOptions executor;
  std::optional<int64_t> steps;  // instead of the program's
  // Stage 4's plan format (driver::CompileOptions::plan_format_version); it is hashed.
  uint32_t plan_format_version = plan::kPlanFormatVersion;
  // The pass pipeline of stage 3 (driver::CompileOptions::pipeline; empty: the default). A
  // bundle records it and is verified and resumed with it.
  std::string pipeline;
  std::string detrain_version;  // for the record of each rank
  std::function<void(const RunProgress&)> progress;
  const std::atomic<bool>* interrupt = nullptr;  // set: stop after the current step
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
  std::optional<EvalResult> last_eval;
  float last_loss = 0;
  // A follower rank of a multi-process run (executor.cluster): the exit code rank 0 ended with.
  std::optional<int> follower_exit_code;
};

// Trains without a bundle: the same steps, no digests. Writes the final parameters to
// OUTPUT/final/weights.safetensors when output_dir is given and the run was not interrupted.
Result<RunSummary> Train(const RunOptions& options);

// The loop of a run on rank 0 (or the only process): the opened session and, on P > 1 ranks,
// each rank's record (CheckRankRecords).
using RunLoop =
    std::function<Result<RunSummary>(RunSession& session, const nlohmann::json& processes)>;

// Compiles `options.program` for the executor's backend, checks `options.steps`, opens the
// session and runs `loop` — on every rank of a cluster as the header says. `precheck` (may be
// null) runs first where a run must refuse before anything is compiled: before compiling on one
// process, on rank 0 after the ranks agree on P > 1.
Result<RunSummary> RunOnRanks(const RunOptions& options, attest::DigestPolicy step_digest,
                              const std::function<Status()>& precheck, const RunLoop& loop);

// Rank 0's decision before the first step of a multi-process run: `records[r]` is rank r's
// account of itself (JSON text as a rank sent it, however malformed; records[0] is rank 0's).
// Returns each rank's entry for environment.json "processes", or why the run cannot start,
// naming (by `describe`) the first rank that failed to compile or differs from rank 0 in its
// detrain version, stages, data files' digests or --devices. Never throws.
Result<nlohmann::json> CheckRankRecords(const std::vector<std::string>& records,
                                        const std::function<std::string(int)>& describe);

// How a follower's error begins when rank 0 stopped the run before its first step (rank 0
// reports why); its code is StatusCode::kCancelled.
inline constexpr char kStoppedByRankZero[] = "stopped by rank 0: ";

}  // namespace detrain::runtime

#endif  // DETRAIN_RUNTIME_TRAIN_RUN_H_
