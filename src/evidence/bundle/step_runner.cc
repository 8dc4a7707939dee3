// See step_runner.h.
#include "evidence/bundle/step_runner.h"

namespace detrain::bundle {

bool StepSchedule::TakesRoots(int64_t t) const { return t + 1 == steps || Checkpoints(t); }
bool StepSchedule::Checkpoints(int64_t t) const {
  return checkpoint_every > 0 && (t + 1) % checkpoint_every == 0 && t + 1 < steps;
}
bool StepSchedule::Evaluates(int64_t t) const {
  return t + 1 == steps || (eval_every > 0 && (t + 1) % eval_every == 0);
}

Result<std::pair<attest::Digest256, attest::Digest256>> StateRoots(const runtime::TrainState& s,
                                                                   ThreadPool* pool) {
  DETRAIN_ASSIGN_OR_RETURN(attest::Digest256 p, attest::StateSha256Root(ParamViews(s), pool));
  DETRAIN_ASSIGN_OR_RETURN(attest::Digest256 o, attest::StateSha256Root(OptimizerViews(s), pool));
  return std::make_pair(p, o);
}

Result<attest::Digest256> Genesis(std::string_view stage_chain, const runtime::TrainState& init,
                                  ThreadPool* pool) {
  DETRAIN_ASSIGN_OR_RETURN(auto roots, StateRoots(init, pool));
  return attest::GenesisHash(stage_chain, roots.first, roots.second);
}

Result<StepOutcome> RunStep(runtime::Trainer& trainer, const StepSchedule& schedule, int64_t t,
                            const prng::Key& key, const attest::Digest256& previous,
                            runtime::TrainState* state, ThreadPool* pool) {
  StepOutcome out;
  DETRAIN_ASSIGN_OR_RETURN(runtime::StepResult r, trainer.Step(t, key, state));
  if (!r.finite) {
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
  DETRAIN_ASSIGN_OR_RETURN(attest::StateDigests d,
                           attest::DigestState(StateViews(*state), schedule.policy, pool));
  rec.state = std::move(d.state);
  rec.tensors = std::move(d.tensors);
  if (schedule.TakesRoots(t)) {
    DETRAIN_ASSIGN_OR_RETURN(auto roots, StateRoots(*state, pool));
    rec.params_root = roots.first;
    rec.optimizer_root = roots.second;
  }
  if (trainer.has_eval() && schedule.Evaluates(t)) {
    DETRAIN_ASSIGN_OR_RETURN(runtime::EvalResult e, trainer.Evaluate(*state));
    rec.eval_loss_bits = BitsOfFloat(e.loss);
    if (e.accuracy.has_value()) rec.eval_accuracy_bits = BitsOfFloat(*e.accuracy);
  }
  rec.hash = ChainHash(rec, previous);
  return out;
}

}  // namespace detrain::bundle
