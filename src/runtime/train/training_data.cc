// See training_data.h.
#include "runtime/train/training_data.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "attest/prng/jax_random.h"
#include "base/pairwise_tree.h"

namespace detrain::runtime {
namespace {

using ir::ElementType;

std::vector<int64_t> WithBatch(int64_t batch, const std::vector<int64_t>& dims) {
  std::vector<int64_t> out = {batch};
  out.insert(out.end(), dims.begin(), dims.end());
  return out;
}

int64_t Product(const std::vector<int64_t>& dims) {
  int64_t p = 1;
  for (int64_t d : dims) p *= d;
  return p;
}

// mean and scale per feature over `rows` (ascending), in f32 with the pairwise tree.
void Statistics(const frontend::Dataset& ds, std::vector<int64_t> rows, std::vector<float>* mean,
                std::vector<float>* scale) {
  std::sort(rows.begin(), rows.end());
  const int64_t f = ds.features;
  const float n = static_cast<float>(rows.size());
  std::vector<float> column(rows.size());
  mean->assign(static_cast<size_t>(f), 0.0f);
  scale->assign(static_cast<size_t>(f), 1.0f);
  auto add = [](float a, float b) { return a + b; };
  for (int64_t j = 0; j < f; ++j) {
    for (size_t i = 0; i < rows.size(); ++i) column[i] = ds.x[static_cast<size_t>(rows[i] * f + j)];
    float m = PairwiseTreeInPlace(column.data(), static_cast<int64_t>(column.size()), add) / n;
    for (size_t i = 0; i < rows.size(); ++i) {
      float d = ds.x[static_cast<size_t>(rows[i] * f + j)] - m;
      column[i] = d * d;
    }
    float var = PairwiseTreeInPlace(column.data(), static_cast<int64_t>(column.size()), add) / n;
    float s = std::sqrt(var);
    (*mean)[static_cast<size_t>(j)] = m;
    (*scale)[static_cast<size_t>(j)] = (s == 0.0f || !std::isfinite(s)) ? 1.0f : s;
  }
}

}  // namespace

Result<TrainingData> TrainingData::Prepare(const frontend::RunConfig& config,
                                           frontend::Dataset dataset, prng::Key split_key) {
  TrainingData d;
  d.seed_ = config.train.seed;
  d.mode_ = PrngModeOf(config.train.prng);
  DataSplit& s = d.split_;
  s.rows = dataset.rows;
  s.batch = config.train.batch;
  const int64_t validation =
      static_cast<int64_t>(config.data.validation * static_cast<double>(dataset.rows));
  if (s.batch < 1 || dataset.rows - validation < s.batch) {
    return InvalidArgument("the training split has " + std::to_string(dataset.rows - validation) +
                           " rows, fewer than one batch of " + std::to_string(s.batch));
  }
  prng::Options options;
  options.mode = d.mode_;
  DETRAIN_ASSIGN_OR_RETURN(std::vector<int64_t> perm,
                           prng::Permutation(split_key, dataset.rows, options));
  const int64_t train = dataset.rows - validation;
  s.train.assign(perm.begin(), perm.begin() + train);
  s.validation.assign(perm.begin() + train, perm.end());
  s.steps_per_epoch = train / s.batch;
  if (config.data.standardize && !dataset.x.empty()) {
    Statistics(dataset, s.train, &s.mean, &s.scale);
    const int64_t f = dataset.features;
    for (int64_t r = 0; r < dataset.rows; ++r) {
      for (int64_t j = 0; j < f; ++j) {
        float& x = dataset.x[static_cast<size_t>(r * f + j)];
        x = (x - s.mean[static_cast<size_t>(j)]) / s.scale[static_cast<size_t>(j)];
      }
    }
  }
  d.dataset_ = std::move(dataset);
  return d;
}

Result<Batch> TrainingData::Gather(const std::vector<int64_t>& rows, int64_t epoch) const {
  const frontend::Dataset& ds = dataset_;
  const int64_t b = static_cast<int64_t>(rows.size());
  Batch out;
  out.epoch = epoch;
  out.rows = rows;
  const bool x_s32 = !ds.x_s32.empty();
  out.features = ir::Literal(
      ir::Shape(x_s32 ? ElementType::kS32 : ElementType::kF32, WithBatch(b, ds.x_dims)));
  const bool y_s32 = ds.label_type == frontend::LabelType::kS32;
  out.labels = ir::Literal(
      ir::Shape(y_s32 ? ElementType::kS32 : ElementType::kF32, WithBatch(b, ds.y_dims)));
  const size_t fx = static_cast<size_t>(ds.features) * 4;
  const size_t fy = static_cast<size_t>(Product(ds.y_dims)) * 4;
  char* px = out.features.mutable_bytes().data();
  char* py = out.labels.mutable_bytes().data();
  const char* sx = x_s32 ? reinterpret_cast<const char*>(ds.x_s32.data())
                         : reinterpret_cast<const char*>(ds.x.data());
  const char* sy = y_s32 ? reinterpret_cast<const char*>(ds.y_s32.data())
                         : reinterpret_cast<const char*>(ds.y_f32.data());
  for (int64_t i = 0; i < b; ++i) {
    const size_t r = static_cast<size_t>(rows[static_cast<size_t>(i)]);
    if (r >= static_cast<size_t>(ds.rows)) return Internal("batch row out of range");
    std::memcpy(px + static_cast<size_t>(i) * fx, sx + r * fx, fx);
    std::memcpy(py + static_cast<size_t>(i) * fy, sy + r * fy, fy);
  }
  return out;
}

Result<Batch> TrainingData::BatchOf(int64_t step) {
  const int64_t spe = split_.steps_per_epoch;
  const int64_t epoch = step / spe;
  if (epoch != cached_epoch_) {
    prng::Options options;
    options.mode = mode_;
    DETRAIN_ASSIGN_OR_RETURN(std::vector<int64_t> perm,
                             prng::Permutation(ShuffleKeyOf(seed_, epoch),
                                               static_cast<int64_t>(split_.train.size()), options));
    epoch_order_.resize(perm.size());
    for (size_t i = 0; i < perm.size(); ++i)
      epoch_order_[i] = split_.train[static_cast<size_t>(perm[i])];
    cached_epoch_ = epoch;
  }
  const size_t begin = static_cast<size_t>((step % spe) * split_.batch);
  std::vector<int64_t> rows(epoch_order_.begin() + static_cast<std::ptrdiff_t>(begin),
                            epoch_order_.begin() + static_cast<std::ptrdiff_t>(
                                                       begin + static_cast<size_t>(split_.batch)));
  return Gather(rows, epoch);
}

Result<Batch> TrainingData::Validation() const { return Gather(split_.validation, 0); }

}  // namespace detrain::runtime
