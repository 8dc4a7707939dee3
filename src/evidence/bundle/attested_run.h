// `detrain run --attest`: compile a program, train it, and write an audit bundle (DESIGN.md §5,
// schemas/bundle.md). The run itself — the session, the ranks — is runtime/train/run.h's.
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
// Processes: with `executor.cluster` of P > 1 ranks, every rank calls RunAttested; rank 0 alone
// writes the bundle, and environment.json records each rank (runtime::RunOnRanks).
//
// Thread safety: one run per bundle directory; `interrupt` may be set from a signal handler.
#ifndef DETRAIN_EVIDENCE_BUNDLE_ATTESTED_RUN_H_
#define DETRAIN_EVIDENCE_BUNDLE_ATTESTED_RUN_H_

#include <cstdint>
#include <optional>

#include "attest/state_digest.h"
#include "base/status.h"
#include "runtime/train/run.h"

namespace detrain::bundle {

using runtime::RunProgress;
using runtime::RunSummary;

// The options of a run (runtime/train/run.h) and of its bundle.
struct RunOptions : runtime::RunOptions {
  bool resume = false;
  bool embed_data = false;
  attest::DigestPolicy step_digest = attest::DigestPolicy::kXxh3;
  // Tests only: stop (as if killed) once this many steps are done, without finishing.
  std::optional<int64_t> crash_after_steps;
};

// `detrain run --attest`: trains `options.program` into the bundle `options.output_dir`.
Result<RunSummary> RunAttested(const RunOptions& options);

}  // namespace detrain::bundle

#endif  // DETRAIN_EVIDENCE_BUNDLE_ATTESTED_RUN_H_
