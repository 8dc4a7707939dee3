// The training loop's step machine (DESIGN.md §9 "training loop"): the initial state from the
// init plan, one train step on the executor, and the evaluation program. The loop itself — how
// many steps, what is recorded after each, checkpoints — belongs to the run session
// (session.h), which is why this class has no notion of files or digests.
//
// The state is the train step's carried values in entry order, as the compile result types them
// (driver::StateSpec; train_state.h): the parameters (declaration order), the optimizer slots and
// the update counter. Step t takes the state, the learning rate LearningRateAt(schedule, t)
// (learning_rate.h), the batch of step t and the step key, and returns the new state and the
// loss.
//
// Thread safety: one Step or Evaluate at a time per trainer. Determinism: every result is a
// function of the compiled stages, the data and t — never of the executor's threads, devices or
// ISA (runtime/executor.h).
#ifndef DETRAIN_RUNTIME_TRAIN_TRAINER_H_
#define DETRAIN_RUNTIME_TRAIN_TRAINER_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "attest/state_digest.h"
#include "base/status.h"
#include "base/thread_pool.h"
#include "compiler/ir/literal.h"
#include "compiler/plan/entry_signature.h"
#include "driver/compile.h"
#include "runtime/executor.h"
#include "runtime/train/run_keys.h"
#include "runtime/train/train_state.h"
#include "runtime/train/training_data.h"

namespace detrain::runtime {

struct StepResult {
  float loss = 0;
  float learning_rate = 0;
  prng::Key key;
  Batch batch;
  // A NaN or infinite loss leaves the state as it was; `nonfinite` then says what was not
  // finite: "loss is NaN", plus the first result tensor with a non-finite element.
  bool finite = true;
  std::string nonfinite;
};

struct EvalResult {
  float loss = 0;
  std::optional<float> accuracy;
};

class Trainer {
 public:
  // `compiled` must hold stages "plan" and "init", a configuration and the typed state;
  // "eval-plan" is optional. `data` must outlive the trainer.
  static Result<std::unique_ptr<Trainer>> Create(const driver::CompileResult& compiled,
                                                 TrainingData* data,
                                                 const ExecutorOptions& options);

  // The initial state: each parameter drawn with its key from `keys` (RunKeys::InitKey, which
  // records it), zero optimizer slots and count 0. Checks the init plan's recorded keys. A run
  // spec's is the initial state it names, and draws no key.
  Result<TrainState> InitialState(RunKeys* keys) const;

  // An empty state of the right names and shapes (to be filled from a checkpoint).
  TrainState StateLayout() const;

  // Runs step t on `state` (replaced by the new state unless the loss is not finite) with key
  // `step_key`. The new state is read over the old one: a step allocates no state. Resident
  // state: where `state` is what the previous step of this trainer read out (every tensor's
  // StateTensor::resident tag says so) and the plan donated the parameters' slices to the results
  // (one device), the step reads it where it lies and copies none of it in.
  //
  // With `read_state` false the new state stays on the devices: `state` keeps its old values,
  // each tensor marked stale, until Sync reads it (or Digest digests it where it lies); the next
  // step takes it where it lies. A non-finite step then leaves `state` stale — the state before
  // it is gone from the devices — and the caller rebuilds it (RunSession replays the steps
  // since `state` was last read, StaleSince).
  Result<StepResult> Step(int64_t t, const prng::Key& step_key, TrainState* state,
                          bool read_state = true);
  // Reads the state the last step left on the devices into `state` when it is stale.
  Status Sync(TrainState* state);
  // The step before which `state`'s stale values were read (the first step whose result it
  // lacks); meaningful while it is stale.
  int64_t StaleSince() const { return stale_since_; }
  // `state`'s digests under `policy` (attest::DigestState). A stale state is digested where it
  // lies under the chunked policy (Executor::DigestResults: 16 bytes per tensor move), and read
  // first under the others.
  Result<attest::StateDigests> Digest(TrainState* state, attest::DigestPolicy policy,
                                      ThreadPool* pool);

  // A follower rank of a multi-process run (ExecutorOptions::cluster): takes part in each of
  // rank 0's train steps until rank 0 says stop; returns the value it sent (its exit code).
  Result<int64_t> Follow();

  // The eval program over the validation split, when the program has one.
  bool has_eval() const { return eval_ != nullptr; }
  Result<EvalResult> Evaluate(const TrainState& state);

  Isa isa() const;
  // What runs the train step (ExecutorStats::devices): the CPU, or each GPU with its image.
  const std::vector<std::string>& devices() const;

 private:
  Trainer() = default;

  std::vector<frontend::ParamConfig> params_;  // a .dt program's: each parameter's initializer
  frontend::ScheduleConfig learning_rate_;
  std::string init_plan_;
  TrainingData* data_ = nullptr;
  std::unique_ptr<Executor> step_;
  uint64_t resident_ = 0;  // the tag of the state the last step left in step_'s arena, or 0
  int64_t stale_since_ = 0;
  bool carried_ = false;  // the step's state results are carried (Executor::SetCarry)
  std::unique_ptr<Executor> eval_;
  // The state's names, roles and shapes: a layout is made only when asked for (it would hold
  // a zero copy of the whole state).
  std::vector<driver::StateSpec> specs_;
  // A run spec's initial state (driver::CompileResult::initial_state); null for a .dt program.
  std::shared_ptr<const TrainState> initial_state_;
  std::optional<Batch> validation_;
};

}  // namespace detrain::runtime

#endif  // DETRAIN_RUNTIME_TRAIN_TRAINER_H_
