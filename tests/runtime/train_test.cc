// The training loop's pieces (src/runtime/train): keys through the lineage, the split, the
// standardization statistics, the shuffle and the batches, the trainer's state layout, and
// loading a state from a file.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <set>

#include "attest/prng/jax_random.h"
#include "driver/compile.h"
#include "runtime/train/run_keys.h"
#include "runtime/train/train_state.h"
#include "runtime/train/trainer.h"
#include "runtime/train/training_data.h"

namespace detrain::runtime {
namespace {

const std::string kTiny =
    std::string(DETRAIN_SOURCE_DIR) + "/tests/evidence/testdata/tiny/train.dt";

TEST(RunKeysTest, RecordsEveryKeyInRunOrderAndMatchesThePureDerivations) {
  RunKeys keys(42, frontend::PrngMode::kPartitionable, 2);
  Result<prng::Key> split = keys.SplitKey();
  ASSERT_TRUE(split.ok());
  EXPECT_EQ(*split, prng::FoldIn(prng::KeyFromSeed(42), 1));
  Result<prng::Key> init = keys.InitKey(1, "b1");
  ASSERT_TRUE(init.ok());
  EXPECT_EQ(*init, prng::FoldIn(prng::FoldIn(prng::KeyFromSeed(42), 0), 1));
  for (int64_t t = 0; t < 5; ++t) {
    Result<prng::Key> k = keys.BeginStep(t, 2);
    ASSERT_TRUE(k.ok());
    EXPECT_EQ(*k, StepKeyOf(42, t));
  }
  std::vector<std::string> purposes;
  for (const prng::KeyUse& u : keys.lineage().uses()) purposes.push_back(u.purpose);
  const std::vector<std::string> want = {
      "split",          "init b1",         "shuffle epoch 0", "step 0",         "step 0 shard 0",
      "step 0 shard 1", "step 1",          "step 1 shard 0",  "step 1 shard 1", "shuffle epoch 1",
      "step 2",         "step 2 shard 0",  "step 2 shard 1",  "step 3",         "step 3 shard 0",
      "step 3 shard 1", "shuffle epoch 2", "step 4",          "step 4 shard 0", "step 4 shard 1"};
  EXPECT_EQ(purposes, want);
  EXPECT_TRUE(prng::ReplayLineage(keys.lineage()).ok());
  // The shuffle key of epoch 1 is the one the pure derivation gives.
  for (const prng::KeyUse& u : keys.lineage().uses()) {
    if (u.purpose == "shuffle epoch 1")
      EXPECT_EQ(*keys.lineage().KeyOf(u.key_id), ShuffleKeyOf(42, 1));
  }
  EXPECT_FALSE(keys.BeginStep(-1, 2).ok());
}

class TinyTest : public ::testing::Test {
 protected:
  void SetUp() override {
    Result<driver::CompileResult> c = driver::Compile(kTiny, {});
    ASSERT_TRUE(c.ok()) << c.status().message();
    compiled_ = std::move(*c);
  }
  Result<TrainingData> Prepare() {
    RunKeys keys(compiled_.config->train.seed, compiled_.config->train.prng, 4);
    DETRAIN_ASSIGN_OR_RETURN(prng::Key k, keys.SplitKey());
    return TrainingData::Prepare(*compiled_.config, *compiled_.dataset, k);
  }
  driver::CompileResult compiled_;
};

TEST_F(TinyTest, SplitIsAPermutationDisjointAndSized) {
  Result<TrainingData> d = Prepare();
  ASSERT_TRUE(d.ok()) << d.status().message();
  const DataSplit& s = d->split();
  EXPECT_EQ(s.rows, 64);
  EXPECT_EQ(s.validation.size(), 16u);  // floor(0.25 * 64)
  EXPECT_EQ(s.train.size(), 48u);
  EXPECT_EQ(s.steps_per_epoch, 3);  // 48 / 16
  std::set<int64_t> all(s.train.begin(), s.train.end());
  all.insert(s.validation.begin(), s.validation.end());
  EXPECT_EQ(all.size(), 64u);
  EXPECT_EQ(*all.begin(), 0);
  EXPECT_EQ(*all.rbegin(), 63);
  // The split is jax.random.permutation(fold_in(key(3), 1), 64), cut at 48.
  Result<std::vector<int64_t>> perm =
      prng::Permutation(prng::FoldIn(prng::KeyFromSeed(3), 1), 64, prng::Options{});
  ASSERT_TRUE(perm.ok());
  EXPECT_TRUE(std::equal(s.train.begin(), s.train.end(), perm->begin()));
}

TEST_F(TinyTest, StandardizationUsesTheTrainingRowsOnly) {
  Result<TrainingData> d = Prepare();
  ASSERT_TRUE(d.ok());
  const DataSplit& s = d->split();
  ASSERT_EQ(s.mean.size(), 4u);
  const frontend::Dataset& raw = *compiled_.dataset;
  for (int j = 0; j < 4; ++j) {
    double sum = 0, sq = 0;
    for (int64_t r : s.train) sum += raw.x[static_cast<size_t>(r * 4 + j)];
    double mean = sum / 48;
    for (int64_t r : s.train) {
      double dx = raw.x[static_cast<size_t>(r * 4 + j)] - mean;
      sq += dx * dx;
    }
    EXPECT_NEAR(s.mean[static_cast<size_t>(j)], mean, 1e-5);
    EXPECT_NEAR(s.scale[static_cast<size_t>(j)], std::sqrt(sq / 48), 1e-5);
    // Standardized training features have mean ~0 and variance ~1.
    double m2 = 0;
    for (int64_t r : s.train) m2 += d->dataset().x[static_cast<size_t>(r * 4 + j)];
    EXPECT_NEAR(m2 / 48, 0.0, 1e-5);
  }
}

TEST_F(TinyTest, EachEpochVisitsDistinctRowsInItsOwnOrder) {
  Result<TrainingData> d = Prepare();
  ASSERT_TRUE(d.ok());
  std::set<int64_t> train(d->split().train.begin(), d->split().train.end());
  std::vector<int64_t> first_epoch;
  for (int64_t t = 0; t < 6; ++t) {
    Result<Batch> b = d->BatchOf(t);
    ASSERT_TRUE(b.ok());
    EXPECT_EQ(b->epoch, t / 3);
    EXPECT_EQ(b->rows.size(), 16u);
    EXPECT_EQ(b->features.shape().dims(), (std::vector<int64_t>{16, 4}));
    EXPECT_EQ(b->labels.shape().dims(), (std::vector<int64_t>{16}));
    for (int64_t r : b->rows)
      EXPECT_EQ(train.count(r), 1u) << "row " << r << " is not a training row";
    if (t < 3) first_epoch.insert(first_epoch.end(), b->rows.begin(), b->rows.end());
  }
  EXPECT_EQ(std::set<int64_t>(first_epoch.begin(), first_epoch.end()).size(), 48u);
  // Asking for a step out of order gives the same batch (resume, replayed segments).
  Result<TrainingData> again = Prepare();
  ASSERT_TRUE(again.ok());
  Result<Batch> b4 = again->BatchOf(4);
  Result<Batch> b4_in_order = d->BatchOf(4);
  ASSERT_TRUE(b4.ok() && b4_in_order.ok());
  EXPECT_EQ(b4->rows, b4_in_order->rows);
  EXPECT_EQ(b4->features.bytes(), b4_in_order->features.bytes());
}

TEST_F(TinyTest, TrainerStateIsParamsSlotsAndCount) {
  Result<TrainingData> d = Prepare();
  ASSERT_TRUE(d.ok());
  Result<std::unique_ptr<Trainer>> t = Trainer::Create(compiled_, &*d, ExecutorOptions{});
  ASSERT_TRUE(t.ok()) << t.status().message();
  std::vector<std::string> names;
  for (const StateTensor& s : (*t)->StateLayout()) names.push_back(s.name);
  EXPECT_EQ(names,
            (std::vector<std::string>{"w1", "b1", "w2", "b2", "w1_s0", "w1_s1", "b1_s0", "b1_s1",
                                      "w2_s0", "w2_s1", "b2_s0", "b2_s1", "count"}));
  RunKeys keys(3, frontend::PrngMode::kPartitionable, 4);
  Result<TrainState> s = (*t)->InitialState(&keys);
  ASSERT_TRUE(s.ok());
  Result<StepResult> r = (*t)->Step(0, StepKeyOf(3, 0), &*s);
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->finite);
  EXPECT_GT(r->loss, 0.0f);
  EXPECT_EQ(s->back().value.Get<int32_t>(0), 1) << "count after one update";
  ASSERT_TRUE((*t)->has_eval());
  Result<EvalResult> e = (*t)->Evaluate(*s);
  ASSERT_TRUE(e.ok());
  ASSERT_TRUE(e->accuracy.has_value());
  EXPECT_GE(*e->accuracy, 0.0f);
  EXPECT_LE(*e->accuracy, 1.0f);
}

// A state of many tensors loads from a file in n log n (it used to look each tensor up by a scan
// of the file: quadratic, hours at this size); a missing name and a wrong shape are still errors.
TEST(LoadStateTest, ManyTensorsByName) {
  constexpr int kCount = 100'000;
  TrainState layout;
  SafetensorsFile file;
  for (int i = 0; i < kCount; ++i) {
    const std::string name = "t" + std::to_string(i);
    layout.push_back(
        {name, plan::ParamRole::kParameter, ir::Literal(ir::Shape(ir::ElementType::kF32, {1}))});
    file.tensors.push_back({name, "F32", {1}, std::string(4, static_cast<char>(i % 7))});
  }
  std::reverse(file.tensors.begin(), file.tensors.end());
  ASSERT_TRUE(LoadState(file, &layout).ok());
  EXPECT_EQ(layout[12345].value.bytes(), std::string(4, static_cast<char>(12345 % 7)));
  file.tensors[0].name = "elsewhere";
  EXPECT_NE(LoadState(file, &layout).message().find("no tensor 't99999'"), std::string::npos);
  file.tensors[0] = {"t99999", "F32", {2}, std::string(8, '\0')};
  EXPECT_NE(LoadState(file, &layout).message().find("wrong dtype or shape"), std::string::npos);
}

}  // namespace
}  // namespace detrain::runtime
