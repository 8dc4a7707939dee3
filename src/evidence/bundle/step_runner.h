// One step of an attested run, as a record: the code the bundle writer runs to produce
// steps.jsonl and the verifier runs to replay it, so the two compute every field the same way.
//
// Step t (0-based; t steps are done before it) runs the train step, digests the new state under
// the policy, takes the SHA-256 roots of the parameters and of the optimizer state when a
// checkpoint follows it ((t + 1) mod checkpoint_every == 0) or it is the last step, evaluates
// the validation split when (t + 1) mod eval_every == 0 or it is the last step (and the program
// has one), and chains the record to h_{t-1}.
//
// Thread safety: as the trainer (one step at a time per trainer).
#ifndef DETRAIN_EVIDENCE_BUNDLE_STEP_RUNNER_H_
#define DETRAIN_EVIDENCE_BUNDLE_STEP_RUNNER_H_

#include <cstdint>
#include <string>

#include "base/thread_pool.h"
#include "evidence/bundle/bundle_format.h"
#include "runtime/train/trainer.h"

namespace detrain::bundle {

struct StepSchedule {
  int64_t steps = 0;             // N
  int64_t checkpoint_every = 0;  // 0: only the end
  int64_t eval_every = 0;        // 0: only the end
  attest::DigestPolicy policy = attest::DigestPolicy::kXxh3;

  bool TakesRoots(int64_t t) const;   // a checkpoint (or the end) follows step t
  bool Checkpoints(int64_t t) const;  // a checkpoint file follows step t
  bool Evaluates(int64_t t) const;
};

struct StepOutcome {
  StepRecord record;
  bool finite = true;     // false: the loss (or a result) was NaN or Inf; state unchanged
  std::string nonfinite;  // what was not finite, e.g. "loss is NaN; first non-finite result: w1"
};

// Runs step t on `state` with `key`, chained to `previous`.
Result<StepOutcome> RunStep(runtime::Trainer& trainer, const StepSchedule& schedule, int64_t t,
                            const prng::Key& key, const attest::Digest256& previous,
                            runtime::TrainState* state, ThreadPool* pool);

// The SHA-256 roots of a state: parameters, then optimizer state (slots and counter).
Result<std::pair<attest::Digest256, attest::Digest256>> StateRoots(const runtime::TrainState& s,
                                                                   ThreadPool* pool);

// The genesis hash: the stage chain (canonical JSON) and the initial state's roots.
Result<attest::Digest256> Genesis(std::string_view stage_chain, const runtime::TrainState& init,
                                  ThreadPool* pool);

}  // namespace detrain::bundle

#endif  // DETRAIN_EVIDENCE_BUNDLE_STEP_RUNNER_H_
