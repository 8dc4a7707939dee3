// A training run's session (DESIGN.md §9): what a run, a resumed run, the verifier's replay and
// `detrain diff` build from one compile result, built here once so that they cannot differ.
//
//   keys      RunKeys(seed, PRNG mode, S), the split key derived first: it decides the data, and
//             the lineage's node ids follow the derivation order (run_keys.h)
//   data      the split, the standardization and the batches (training_data.h)
//   schedule  the step count (the program's, or an override), the checkpoint and evaluation
//             cadence, and the per-step digest policy (step_record.h)
//   trainer   the step machine on an executor (trainer.h)
//   chain     the stage chain's canonical JSON, to which the genesis hash commits, and each
//             step's record chained to the one before
//
// A session runs steps in order, deriving (and recording in the lineage) each step's keys. A
// Replica runs any step from a recorded run's checkpoints, with keys derived without a lineage
// (StepKeyOf: the same keys), so several replicas replay segments at once.
//
// Thread safety: a session is driven from one thread; replicas share nothing mutable with it or
// with each other. Determinism: every record is a function of the compile result, the data and
// t — never of the executor's threads, devices, ISA or backend.
#ifndef DETRAIN_RUNTIME_TRAIN_SESSION_H_
#define DETRAIN_RUNTIME_TRAIN_SESSION_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "attest/sha256.h"
#include "attest/state_digest.h"
#include "base/status.h"
#include "base/thread_pool.h"
#include "driver/compile.h"
#include "runtime/executor.h"
#include "runtime/train/run_keys.h"
#include "runtime/train/step_record.h"
#include "runtime/train/train_state.h"
#include "runtime/train/trainer.h"
#include "runtime/train/training_data.h"

namespace detrain::runtime {

struct SessionOptions {
  ExecutorOptions executor;
  // Instead of the program's step count; callers check it in their own words (a flag, a
  // manifest field).
  std::optional<int64_t> steps;
  attest::DigestPolicy step_digest = attest::DigestPolicy::kXxh3;
};

// What a recorded run left for replay (a bundle's checkpoints and step log; evidence/).
class RecordedRun {
 public:
  virtual ~RecordedRun() = default;
  // Loads the state after `steps_done` steps (a checkpoint the run wrote) into `state`, which
  // holds the layout; the error says what is wrong with the checkpoint.
  virtual Status LoadCheckpoint(int64_t steps_done, TrainState* state) const = 0;
  // The steps after which the run wrote a checkpoint, ascending.
  virtual std::vector<int64_t> Checkpoints() const = 0;
  // h_{t-1} as recorded: the hash step t chains to (the genesis hash for t = 0).
  virtual attest::Digest256 HashBefore(int64_t t) const = 0;
};

class Replica;

class RunSession {
 public:
  // Opens a run of `compiled`, which must train (a .dt program or a run spec; an HLO module has
  // no data).
  static Result<std::unique_ptr<RunSession>> Open(driver::CompileResult compiled,
                                                  const SessionOptions& options);

  const driver::CompileResult& compiled() const { return compiled_; }
  const frontend::RunConfig& config() const { return *compiled_.config; }
  const StepSchedule& schedule() const { return schedule_; }
  const TrainingData& data() const { return *data_; }
  Trainer& trainer() { return *trainer_; }
  const RunKeys& keys() const { return *keys_; }
  const std::string& stage_chain() const { return stage_chain_; }
  // An empty state of the run's names, roles and shapes (to be filled from a checkpoint).
  TrainState StateLayout() const { return runtime::StateLayout(compiled_.state); }

  // The initial state, each parameter drawn with its key, which the lineage records
  // (Trainer::InitialState).
  Result<TrainState> InitialState();
  // The genesis hash h_{-1}: the stage chain and the initial state's SHA-256 roots.
  Result<attest::Digest256> Genesis(const TrainState& init, ThreadPool* pool) const;

  // Records the keys of steps [0, t) without running them: a resumed run's lineage is a straight
  // run's.
  Status DeriveKeysBefore(int64_t t);
  // Step t of the run: its keys derived and recorded, the train step run on `state`, the new
  // state digested under the policy and the record chained to `previous`. With `keep`, the new
  // state stays on the devices unless the step takes roots or evaluates, or the policy needs it
  // on the host (all but xxh3-128-chunked), and at least every 256 steps: `state` is then stale
  // (Trainer::Step) until Sync or a step that reads it. A non-finite step leaves `state` the
  // state before it, read (rebuilt by replaying at most 255 steps).
  Result<StepOutcome> Step(int64_t t, const attest::Digest256& previous, TrainState* state,
                           ThreadPool* pool, bool keep = false);
  // Step t without a record or digests (training without a bundle); the evaluation when one is
  // due, in `eval`. With `keep`, as Step: the state is read when it evaluates and after the
  // last step.
  Result<StepResult> StepUnrecorded(int64_t t, TrainState* state, std::optional<EvalResult>* eval,
                                    bool keep = false);
  // Reads a stale `state` (Step with `keep`).
  Status Sync(TrainState* state) { return trainer_->Sync(state); }

  // A replica on `executor`: the same compile result and data, a trainer of its own.
  Result<std::unique_ptr<Replica>> NewReplica(const ExecutorOptions& executor) const;

 private:
  RunSession() = default;

  driver::CompileResult compiled_;
  StepSchedule schedule_;
  std::unique_ptr<RunKeys> keys_;
  std::unique_ptr<TrainingData> data_;
  std::unique_ptr<Trainer> trainer_;
  std::string stage_chain_;
};

// Replays steps of a recorded run (verify, diff).
class Replica {
 public:
  // The state after `k` steps: the initial state when k is 0, else the checkpoint `run` holds
  // for k.
  Result<TrainState> StartState(int64_t k, const RecordedRun& run);
  // Step t with its key, chained to `previous`; `keep` as RunSession::Step.
  Result<StepOutcome> Step(int64_t t, const attest::Digest256& previous, TrainState* state,
                           ThreadPool* pool, bool keep = false);
  // Reads a stale `state` (Step with `keep`).
  Status Sync(TrainState* state);
  // The state after step t (t + 1 steps done), replayed: from the newest checkpoint at or before
  // step t (or the initial state), steps start..t run, each chained to its recorded predecessor
  // and given to `check`, whose error ends the replay. `*start` (when not null) is where the
  // replay started; `before` (when set) is called with it first.
  Result<TrainState> StateAfter(int64_t t, const RecordedRun& run,
                                const std::function<Status(int64_t, const StepOutcome&)>& check,
                                const std::function<void(int64_t start)>& before, ThreadPool* pool);

  TrainingData& data() { return data_; }

 private:
  friend class RunSession;
  Replica(const RunSession& session, TrainingData data)
      : session_(session), data_(std::move(data)) {}

  const RunSession& session_;
  TrainingData data_;
  std::unique_ptr<Trainer> trainer_;
};

}  // namespace detrain::runtime

#endif  // DETRAIN_RUNTIME_TRAIN_SESSION_H_
