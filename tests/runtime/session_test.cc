// The run session (runtime/train/session.h): the typed state the compile result carries, the
// lineage a session derives (the split key first), a straight run against a resumed one and
// against replicas replaying from checkpoints, and StateAfter's replay with its check.
#include "runtime/train/session.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>

#include "attest/prng/jax_random.h"
#include "driver/compile.h"

namespace detrain::runtime {
namespace {

using plan::ParamRole;

const std::string kTiny =
    std::string(DETRAIN_SOURCE_DIR) + "/tests/evidence/testdata/tiny/train.dt";

driver::CompileResult CompileTiny() {
  Result<driver::CompileResult> c = driver::Compile(kTiny, {});
  EXPECT_TRUE(c.ok()) << c.status().message();
  return c.ok() ? std::move(*c) : driver::CompileResult();
}

std::unique_ptr<RunSession> OpenTiny(const SessionOptions& o = {}) {
  Result<std::unique_ptr<RunSession>> s = RunSession::Open(CompileTiny(), o);
  EXPECT_TRUE(s.ok()) << s.status().message();
  return s.ok() ? std::move(*s) : nullptr;
}

// A run as recorded: the records of a straight run and its state after every step, offered as
// checkpoints at the schedule's steps.
class MemoryRun : public RecordedRun {
 public:
  Status LoadCheckpoint(int64_t k, TrainState* state) const override {
    auto it = states_.find(k);
    if (it == states_.end()) return NotFound("no checkpoint " + std::to_string(k));
    *state = it->second;
    return Status::Ok();
  }
  std::vector<int64_t> Checkpoints() const override {
    std::vector<int64_t> out;
    for (const auto& [k, s] : states_) out.push_back(k);
    return out;
  }
  attest::Digest256 HashBefore(int64_t t) const override {
    return t == 0 ? genesis_ : records_[static_cast<size_t>(t - 1)].hash;
  }

  attest::Digest256 genesis_{};
  std::vector<StepRecord> records_;
  std::map<int64_t, TrainState> states_;  // checkpoints: steps done -> state
};

// The tiny program trained straight through: every record, the checkpointed states, the lineage.
MemoryRun RunStraight(RunSession& s, std::string* lineage) {
  MemoryRun run;
  ThreadPool pool(1);
  Result<TrainState> state = s.InitialState();
  EXPECT_TRUE(state.ok()) << state.status().message();
  Result<attest::Digest256> genesis = s.Genesis(*state, &pool);
  EXPECT_TRUE(genesis.ok());
  run.genesis_ = *genesis;
  attest::Digest256 prev = run.genesis_;
  for (int64_t t = 0; t < s.schedule().steps; ++t) {
    Result<StepOutcome> out = s.Step(t, prev, &*state, &pool);
    EXPECT_TRUE(out.ok() && out->finite);
    prev = out->record.hash;
    run.records_.push_back(out->record);
    if (s.schedule().Checkpoints(t)) run.states_[t + 1] = *state;
  }
  *lineage = s.keys().lineage().ToJsonl();
  return run;
}

TEST(SessionTest, TheCompileResultTypesTheState) {
  const driver::CompileResult c = CompileTiny();
  // Parameters in declaration order, adam's two slots per parameter (parameter-major), count.
  const std::vector<std::string> names = {"w1",    "b1",    "w2",    "b2",    "w1_s0",
                                          "w1_s1", "b1_s0", "b1_s1", "w2_s0", "w2_s1",
                                          "b2_s0", "b2_s1", "count"};
  ASSERT_EQ(c.state.size(), names.size());
  for (size_t i = 0; i < names.size(); ++i) {
    const driver::StateSpec& s = c.state[i];
    EXPECT_EQ(s.name, names[i]);
    const ParamRole want = i < 4    ? ParamRole::kParameter
                           : i < 12 ? ParamRole::kOptimizerState
                                    : ParamRole::kStep;
    EXPECT_EQ(s.role, want) << s.name;
    EXPECT_EQ(s.owner, want == ParamRole::kOptimizerState ? static_cast<int64_t>(i - 4) / 2 : -1)
        << s.name;
    // A slot has its parameter's shape; the counter is s32[].
    if (s.owner >= 0) EXPECT_EQ(s.shape, c.state[static_cast<size_t>(s.owner)].shape) << s.name;
  }
  EXPECT_EQ(c.state[0].shape, ir::Shape(ir::ElementType::kF32, {4, 8}));
  EXPECT_EQ(c.state[1].shape, ir::Shape(ir::ElementType::kF32, {8}));
  EXPECT_EQ(c.state.back().shape, ir::Shape(ir::ElementType::kS32, {}));
  EXPECT_EQ(c.initial_state, nullptr);  // a .dt program draws its initial state
}

TEST(SessionTest, TheSplitKeyIsDerivedFirstAndTheScheduleIsThePrograms) {
  SessionOptions o;
  o.steps = 9;
  o.step_digest = attest::DigestPolicy::kSha256;
  std::unique_ptr<RunSession> s = OpenTiny(o);
  ASSERT_NE(s, nullptr);
  ASSERT_FALSE(s->keys().lineage().uses().empty());
  EXPECT_EQ(s->keys().lineage().uses().front().purpose, "split");
  EXPECT_EQ(s->keys().lineage().uses().size(), 1u);  // nothing else before the initial state
  EXPECT_EQ(s->schedule().steps, 9);
  EXPECT_EQ(s->schedule().checkpoint_every, 8);
  EXPECT_EQ(s->schedule().eval_every, 8);
  EXPECT_EQ(s->schedule().policy, attest::DigestPolicy::kSha256);
  EXPECT_EQ(s->config().train.steps, 9);
  ASSERT_TRUE(s->InitialState().ok());
  EXPECT_EQ(s->keys().lineage().uses()[1].purpose, "init w1");
}

TEST(SessionTest, AResumedSessionGivesTheStraightRunsRecordsAndLineage) {
  std::unique_ptr<RunSession> straight = OpenTiny();
  ASSERT_NE(straight, nullptr);
  std::string lineage;
  const MemoryRun run = RunStraight(*straight, &lineage);
  ASSERT_EQ(run.records_.size(), 24u);
  ASSERT_EQ(run.Checkpoints(), (std::vector<int64_t>{8, 16}));

  // Resume after the checkpoint at 16: the keys of steps 0..15 derived without running them.
  std::unique_ptr<RunSession> resumed = OpenTiny();
  ASSERT_NE(resumed, nullptr);
  ASSERT_TRUE(resumed->InitialState().ok());
  ASSERT_TRUE(resumed->DeriveKeysBefore(16).ok());
  TrainState state = run.states_.at(16);
  ThreadPool pool(1);
  for (int64_t t = 16; t < 24; ++t) {
    Result<StepOutcome> out = resumed->Step(t, run.HashBefore(t), &state, &pool);
    ASSERT_TRUE(out.ok() && out->finite);
    EXPECT_EQ(out->record.hash, run.records_[static_cast<size_t>(t)].hash) << "step " << t;
  }
  EXPECT_EQ(resumed->keys().lineage().ToJsonl(), lineage);
}

TEST(SessionTest, ReplicasReplayAnySegmentToTheRecordedHashes) {
  std::unique_ptr<RunSession> s = OpenTiny();
  ASSERT_NE(s, nullptr);
  std::string lineage;
  const MemoryRun run = RunStraight(*s, &lineage);
  ExecutorOptions threads;
  threads.threads = 3;  // another executor: the bits do not depend on it
  Result<std::unique_ptr<Replica>> replica = s->NewReplica(threads);
  ASSERT_TRUE(replica.ok()) << replica.status().message();
  ThreadPool pool(1);
  for (int64_t begin : {0, 8, 16}) {
    Result<TrainState> state = (*replica)->StartState(begin, run);
    ASSERT_TRUE(state.ok()) << state.status().message();
    for (int64_t t = begin; t < begin + 8; ++t) {
      Result<StepOutcome> out = (*replica)->Step(t, run.HashBefore(t), &*state, &pool);
      ASSERT_TRUE(out.ok() && out->finite);
      EXPECT_EQ(out->record.hash, run.records_[static_cast<size_t>(t)].hash) << "step " << t;
    }
  }
  EXPECT_FALSE((*replica)->StartState(5, run).ok()) << "no checkpoint after 5 steps";
}

TEST(SessionTest, StateAfterReplaysFromTheNewestCheckpointAndChecksEveryStep) {
  std::unique_ptr<RunSession> s = OpenTiny();
  ASSERT_NE(s, nullptr);
  std::string lineage;
  const MemoryRun run = RunStraight(*s, &lineage);
  Result<std::unique_ptr<Replica>> replica = s->NewReplica(ExecutorOptions{});
  ASSERT_TRUE(replica.ok());
  ThreadPool pool(1);
  std::vector<int64_t> checked;
  auto check = [&](int64_t t, const StepOutcome& out) {
    checked.push_back(t);
    return out.record.hash == run.records_[static_cast<size_t>(t)].hash
               ? Status::Ok()
               : VerificationFailed("step " + std::to_string(t));
  };
  int64_t start = -1;
  // After step 16 (17 steps done): from the checkpoint at 16, step 16 replayed.
  Result<TrainState> after = (*replica)->StateAfter(
      16, run, check, [&](int64_t from) { start = from; }, &pool);
  ASSERT_TRUE(after.ok()) << after.status().message();
  EXPECT_EQ(start, 16);
  EXPECT_EQ(checked, std::vector<int64_t>{16});
  // After step 15: the checkpoint at 16 is later, so from the one at 8.
  checked.clear();
  after = (*replica)->StateAfter(15, run, check, nullptr, &pool);
  ASSERT_TRUE(after.ok());
  EXPECT_EQ(checked, (std::vector<int64_t>{8, 9, 10, 11, 12, 13, 14, 15}));
  ASSERT_EQ(after->size(), run.states_.at(16).size());
  for (size_t i = 0; i < after->size(); ++i) {
    EXPECT_EQ((*after)[i].value.bytes(), run.states_.at(16)[i].value.bytes()) << (*after)[i].name;
  }
  // A check's error ends the replay.
  auto refuse = [](int64_t t, const StepOutcome&) { return VerificationFailed("no"); };
  EXPECT_EQ((*replica)->StateAfter(3, run, refuse, nullptr, &pool).status().code(),
            StatusCode::kVerificationFailed);
}

// The state left on the devices between steps (keep): under xxh3-128-chunked the records are the
// same as a run that reads the state every step, the state is stale between the steps that take
// roots and Sync reads the same bits; the other policies read it anyway.
TEST(SessionTest, StateKeptOnTheDevicesGivesTheSameRecords) {
  SessionOptions o;
  o.step_digest = attest::DigestPolicy::kXxh3Chunked;
  std::unique_ptr<RunSession> read = OpenTiny(o), kept = OpenTiny(o);
  ASSERT_TRUE(read != nullptr && kept != nullptr);
  ThreadPool pool(2);
  Result<TrainState> a = read->InitialState(), b = kept->InitialState();
  ASSERT_TRUE(a.ok() && b.ok());
  attest::Digest256 pa{}, pb{};
  int64_t stale_steps = 0;
  for (int64_t t = 0; t < read->schedule().steps; ++t) {
    Result<StepOutcome> x = read->Step(t, pa, &*a, &pool);
    Result<StepOutcome> y = kept->Step(t, pb, &*b, &pool, /*keep=*/true);
    ASSERT_TRUE(x.ok() && y.ok() && x->finite && y->finite);
    EXPECT_EQ(x->record.hash, y->record.hash) << "step " << t;
    EXPECT_EQ(x->record.tensors, y->record.tensors) << "step " << t;
    pa = x->record.hash;
    pb = y->record.hash;
    const bool stale = (*b)[0].stale;
    EXPECT_EQ(stale, !kept->schedule().TakesRoots(t) && !kept->schedule().Evaluates(t)) << t;
    stale_steps += stale;
    if (t % 5 == 0) {  // read now and then: the next step starts from the read values
      ASSERT_TRUE(kept->Sync(&*b).ok());
      for (size_t i = 0; i < a->size(); ++i)
        EXPECT_EQ((*a)[i].value.bytes(), (*b)[i].value.bytes()) << (*a)[i].name << " step " << t;
    }
  }
  EXPECT_GT(stale_steps, 10);
  EXPECT_FALSE((*b)[0].stale) << "the last step reads the state";
}

// A non-finite step after steps that left the state on the devices (which the step overwrote)
// gives back the state before it, rebuilt by replay: the state a run that read every step holds.
TEST(SessionTest, ANonFiniteStepAfterKeptStepsRebuildsTheStateBeforeIt) {
  const std::string dir = ::testing::TempDir() + "/session_nan";
  std::filesystem::create_directories(dir);
  const std::string tiny_dir = std::string(DETRAIN_SOURCE_DIR) + "/tests/evidence/testdata/tiny";
  std::filesystem::copy_file(tiny_dir + "/tiny.csv", dir + "/tiny.csv",
                             std::filesystem::copy_options::overwrite_existing);
  std::ifstream in(kTiny);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  // Large enough to overflow after a few steps, small enough that the first ones are finite.
  const std::string from = "adam(learning_rate = 1e-2)";
  ASSERT_NE(text.find(from), std::string::npos);
  text.replace(text.find(from), from.size(), "sgd(learning_rate = 1e18)");
  std::ofstream(dir + "/train.dt") << text;
  SessionOptions o;
  o.step_digest = attest::DigestPolicy::kXxh3Chunked;
  auto open = [&]() -> std::unique_ptr<RunSession> {
    Result<driver::CompileResult> c = driver::Compile(dir + "/train.dt", {});
    EXPECT_TRUE(c.ok()) << c.status().message();
    if (!c.ok()) return nullptr;
    Result<std::unique_ptr<RunSession>> s = RunSession::Open(std::move(*c), o);
    return s.ok() ? std::move(*s) : nullptr;
  };
  std::unique_ptr<RunSession> read = open(), kept = open();
  ASSERT_TRUE(read != nullptr && kept != nullptr);
  ThreadPool pool(1);
  Result<TrainState> a = read->InitialState(), b = kept->InitialState();
  ASSERT_TRUE(a.ok() && b.ok());
  attest::Digest256 prev{};
  int64_t stopped = -1;
  bool was_stale = false;  // before the step that stops
  for (int64_t t = 0; t < read->schedule().steps && stopped < 0; ++t) {
    was_stale = (*b)[0].stale;
    Result<StepOutcome> x = read->Step(t, prev, &*a, &pool);
    Result<StepOutcome> y = kept->Step(t, prev, &*b, &pool, /*keep=*/true);
    ASSERT_TRUE(x.ok() && y.ok()) << t;
    ASSERT_EQ(x->finite, y->finite) << t;
    if (!x->finite) {
      stopped = t;
      EXPECT_EQ(x->nonfinite, y->nonfinite);
    } else {
      prev = x->record.hash;
    }
  }
  ASSERT_GT(stopped, 1) << "the program must stop after kept steps";
  EXPECT_TRUE(was_stale) << "step " << stopped << " found the state on the devices only";
  for (size_t i = 0; i < a->size(); ++i) {
    EXPECT_FALSE((*b)[i].stale);
    EXPECT_EQ((*a)[i].value.bytes(), (*b)[i].value.bytes()) << (*a)[i].name;
  }
}

}  // namespace
}  // namespace detrain::runtime
