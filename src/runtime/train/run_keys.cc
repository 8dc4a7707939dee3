// See run_keys.h.
#include "runtime/train/run_keys.h"

namespace detrain::runtime {

prng::Key StepKeyOf(int64_t seed, int64_t step) {
  return prng::FoldIn(prng::FoldIn(prng::KeyFromSeed(seed), 2), static_cast<uint32_t>(step));
}

prng::Key ShuffleKeyOf(int64_t seed, int64_t epoch) {
  return prng::FoldIn(prng::FoldIn(prng::KeyFromSeed(seed), 3), static_cast<uint32_t>(epoch));
}

prng::Mode PrngModeOf(frontend::PrngMode mode) {
  return mode == frontend::PrngMode::kOriginal ? prng::Mode::kOriginal : prng::Mode::kPartitionable;
}

RunKeys::RunKeys(int64_t seed, frontend::PrngMode mode, int64_t shards)
    : shards_(shards), lineage_(PrngModeOf(mode)) {
  root_ = lineage_.Seed(seed);
}

Result<uint64_t> RunKeys::Branch(uint32_t index) {
  if (!branches_[index].has_value()) {
    DETRAIN_ASSIGN_OR_RETURN(uint64_t id, lineage_.FoldIn(root_, index));
    branches_[index] = id;
  }
  return *branches_[index];
}

Result<prng::Key> RunKeys::InitKey(uint32_t index, const std::string& name) {
  DETRAIN_ASSIGN_OR_RETURN(uint64_t branch, Branch(0));
  DETRAIN_ASSIGN_OR_RETURN(uint64_t id, lineage_.FoldIn(branch, index));
  DETRAIN_RETURN_IF_ERROR(lineage_.Use(id, "init " + name));
  return lineage_.KeyOf(id);
}

Result<prng::Key> RunKeys::SplitKey() {
  DETRAIN_ASSIGN_OR_RETURN(uint64_t id, Branch(1));
  DETRAIN_RETURN_IF_ERROR(lineage_.Use(id, "split"));
  return lineage_.KeyOf(id);
}

Result<prng::Key> RunKeys::BeginStep(int64_t step, int64_t steps_per_epoch) {
  if (step < 0 || step > UINT32_MAX || steps_per_epoch < 1) {
    return InvalidArgument("step " + std::to_string(step) + " is outside the key space");
  }
  if (step % steps_per_epoch == 0) {
    DETRAIN_ASSIGN_OR_RETURN(uint64_t shuffle, Branch(3));
    const int64_t epoch = step / steps_per_epoch;
    DETRAIN_ASSIGN_OR_RETURN(uint64_t id, lineage_.FoldIn(shuffle, static_cast<uint32_t>(epoch)));
    DETRAIN_RETURN_IF_ERROR(lineage_.Use(id, "shuffle epoch " + std::to_string(epoch)));
  }
  DETRAIN_ASSIGN_OR_RETURN(uint64_t branch, Branch(2));
  DETRAIN_ASSIGN_OR_RETURN(uint64_t id, lineage_.FoldIn(branch, static_cast<uint32_t>(step)));
  const std::string purpose = "step " + std::to_string(step);
  DETRAIN_RETURN_IF_ERROR(lineage_.Use(id, purpose));
  for (int64_t s = 0; s < shards_; ++s) {
    DETRAIN_ASSIGN_OR_RETURN(uint64_t shard, lineage_.FoldIn(id, static_cast<uint32_t>(s)));
    DETRAIN_RETURN_IF_ERROR(lineage_.Use(shard, purpose + " shard " + std::to_string(s)));
  }
  return lineage_.KeyOf(id);
}

}  // namespace detrain::runtime
