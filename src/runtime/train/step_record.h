// What one train step consumed and produced, as the hash chain records it (DESIGN.md §4;
// schemas/bundle.md "Steps"): the step's batch, key, learning rate and loss, the digests of the
// state after it, the SHA-256 roots where a checkpoint or the end follows, the evaluation where
// one is due, and h_t, chained to h_{t-1}. A run writes these records (evidence/bundle) and a
// verifier replays them; both compute every field here, through RunSession (session.h), so the
// two cannot disagree. Their JSON form is the bundle's (evidence/bundle/bundle_format.h).
//
// Thread safety: plain data and pure functions.
#ifndef DETRAIN_RUNTIME_TRAIN_STEP_RECORD_H_
#define DETRAIN_RUNTIME_TRAIN_STEP_RECORD_H_

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "attest/sha256.h"
#include "attest/state_digest.h"

namespace detrain::runtime {

// When records take the SHA-256 roots and evaluate, and which digest every step takes. Step t
// (0-based: t steps are done before it) takes the roots when a checkpoint follows it
// ((t + 1) mod checkpoint_every == 0, before the end) or it is the last step, and evaluates when
// (t + 1) mod eval_every == 0 or it is the last step.
struct StepSchedule {
  int64_t steps = 0;             // N
  int64_t checkpoint_every = 0;  // 0: only the end
  int64_t eval_every = 0;        // 0: only the end
  attest::DigestPolicy policy = attest::DigestPolicy::kXxh3;

  bool TakesRoots(int64_t t) const;   // a checkpoint (or the end) follows step t
  bool Checkpoints(int64_t t) const;  // a checkpoint file follows step t
  bool Evaluates(int64_t t) const;
};

// One line of steps.jsonl: what step t consumed and produced, and the chain hash h_t.
struct StepRecord {
  int64_t step = 0;
  int64_t epoch = 0;
  attest::Digest256 batch{};
  uint32_t key_hi = 0, key_lo = 0;
  uint32_t learning_rate_bits = 0;
  uint32_t loss_bits = 0;
  std::string state;                                             // raw digest bytes (16 or 32)
  std::vector<std::pair<std::string, std::string>> tensors;      // (name, raw digest), name order
  std::optional<attest::Digest256> params_root, optimizer_root;  // at checkpoints and the end
  std::optional<uint32_t> eval_loss_bits, eval_accuracy_bits;    // when evaluated
  attest::Digest256 hash{};
};

// h_t of a record from its fields and h_{t-1}.
attest::Digest256 ChainHash(const StepRecord& record, const attest::Digest256& previous);

// A step as run: its record, or — when the loss or a result was NaN or infinite — what was not
// finite (e.g. "loss is NaN; first non-finite result: w1 element 3"; the state is unchanged).
struct StepOutcome {
  StepRecord record;
  bool finite = true;
  std::string nonfinite;
};

float FloatOfBits(uint32_t bits);
uint32_t BitsOfFloat(float value);

}  // namespace detrain::runtime

#endif  // DETRAIN_RUNTIME_TRAIN_STEP_RECORD_H_
