// See trainer.h.
#include "runtime/train/trainer.h"

#include <atomic>
#include <cmath>
#include <cstring>

#include "attest/canonical_json.h"
#include "attest/prng/initializers.h"
#include "compiler/plan/schema.h"
#include "runtime/cuda/cuda_backend.h"
#include "runtime/train/learning_rate.h"

namespace detrain::runtime {
namespace {

using frontend::InitializerKind;
using plan::ParamRole;

Status Initialize(const frontend::InitializerConfig& init, const prng::Key& key,
                  const std::vector<int64_t>& dims, ir::Literal* out) {
  std::span<float> values(reinterpret_cast<float*>(out->mutable_bytes().data()),
                          static_cast<size_t>(out->element_count()));
  prng::Options options;  // initial values never depend on the mode: they take one key each
  switch (init.kind) {
    case InitializerKind::kZeros:
      std::fill(values.begin(), values.end(), 0.0f);
      return Status::Ok();
    case InitializerKind::kOnes:
      std::fill(values.begin(), values.end(), 1.0f);
      return Status::Ok();
    case InitializerKind::kConstant:
      std::fill(values.begin(), values.end(), static_cast<float>(init.value));
      return Status::Ok();
    case InitializerKind::kNormal:
      return prng::NormalInit(key, init.stddev, values, options);
    default:
      return prng::InitializeNamed(frontend::InitializerName(init.kind), key, dims, values,
                                   options);
  }
}

// `options` with the CUDA executable the compile made for a plan stage (prefix "" or "eval-"),
// when it made one: the backend runs it instead of generating the program again.
ExecutorOptions WithCompiled(const ExecutorOptions& options, const driver::CompileResult& compiled,
                             const std::string& prefix) {
  auto it = compiled.cuda.find(prefix);
  if (it == compiled.cuda.end()) return options;
  return cuda::WithCompiledCuda(options, it->second.program, it->second.images);
}

}  // namespace

Result<std::unique_ptr<Trainer>> Trainer::Create(const driver::CompileResult& compiled,
                                                 TrainingData* data,
                                                 const ExecutorOptions& options) {
  if (!compiled.config.has_value() || !compiled.config->train.steps.has_value() ||
      compiled.state.empty()) {
    return InvalidArgument("only a .dt program can be trained (an HLO module has no data)");
  }
  const driver::StageRecord* plan = compiled.stages.Find(driver::kStagePlan);
  const driver::StageRecord* init = compiled.stages.Find(driver::kStageInit);
  if (plan == nullptr || init == nullptr) return Internal("trainer: no plan or init stage");
  std::unique_ptr<Trainer> t(new Trainer());
  t->params_ = compiled.config->params;
  t->learning_rate_ = compiled.config->optimizer.learning_rate;
  t->init_plan_ = init->bytes;
  t->data_ = data;
  // On the CUDA backend, the programs the compile made (stages cuda, ptx and cubin-*).
  ExecutorOptions step_options = WithCompiled(options, compiled, "");
  DETRAIN_ASSIGN_OR_RETURN(t->step_, Executor::Create(plan->bytes, step_options));
  // The state's parameters take the step's results of the same position (the loss is last).
  std::vector<int> carry;
  int next_state = 0;
  for (const plan::v2::EntryParameter& p : t->step_->plan().parameters())
    carry.push_back(plan::IsStateRole(plan::FromPlanRole(p.role())) ? next_state++ : -1);
  if (next_state + 1 == t->step_->plan().outputs_size()) {
    DETRAIN_RETURN_IF_ERROR(t->step_->SetCarry(std::move(carry)));
    t->carried_ = true;
  }
  if (const driver::StageRecord* eval = compiled.stages.Find(driver::kStageEvalPlan)) {
    ExecutorOptions eval_options = WithCompiled(options, compiled, driver::kEvalPrefix);
    eval_options.devices = 1;        // one shard: the validation split is not sharded
    eval_options.cluster = nullptr;  // on rank 0 alone
    DETRAIN_ASSIGN_OR_RETURN(t->eval_, Executor::Create(eval->bytes, eval_options));
    DETRAIN_ASSIGN_OR_RETURN(Batch v, data->Validation());
    t->validation_ = std::move(v);
  }

  t->specs_ = compiled.state;
  t->initial_state_ = compiled.initial_state;  // a run spec's; null for a .dt program
  if (t->initial_state_ != nullptr && t->initial_state_->size() != t->specs_.size()) {
    return Internal("trainer: the initial state does not match the state");
  }
  return t;
}

Isa Trainer::isa() const { return step_->isa(); }
const std::vector<std::string>& Trainer::devices() const { return step_->stats().devices; }

TrainState Trainer::StateLayout() const { return runtime::StateLayout(specs_); }

Result<int64_t> Trainer::Follow() {
  int64_t stop = 0;
  for (;;) {
    DETRAIN_ASSIGN_OR_RETURN(bool ran, step_->Follow(&stop));
    if (!ran) return stop;
  }
}

Result<TrainState> Trainer::InitialState(RunKeys* keys) const {
  if (initial_state_ != nullptr) return *initial_state_;
  DETRAIN_ASSIGN_OR_RETURN(nlohmann::json plan, attest::ParseJson(init_plan_));
  TrainState state = StateLayout();
  // The parameters lead the state, in declaration order (driver::StateSpec).
  if (params_.size() > state.size()) return Internal("init plan: more parameters than state");
  for (size_t index = 0; index < params_.size(); ++index) {
    const frontend::ParamConfig& p = params_[index];
    StateTensor& s = state[index];
    if (s.name != p.name || s.role != ParamRole::kParameter) {
      return Internal("trainer: state entry " + std::to_string(index) + " is not parameter " +
                      p.name);
    }
    DETRAIN_ASSIGN_OR_RETURN(prng::Key key, keys->InitKey(static_cast<uint32_t>(index), p.name));
    const nlohmann::json& recorded = plan["params"][index]["key"];
    if (recorded != nlohmann::json::array({key.hi, key.lo})) {
      return Internal("init plan: the key of " + p.name + " differs from the run's derivation");
    }
    DETRAIN_RETURN_IF_ERROR(Initialize(p.init, key, s.value.shape().dims(), &s.value));
  }
  return state;
}

Result<StepResult> Trainer::Step(int64_t t, const prng::Key& step_key, TrainState* state,
                                 bool read_state) {
  StepResult r;
  r.key = step_key;
  read_state = read_state || !carried_;  // a step that carries nothing leaves nothing to take
  DETRAIN_ASSIGN_OR_RETURN(r.batch, data_->BatchOf(t));
  r.learning_rate = LearningRateAt(learning_rate_, t);
  // The state is passed in place (borrowed) and the results stay on the devices until the loss
  // says whether they replace it: a step copies the state in and out once and allocates none.
  const ir::Literal learning_rate =
      ir::Literal::Scalar<float>(ir::ElementType::kF32, r.learning_rate);
  const ir::Literal key =
      ir::Literal::FromVector<uint32_t>(ir::ElementType::kU32, {2}, {step_key.hi, step_key.lo});
  // Resident state: where the state is the last step's result, bit for bit, and that result lies
  // in the arena where the step reads its parameter, it is not copied in again.
  bool resident = resident_ != 0;
  for (const StateTensor& s : *state) resident = resident && s.resident == resident_;
  const bool stale = IsStale(*state);
  // A stale state is only ever the one the last step left on the devices.
  if (stale && !resident) return Internal("trainer: a stale state that is not the last step's");
  if (!stale) stale_since_ = t;
  resident_ = 0;  // the run below overwrites the arena, whatever its outcome
  std::vector<const ir::Literal*> args;
  size_t next_state = 0;
  for (const plan::v2::EntryParameter& p : step_->plan().parameters()) {
    switch (plan::FromPlanRole(p.role())) {
      case ParamRole::kParameter:
      case ParamRole::kOptimizerState:
      case ParamRole::kStep:
        if (next_state >= state->size()) return Internal("trainer: state too short");
        // A stale tensor is taken from the last step's result, wherever it lies.
        args.push_back(stale || (resident && step_->CarriedInPlace(static_cast<int>(args.size())))
                           ? nullptr
                           : &(*state)[next_state].value);
        ++next_state;
        break;
      case ParamRole::kLearningRate:
        args.push_back(&learning_rate);
        break;
      case ParamRole::kBatch:
        args.push_back(&r.batch.features);
        break;
      case ParamRole::kLabels:
        args.push_back(&r.batch.labels);
        break;
      case ParamRole::kKey:
        args.push_back(&key);
        break;
      case ParamRole::kInput:
        return Internal("trainer: the train step has an untyped input " + p.name());
    }
  }
  const size_t results = static_cast<size_t>(step_->plan().outputs_size());
  if (results != state->size() + 1) {
    return Internal("trainer: the train step returns " + std::to_string(results) +
                    " arrays for a state of " + std::to_string(state->size()));
  }
  DETRAIN_RETURN_IF_ERROR(step_->RunKeep(args));
  ir::Literal loss;
  DETRAIN_RETURN_IF_ERROR(step_->ReadResult(static_cast<int>(state->size()), &loss));
  r.loss = loss.Get<float>(0);
  if (!std::isfinite(r.loss)) {
    r.finite = false;
    r.nonfinite = std::string("loss is ") + (std::isnan(r.loss) ? "NaN" : "infinite");
    ir::Literal lit;  // each result in turn: the state stays as it was
    for (size_t i = 0; i < state->size(); ++i) {
      DETRAIN_RETURN_IF_ERROR(step_->ReadResult(static_cast<int>(i), &lit));
      if (lit.shape().type() != ir::ElementType::kF32) continue;
      int64_t at = -1;
      for (int64_t e = 0; e < lit.element_count() && at < 0; ++e) {
        if (!std::isfinite(lit.Get<float>(e))) at = e;
      }
      if (at >= 0) {
        r.nonfinite +=
            "; first non-finite result: " + (*state)[i].name + " element " + std::to_string(at);
        break;
      }
    }
    return r;
  }
  if (read_state) {
    for (size_t i = 0; i < state->size(); ++i)
      DETRAIN_RETURN_IF_ERROR(step_->ReadResult(static_cast<int>(i), &(*state)[i].value));
  }
  // A tag no other step of any trainer in this process has used.
  static std::atomic<uint64_t> tags{0};
  resident_ = tags.fetch_add(1, std::memory_order_relaxed) + 1;
  for (StateTensor& s : *state) {
    s.resident = resident_;
    s.stale = !read_state;
  }
  return r;
}

Status Trainer::Sync(TrainState* state) {
  if (!IsStale(*state)) return Status::Ok();
  for (const StateTensor& s : *state) {
    if (resident_ == 0 || s.resident != resident_)
      return Internal("trainer: a stale state that is not the last step's");
  }
  for (size_t i = 0; i < state->size(); ++i) {
    DETRAIN_RETURN_IF_ERROR(step_->ReadResult(static_cast<int>(i), &(*state)[i].value));
    (*state)[i].stale = false;
  }
  return Status::Ok();
}

Result<attest::StateDigests> Trainer::Digest(TrainState* state, attest::DigestPolicy policy,
                                             ThreadPool* pool) {
  bool stale = false;
  for (const StateTensor& s : *state) stale = stale || (s.stale && s.resident == resident_);
  if (!stale || policy != attest::DigestPolicy::kXxh3Chunked) {
    DETRAIN_RETURN_IF_ERROR(Sync(state));
    return attest::DigestState(StateViews(*state), policy, pool);
  }
  // Where the state lies: each tensor's digest on the devices, the state's over them here.
  const std::vector<attest::TensorView> views = StateViews(*state);
  std::vector<int> indices;
  std::vector<std::string> prefixes;
  for (size_t i = 0; i < views.size(); ++i) {
    indices.push_back(static_cast<int>(i));
    DETRAIN_ASSIGN_OR_RETURN(std::string prefix, attest::ChunkedTensorPrefix(views[i]));
    prefixes.push_back(std::move(prefix));
  }
  std::string digests;
  DETRAIN_RETURN_IF_ERROR(step_->DigestResults(indices, prefixes, &digests));
  if (digests.size() != 16 * views.size()) return Internal("trainer: digests of the wrong size");
  std::vector<attest::Digest128> each(views.size());
  for (size_t i = 0; i < views.size(); ++i)
    std::memcpy(each[i].data(), digests.data() + 16 * i, 16);
  return attest::Xxh3StateOf(views, each);
}

Result<EvalResult> Trainer::Evaluate(const TrainState& state) {
  if (eval_ == nullptr) return FailedPrecondition("the program has no validation split");
  if (IsStale(state)) return Internal("trainer: evaluation of a stale state (Trainer::Sync first)");
  std::vector<const ir::Literal*> args;  // borrowed: no copy of the parameters
  for (const StateTensor& s : state) {
    if (s.role == ParamRole::kParameter) args.push_back(&s.value);
  }
  args.push_back(&validation_->features);
  args.push_back(&validation_->labels);
  std::vector<ir::Literal> out;
  DETRAIN_RETURN_IF_ERROR(eval_->RunInto(args, &out));
  EvalResult r;
  if (out.empty()) return Internal("eval: no results");
  r.loss = out[0].Get<float>(0);
  if (out.size() > 1) r.accuracy = out[1].Get<float>(0);
  return r;
}

}  // namespace detrain::runtime
