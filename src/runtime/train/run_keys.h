// The keys of a training run, derived through a recorded key lineage (DESIGN.md §3,
// docs/language.md "Keys"). Every key the runtime uses comes from here, so the lineage in the
// bundle is the record of the keys that were used, not a separate reconstruction:
//
//   root            key(seed)
//   init parameter i  fold_in(fold_in(root, 0), i)     purpose "init NAME"
//   split           fold_in(root, 1)                   "split"
//   step t          fold_in(fold_in(root, 2), t)       "step t"
//   shard s of t    fold_in(step t, s)                 "step t shard s"  (derived in the step)
//   shuffle epoch e fold_in(fold_in(root, 3), e)       "shuffle epoch e"
//
// Node ids are sequential in derivation order, and a run derives in a fixed order (the init
// keys, the split key, then per step: the epoch's shuffle key when the epoch starts, the step key
// and its shard keys), so the lineage is a function of the configuration and the number of
// steps — the same after --resume as in an uninterrupted run, and what the verifier recomputes.
//
// Thread safety: not synchronized; one run drives it from one thread.
#ifndef DETRAIN_RUNTIME_TRAIN_RUN_KEYS_H_
#define DETRAIN_RUNTIME_TRAIN_RUN_KEYS_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "attest/prng/lineage.h"
#include "base/status.h"
#include "frontend/run_config.h"

namespace detrain::runtime {

class RunKeys {
 public:
  // `shards`: S, the number of shard keys each step key derives.
  RunKeys(int64_t seed, frontend::PrngMode mode, int64_t shards);

  Result<prng::Key> InitKey(uint32_t index, const std::string& name);
  Result<prng::Key> SplitKey();
  // Records the keys of step t in run order — the shuffle key of its epoch when t starts one
  // (t mod steps_per_epoch == 0), then the step key and its S shard keys — and returns the step
  // key.
  Result<prng::Key> BeginStep(int64_t step, int64_t steps_per_epoch);

  const prng::KeyLineage& lineage() const { return lineage_; }

 private:
  Result<uint64_t> Branch(uint32_t index);  // fold_in(root, index), derived once

  int64_t shards_;
  prng::KeyLineage lineage_;
  uint64_t root_ = 0;
  std::optional<uint64_t> branches_[4];
};

prng::Mode PrngModeOf(frontend::PrngMode mode);

// The same derivations, pure (no lineage): what RunKeys records.
prng::Key StepKeyOf(int64_t seed, int64_t step);
prng::Key ShuffleKeyOf(int64_t seed, int64_t epoch);

}  // namespace detrain::runtime

#endif  // DETRAIN_RUNTIME_TRAIN_RUN_KEYS_H_
