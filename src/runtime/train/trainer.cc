// See trainer.h.
#include "runtime/train/trainer.h"

#include <charconv>
#include <cmath>
#include <cstring>

#include "attest/canonical_json.h"
#include "attest/prng/initializers.h"
#include "compiler/plan/schema.h"
#include "frontend/schedule.h"
#include "runtime/cuda/cuda_backend.h"

namespace detrain::runtime {
namespace {

using frontend::InitializerKind;
using plan::ParamRole;

// "f32[30,64]" -> {30, 64}; "f32[]" -> {}.
Result<std::vector<int64_t>> DimsOfType(const std::string& type) {
  size_t open = type.find('['), close = type.rfind(']');
  if (type.rfind("f32[", 0) != 0 || close != type.size() - 1) {
    return InvalidArgument("parameter type " + type + ": expected f32[...]");
  }
  std::vector<int64_t> dims;
  std::string_view body(type.data() + open + 1, close - open - 1);
  while (!body.empty()) {
    size_t comma = body.find(',');
    std::string_view d = body.substr(0, comma);
    int64_t v = 0;
    auto r = std::from_chars(d.data(), d.data() + d.size(), v);
    if (r.ec != std::errc() || r.ptr != d.data() + d.size() || v < 0) {
      return InvalidArgument("parameter type " + type + ": bad dimension");
    }
    dims.push_back(v);
    body = comma == std::string_view::npos ? std::string_view() : body.substr(comma + 1);
  }
  return dims;
}

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

std::string DTypeName(const ir::Literal& literal) {
  return std::string(ir::ElementTypeName(literal.shape().type()));
}

Result<std::unique_ptr<Trainer>> Trainer::Create(const driver::CompileResult& compiled,
                                                 TrainingData* data,
                                                 const ExecutorOptions& options) {
  if (!compiled.config.has_value() || !compiled.config->train.steps.has_value()) {
    return InvalidArgument("only a .dt program can be trained (an HLO module has no data)");
  }
  const driver::StageRecord* plan = compiled.stages.Find(driver::kStagePlan);
  const driver::StageRecord* init = compiled.stages.Find(driver::kStageInit);
  if (plan == nullptr || init == nullptr) return Internal("trainer: no plan or init stage");
  std::unique_ptr<Trainer> t(new Trainer());
  t->config_ = *compiled.config;
  t->init_plan_ = init->bytes;
  t->data_ = data;
  // On the CUDA backend, the programs the compile made (stages cuda, ptx and cubin-*).
  ExecutorOptions step_options = WithCompiled(options, compiled, "");
  DETRAIN_ASSIGN_OR_RETURN(t->step_, Executor::Create(plan->bytes, step_options));
  if (const driver::StageRecord* eval = compiled.stages.Find(driver::kStageEvalPlan)) {
    ExecutorOptions eval_options = WithCompiled(options, compiled, driver::kEvalPrefix);
    eval_options.devices = 1;        // one shard: the validation split is not sharded
    eval_options.cluster = nullptr;  // on rank 0 alone
    DETRAIN_ASSIGN_OR_RETURN(t->eval_, Executor::Create(eval->bytes, eval_options));
    DETRAIN_ASSIGN_OR_RETURN(Batch v, data->Validation());
    t->validation_ = std::move(v);
  }

  if (compiled.initial_state != nullptr) {
    // A run spec: the state is the initial state's tensors, in entry order (the plan's state
    // parameters are the spec's state entries, in the same order).
    t->initial_state_ = compiled.initial_state;
    for (const driver::InitialTensor& s : *compiled.initial_state) {
      t->layout_.push_back({s.name, s.role, ir::Literal(s.value.shape())});
    }
    return t;
  }
  // The state layout, from the plan's entry signature and the parameters' declared types.
  std::map<std::string, std::vector<int64_t>> dims;
  for (const frontend::ParamConfig& p : t->config_.params) {
    DETRAIN_ASSIGN_OR_RETURN(dims[p.name], DimsOfType(p.type));
  }
  for (const plan::v2::EntryParameter& p : t->step_->plan().parameters()) {
    ParamRole role = plan::FromPlanRole(p.role());
    StateTensor s{p.name(), role, {}};
    if (role == ParamRole::kParameter || role == ParamRole::kOptimizerState) {
      std::string owner = p.name();
      if (role == ParamRole::kOptimizerState) owner = owner.substr(0, owner.rfind("_s"));
      auto it = dims.find(owner);
      if (it == dims.end()) return Internal("trainer: no parameter '" + owner + "'");
      s.value = ir::Literal(ir::Shape(ir::ElementType::kF32, it->second));
    } else if (role == ParamRole::kStep) {
      s.value = ir::Literal(ir::Shape(ir::ElementType::kS32, {}));
    } else {
      continue;
    }
    t->layout_.push_back(std::move(s));
  }
  return t;
}

Isa Trainer::isa() const { return step_->isa(); }
const std::vector<std::string>& Trainer::devices() const { return step_->stats().devices; }

TrainState Trainer::StateLayout() const { return layout_; }

Result<int64_t> Trainer::Follow() {
  int64_t stop = 0;
  for (;;) {
    DETRAIN_ASSIGN_OR_RETURN(bool ran, step_->Follow(&stop));
    if (!ran) return stop;
  }
}

Result<TrainState> Trainer::InitialState(RunKeys* keys) const {
  if (initial_state_ != nullptr) {
    TrainState state = layout_;
    for (size_t i = 0; i < state.size(); ++i) state[i].value = (*initial_state_)[i].value;
    return state;
  }
  DETRAIN_ASSIGN_OR_RETURN(nlohmann::json plan, attest::ParseJson(init_plan_));
  TrainState state = layout_;
  uint32_t index = 0;
  for (const frontend::ParamConfig& p : config_.params) {
    DETRAIN_ASSIGN_OR_RETURN(prng::Key key, keys->InitKey(index, p.name));
    const nlohmann::json& recorded = plan["params"][index]["key"];
    if (recorded != nlohmann::json::array({key.hi, key.lo})) {
      return Internal("init plan: the key of " + p.name + " differs from the run's derivation");
    }
    ++index;
    for (StateTensor& s : state) {
      if (s.name != p.name) continue;
      DETRAIN_ASSIGN_OR_RETURN(std::vector<int64_t> dims, DimsOfType(p.type));
      DETRAIN_RETURN_IF_ERROR(Initialize(p.init, key, dims, &s.value));
    }
  }
  return state;
}

Result<StepResult> Trainer::Step(int64_t t, const prng::Key& step_key, TrainState* state) {
  StepResult r;
  r.key = step_key;
  DETRAIN_ASSIGN_OR_RETURN(r.batch, data_->BatchOf(t));
  r.learning_rate = frontend::LearningRateAt(config_.optimizer.learning_rate, t);
  // The state is passed in place (borrowed) and the results land in literals kept between
  // steps, swapped into the state afterwards: a step copies and allocates no state.
  const ir::Literal learning_rate =
      ir::Literal::Scalar<float>(ir::ElementType::kF32, r.learning_rate);
  const ir::Literal key =
      ir::Literal::FromVector<uint32_t>(ir::ElementType::kU32, {2}, {step_key.hi, step_key.lo});
  std::vector<const ir::Literal*> args;
  size_t next_state = 0;
  for (const plan::v2::EntryParameter& p : step_->plan().parameters()) {
    switch (plan::FromPlanRole(p.role())) {
      case ParamRole::kParameter:
      case ParamRole::kOptimizerState:
      case ParamRole::kStep:
        if (next_state >= state->size()) return Internal("trainer: state too short");
        args.push_back(&(*state)[next_state++].value);
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
  std::vector<ir::Literal>& results = step_results_;
  DETRAIN_RETURN_IF_ERROR(step_->RunInto(args, &results));
  if (results.size() != state->size() + 1) {
    return Internal("trainer: the train step returned " + std::to_string(results.size()) +
                    " arrays for a state of " + std::to_string(state->size()));
  }
  r.loss = results.back().Get<float>(0);
  if (!std::isfinite(r.loss)) {
    r.finite = false;
    r.nonfinite = std::string("loss is ") + (std::isnan(r.loss) ? "NaN" : "infinite");
    for (size_t i = 0; i < state->size(); ++i) {
      const ir::Literal& lit = results[i];
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
  for (size_t i = 0; i < state->size(); ++i) std::swap((*state)[i].value, results[i]);
  return r;
}

Result<EvalResult> Trainer::Evaluate(const TrainState& state) {
  if (eval_ == nullptr) return FailedPrecondition("the program has no validation split");
  std::vector<ir::Literal> args;
  for (const StateTensor& s : state) {
    if (s.role == ParamRole::kParameter) args.push_back(s.value);
  }
  args.push_back(validation_->features);
  args.push_back(validation_->labels);
  DETRAIN_ASSIGN_OR_RETURN(std::vector<std::vector<ir::Literal>> out, eval_->Run({args}));
  EvalResult r;
  if (out[0].empty()) return Internal("eval: no results");
  r.loss = out[0][0].Get<float>(0);
  if (out[0].size() > 1) r.accuracy = out[0][1].Get<float>(0);
  return r;
}

}  // namespace detrain::runtime
