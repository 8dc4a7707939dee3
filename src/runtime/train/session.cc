// See session.h.
#include "runtime/train/session.h"

#include "attest/canonical_json.h"
#include "driver/stage_table.h"

namespace detrain::runtime {
namespace {

// A state kept on the devices is read at least once in this many steps, so that rebuilding it
// after a non-finite step (RebuildState) replays fewer: one read of the state per 256 steps is
// ~0.4 % of reading it every step.
constexpr int64_t kReadAtLeastEvery = 256;

// After a non-finite step t that found `state` stale (its values older than the devices'
// state, which the step overwrote): the state before step t again, by replaying the steps since
// `state` was read, with the keys every run derives (StepKeyOf).
Status RebuildState(Trainer& trainer, int64_t seed, int64_t t, TrainState* state) {
  if (!IsStale(*state)) return Status::Ok();
  const int64_t since = trainer.StaleSince();
  for (StateTensor& s : *state) {
    s.stale = false;
    s.resident = 0;  // taken from these values, not the devices
  }
  for (int64_t u = since; u < t; ++u) {
    DETRAIN_ASSIGN_OR_RETURN(StepResult r, trainer.Step(u, StepKeyOf(seed, u), state));
    if (!r.finite) return Internal("step " + std::to_string(u) + " is not finite on replay");
  }
  return Status::Ok();
}

// The one definition of a step's record: the train step on `state`, the new state's digests
// under the schedule's policy, the roots when a checkpoint or the end follows, the evaluation
// when one is due, chained to `previous`. With `keep`, the new state stays on the devices where
// nothing here needs it on the host (the chunked digest is taken where it lies): `state` is then
// stale (Trainer::Step) and Sync reads it.
Result<StepOutcome> RecordStep(Trainer& trainer, const StepSchedule& schedule, int64_t seed,
                               int64_t t, const prng::Key& key, const attest::Digest256& previous,
                               TrainState* state, ThreadPool* pool, bool keep) {
  StepOutcome out;
  const bool read = !keep || schedule.policy != attest::DigestPolicy::kXxh3Chunked ||
                    schedule.TakesRoots(t) || (trainer.has_eval() && schedule.Evaluates(t)) ||
                    (t + 1) % kReadAtLeastEvery == 0;
  DETRAIN_ASSIGN_OR_RETURN(StepResult r, trainer.Step(t, key, state, read));
  if (!r.finite) {
    DETRAIN_RETURN_IF_ERROR(RebuildState(trainer, seed, t, state));
    out.finite = false;
    out.nonfinite = r.nonfinite;
    return out;
  }
  StepRecord& rec = out.record;
  rec.step = t;
  rec.epoch = r.batch.epoch;
  rec.batch = attest::BatchDigest(static_cast<uint64_t>(r.batch.epoch), r.batch.rows,
                                  {r.batch.features.bytes(), r.batch.labels.bytes()});
  rec.key_hi = key.hi;
  rec.key_lo = key.lo;
  rec.learning_rate_bits = BitsOfFloat(r.learning_rate);
  rec.loss_bits = BitsOfFloat(r.loss);
  DETRAIN_ASSIGN_OR_RETURN(attest::StateDigests d, trainer.Digest(state, schedule.policy, pool));
  rec.state = std::move(d.state);
  rec.tensors = std::move(d.tensors);
  if (schedule.TakesRoots(t)) {
    DETRAIN_ASSIGN_OR_RETURN(auto roots, StateRoots(*state, pool));
    rec.params_root = roots.first;
    rec.optimizer_root = roots.second;
  }
  if (trainer.has_eval() && schedule.Evaluates(t)) {
    DETRAIN_ASSIGN_OR_RETURN(EvalResult e, trainer.Evaluate(*state));
    rec.eval_loss_bits = BitsOfFloat(e.loss);
    if (e.accuracy.has_value()) rec.eval_accuracy_bits = BitsOfFloat(*e.accuracy);
  }
  rec.hash = ChainHash(rec, previous);
  return out;
}

// The run's keys with the split key derived, as every run derives them first.
Result<std::unique_ptr<RunKeys>> KeysWithSplit(const frontend::RunConfig& config,
                                               prng::Key* split_key) {
  auto keys = std::make_unique<RunKeys>(config.train.seed, config.train.prng, config.train.shards);
  DETRAIN_ASSIGN_OR_RETURN(*split_key, keys->SplitKey());
  return keys;
}

}  // namespace

Result<std::unique_ptr<RunSession>> RunSession::Open(driver::CompileResult compiled,
                                                     const SessionOptions& options) {
  if (!compiled.config.has_value() || !compiled.config->train.steps.has_value() ||
      compiled.dataset == nullptr) {
    return InvalidArgument("only a .dt program or a run spec can be run (they name their data)");
  }
  std::unique_ptr<RunSession> s(new RunSession());
  s->compiled_ = std::move(compiled);
  frontend::RunConfig& cfg = *s->compiled_.config;
  if (options.steps.has_value()) cfg.train.steps = *options.steps;
  s->schedule_.steps = *cfg.train.steps;
  s->schedule_.checkpoint_every = cfg.train.checkpoint_every;
  s->schedule_.eval_every = cfg.train.eval_every;
  s->schedule_.policy = options.step_digest;
  prng::Key split_key;
  DETRAIN_ASSIGN_OR_RETURN(s->keys_, KeysWithSplit(cfg, &split_key));
  DETRAIN_ASSIGN_OR_RETURN(TrainingData data,
                           TrainingData::Prepare(cfg, *s->compiled_.dataset, split_key));
  s->data_ = std::make_unique<TrainingData>(std::move(data));
  DETRAIN_ASSIGN_OR_RETURN(s->trainer_,
                           Trainer::Create(s->compiled_, s->data_.get(), options.executor));
  DETRAIN_ASSIGN_OR_RETURN(s->stage_chain_,
                           attest::CanonicalJson(driver::StageChainJson(s->compiled_.stages)));
  return s;
}

Result<TrainState> RunSession::InitialState() { return trainer_->InitialState(keys_.get()); }

Result<attest::Digest256> RunSession::Genesis(const TrainState& init, ThreadPool* pool) const {
  DETRAIN_ASSIGN_OR_RETURN(auto roots, StateRoots(init, pool));
  return attest::GenesisHash(stage_chain_, roots.first, roots.second);
}

Status RunSession::DeriveKeysBefore(int64_t t) {
  const int64_t spe = data_->split().steps_per_epoch;
  for (int64_t u = 0; u < t; ++u) DETRAIN_RETURN_IF_ERROR(keys_->BeginStep(u, spe).status());
  return Status::Ok();
}

Result<StepOutcome> RunSession::Step(int64_t t, const attest::Digest256& previous,
                                     TrainState* state, ThreadPool* pool, bool keep) {
  DETRAIN_ASSIGN_OR_RETURN(prng::Key key, keys_->BeginStep(t, data_->split().steps_per_epoch));
  return RecordStep(*trainer_, schedule_, config().train.seed, t, key, previous, state, pool, keep);
}

Result<StepResult> RunSession::StepUnrecorded(int64_t t, TrainState* state,
                                              std::optional<EvalResult>* eval, bool keep) {
  DETRAIN_ASSIGN_OR_RETURN(prng::Key key, keys_->BeginStep(t, data_->split().steps_per_epoch));
  const bool evaluates = trainer_->has_eval() && schedule_.Evaluates(t);
  const bool read =
      !keep || evaluates || t + 1 >= schedule_.steps || (t + 1) % kReadAtLeastEvery == 0;
  DETRAIN_ASSIGN_OR_RETURN(StepResult r, trainer_->Step(t, key, state, read));
  if (!r.finite) DETRAIN_RETURN_IF_ERROR(RebuildState(*trainer_, config().train.seed, t, state));
  eval->reset();
  if (r.finite && trainer_->has_eval() && schedule_.Evaluates(t)) {
    DETRAIN_ASSIGN_OR_RETURN(EvalResult e, trainer_->Evaluate(*state));
    *eval = e;
  }
  return r;
}

Result<std::unique_ptr<Replica>> RunSession::NewReplica(const ExecutorOptions& executor) const {
  std::unique_ptr<Replica> r(new Replica(*this, *data_));
  DETRAIN_ASSIGN_OR_RETURN(r->trainer_, Trainer::Create(compiled_, &r->data_, executor));
  return r;
}

Result<TrainState> Replica::StartState(int64_t k, const RecordedRun& run) {
  if (k == 0) {
    // A fresh lineage (discarded): the init keys are derived as a run derives them.
    prng::Key split_key;
    DETRAIN_ASSIGN_OR_RETURN(std::unique_ptr<RunKeys> keys,
                             KeysWithSplit(session_.config(), &split_key));
    return trainer_->InitialState(keys.get());
  }
  TrainState state = trainer_->StateLayout();
  DETRAIN_RETURN_IF_ERROR(run.LoadCheckpoint(k, &state));
  return state;
}

Result<StepOutcome> Replica::Step(int64_t t, const attest::Digest256& previous, TrainState* state,
                                  ThreadPool* pool, bool keep) {
  const int64_t seed = session_.config().train.seed;
  return RecordStep(*trainer_, session_.schedule(), seed, t, StepKeyOf(seed, t), previous, state,
                    pool, keep);
}

Status Replica::Sync(TrainState* state) { return trainer_->Sync(state); }

Result<TrainState> Replica::StateAfter(
    int64_t t, const RecordedRun& run,
    const std::function<Status(int64_t, const StepOutcome&)>& check,
    const std::function<void(int64_t start)>& before, ThreadPool* pool) {
  int64_t start = 0;
  for (int64_t done : run.Checkpoints()) {
    if (done <= t) start = done;
  }
  if (before) before(start);
  DETRAIN_ASSIGN_OR_RETURN(TrainState state, StartState(start, run));
  for (int64_t u = start; u <= t; ++u) {
    DETRAIN_ASSIGN_OR_RETURN(StepOutcome step, Step(u, run.HashBefore(u), &state, pool));
    DETRAIN_RETURN_IF_ERROR(check(u, step));
  }
  return state;
}

}  // namespace detrain::runtime
