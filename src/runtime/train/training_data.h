// The data side of a training run (docs/language.md §data; schemas/bundle.md "Data"): the
// validation split, the standardization statistics, the per-epoch shuffle and the batches.
//
//   split       perm = permutation(split key, rows); the last floor(validation * rows) entries
//               of perm are the validation rows, the others (in perm order) the training rows.
//   standardize per feature, over the training rows in ascending row order: mean = pairwise-tree
//               sum / n, var = pairwise-tree sum of (x - mean)^2 / n, all in f32 (each operation
//               rounded once; base/pairwise_tree.h); scale = sqrt(var), or 1 where that is 0 or
//               not finite; every row's feature becomes (x - mean) / scale.
//   shuffle     epoch e visits the training rows in the order train[permutation(shuffle key e,
//               train rows)].
//   batches     steps_per_epoch = floor(train rows / batch); step t is batch t mod
//               steps_per_epoch of epoch t / steps_per_epoch: `batch` consecutive rows of that
//               epoch's order. Remainder policy "drop": the last train rows mod batch rows of each
//               epoch's order are not visited in that epoch (a different set each epoch).
//
// Everything here is a pure function of the dataset's parsed values, the configuration and the
// keys, so the verifier recomputes it and compares it with what the bundle recorded.
// Thread safety: const methods may run concurrently; EpochOrder caches one epoch (not const).
#ifndef DETRAIN_RUNTIME_TRAIN_TRAINING_DATA_H_
#define DETRAIN_RUNTIME_TRAIN_TRAINING_DATA_H_

#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"
#include "compiler/ir/literal.h"
#include "frontend/data.h"
#include "frontend/run_config.h"
#include "runtime/train/run_keys.h"

namespace detrain::runtime {

inline constexpr char kRemainderDrop[] = "drop";

struct DataSplit {
  int64_t rows = 0;
  std::vector<int64_t> train;       // row ids, in split-permutation order
  std::vector<int64_t> validation;  // row ids, in split-permutation order
  std::vector<float> mean, scale;   // per feature; empty without standardization
  int64_t batch = 0;
  int64_t steps_per_epoch = 0;
  std::string remainder = kRemainderDrop;
};

struct Batch {
  int64_t epoch = 0;
  std::vector<int64_t> rows;  // the dataset rows, in batch order
  ir::Literal features;       // [batch, ...]
  ir::Literal labels;         // [batch, ...]
};

class TrainingData {
 public:
  // Splits under `split_key` (RunKeys::SplitKey), computes the statistics and standardizes.
  static Result<TrainingData> Prepare(const frontend::RunConfig& config, frontend::Dataset dataset,
                                      prng::Key split_key);

  const DataSplit& split() const { return split_; }
  const frontend::Dataset& dataset() const { return dataset_; }  // standardized

  // The batch of step t. The epoch's order is computed from its shuffle key (ShuffleKeyOf, the
  // key RunKeys::BeginStep records) the first time the epoch is needed, so any step can be
  // asked for first (a resumed run, a replayed segment).
  Result<Batch> BatchOf(int64_t step);

  // The validation rows (in split order) as the eval program's inputs.
  Result<Batch> Validation() const;

 private:
  Result<Batch> Gather(const std::vector<int64_t>& rows, int64_t epoch) const;

  frontend::Dataset dataset_;
  DataSplit split_;
  int64_t seed_ = 0;
  prng::Mode mode_ = prng::Mode::kPartitionable;
  int64_t cached_epoch_ = -1;
  std::vector<int64_t> epoch_order_;
};

}  // namespace detrain::runtime

#endif  // DETRAIN_RUNTIME_TRAIN_TRAINING_DATA_H_
