// The .dt path of the compile driver (compile.h): parse and check the program, read and check
// its data, resolve the configuration, and lower stages 1, 2, init and eval.
#include "attest/canonical_json.h"
#include "attest/prng/jax_random.h"
#include "base/checked.h"
#include "base/file_io.h"
#include "compiler/ir/printer.h"
#include "compiler/ir/verifier.h"
#include "driver/compile_internal.h"
#include "frontend/check.h"
#include "frontend/data.h"
#include "frontend/parser.h"
#include "frontend/train_step.h"

namespace detrain::driver {
namespace {

using frontend::CheckedProgram;
using frontend::RunConfig;

constexpr char kSourceGraphHeader[] = "// detrain.source-graph.v1\n// config ";
constexpr char kInitPlanFormat[] = "detrain.init-plan.v1";

std::string DimsText(const std::vector<int64_t>& dims) {
  std::string s;
  for (int64_t d : dims) s += ", " + std::to_string(d);
  return s;
}

}  // namespace

std::string DirOf(const std::string& path) {
  size_t slash = path.rfind('/');
  return slash == std::string::npos ? "." : path.substr(0, slash);
}

// LoadProgramData with the files of `data_files` read from where it says; the digests keep the
// program's spelling of each path.
Result<frontend::Dataset> LoadData(const frontend::DataConfig& data, const std::string& base_dir,
                                   frontend::LabelType labels,
                                   const std::map<std::string, std::string>& data_files) {
  frontend::DataConfig redirected = data;
  std::vector<std::pair<std::string, std::string>> renamed;  // (read from, as written)
  for (std::string* p : {&redirected.path, &redirected.features, &redirected.labels}) {
    auto it = data_files.find(*p);
    if (p->empty() || it == data_files.end()) continue;
    renamed.emplace_back(it->second, *p);
    *p = it->second;
  }
  DETRAIN_ASSIGN_OR_RETURN(frontend::Dataset ds,
                           frontend::LoadProgramData(redirected, base_dir, labels));
  for (auto& [file, digest] : ds.file_sha256) {
    for (const auto& [from, written] : renamed) {
      if (file == from) file = written;
    }
  }
  return ds;
}

namespace {

// Checks that the data's example shapes are what the loss takes: features, then labels.
Status CheckDataShapes(const frontend::SourceFile& src, const frontend::FuncDecl& loss,
                       const frontend::Dataset& ds) {
  std::vector<const frontend::FuncArg*> in = frontend::BatchInputs(loss);
  if (in.size() != 2) {
    return src.Error(loss.name_range,
                     "loss takes " + std::to_string(in.size()) +
                         " batch inputs; the data source provides two (features, labels)");
  }
  const std::vector<int64_t>* want[2] = {&ds.x_dims, &ds.y_dims};
  const char* what[2] = {"features", "labels"};
  for (int i = 0; i < 2; ++i) {
    const frontend::TypeExpr& t = in[static_cast<size_t>(i)]->type;
    std::vector<int64_t> dims;
    for (size_t d = 1; d < t.dims.size(); ++d) dims.push_back(t.dims[d].size);
    bool x_s32 = i == 0 && !ds.x_s32.empty();
    bool dtype_ok = i == 1 || (t.dtype == "s32") == x_s32;
    if (dims != *want[i] || !dtype_ok) {
      std::string dtype = i == 0 && x_s32 ? "s32" : i == 0 ? "f32" : t.dtype;
      return src.Error(t.range, std::string("the data source gives ") + what[i] + " of shape [B" +
                                    DimsText(*want[i]) + "] (" + dtype + "), but loss takes " +
                                    std::string(src.Slice(t.range)));
    }
  }
  return Status::Ok();
}

// The split sizes, steps from epochs, and the data files' digests, into the configuration.
Status ResolveData(const CheckedProgram& p, const frontend::Dataset& ds, RunConfig* cfg) {
  frontend::ResolvedData r;
  r.rows = ds.rows;
  r.validation_rows = static_cast<int64_t>(cfg->data.validation * static_cast<double>(ds.rows));
  r.train_rows = ds.rows - r.validation_rows;
  const int64_t batch = cfg->train.batch;
  if (r.train_rows < batch) {
    return p.source->Error(p.program->data[0].source->range,
                           "the training split has " + std::to_string(r.train_rows) +
                               " rows, fewer than one batch of " + std::to_string(batch));
  }
  int64_t steps = 0;
  if (cfg->train.epochs.has_value() &&
      !CheckedMul(*cfg->train.epochs, r.train_rows / batch, &steps)) {
    return p.source->Error(p.program->data[0].source->range,
                           "epochs = " + std::to_string(*cfg->train.epochs) + " of " +
                               std::to_string(r.train_rows / batch) +
                               " steps each is more steps than int64 can count");
  }
  if (cfg->train.epochs.has_value() && steps > frontend::kMaxSteps) {
    return p.source->Error(
        p.program->data[0].source->range,
        "epochs = " + std::to_string(*cfg->train.epochs) + " gives " + std::to_string(steps) +
            " steps, more than the most a run may take, " + std::to_string(frontend::kMaxSteps));
  }
  if (cfg->train.epochs.has_value()) cfg->train.steps = steps;
  for (const auto& [file, digest] : ds.file_sha256) r.files.push_back({file, digest});
  cfg->resolved = std::move(r);
  return Status::Ok();
}

// The parameter initialization plan: for each parameter its initializer and its key,
// fold_in(fold_in(key(seed), 0), i) (docs/language.md §Keys), as canonical JSON.
Result<std::string> InitPlan(const RunConfig& cfg) {
  const int64_t seed = cfg.train.seed;
  prng::Key init = prng::FoldIn(prng::KeyFromSeed(seed), 0);
  nlohmann::json params = nlohmann::json::array();
  uint32_t i = 0;
  for (const frontend::ParamConfig& p : cfg.params) {
    prng::Key k = prng::FoldIn(init, i);
    params.push_back({{"name", p.name},
                      {"type", p.type},
                      {"initializer", frontend::InitializerJson(p.init)},
                      {"key", {k.hi, k.lo}},
                      {"key_path", "fold_in(fold_in(key(" + std::to_string(seed) + "), 0), " +
                                       std::to_string(i) + ")"}});
    ++i;
  }
  nlohmann::json plan = {{"format", kInitPlanFormat},
                         {"seed", seed},
                         {"prng", frontend::PrngModeName(cfg.train.prng)},
                         {"params", params}};
  DETRAIN_ASSIGN_OR_RETURN(std::string text, attest::CanonicalJson(plan));
  return text + "\n";
}

// A lowered module's canonical text, verified first (a failure is a lowering bug).
Result<std::string> VerifiedText(const Result<std::unique_ptr<ir::Module>>& module,
                                 const char* what) {
  if (!module.ok()) return module.status();
  DETRAIN_RETURN_IF_ERROR(ir::VerifyModule(**module).WithContext(std::string("internal error: ") +
                                                                 what + " fails verification"));
  return ir::PrintModule(**module);
}

// The state the train step carries: its entry parameters of the state roles, in entry order
// (frontend/train_step.h: the parameters in declaration order, then `slots` optimizer slots per
// parameter, parameter-major, then the update counter).
Result<std::vector<StateSpec>> StateOf(const ir::Module& step,
                                       const plan::EntrySignature& signature, int64_t slots) {
  const std::vector<ir::Instruction*> params = step.entry()->Parameters();
  if (params.size() != signature.roles.size()) {
    return Internal("stage 2 has " + std::to_string(params.size()) + " parameters, its signature " +
                    std::to_string(signature.roles.size()));
  }
  std::vector<StateSpec> state;
  int64_t parameters = 0, slot = 0;
  for (size_t i = 0; i < params.size(); ++i) {
    const plan::ParamRole role = signature.roles[i];
    StateSpec s{params[i]->name, role, params[i]->shape, -1};
    if (role == plan::ParamRole::kParameter) {
      ++parameters;
    } else if (role == plan::ParamRole::kOptimizerState) {
      s.owner = slot++ / slots;
      if (s.owner >= parameters) return Internal("stage 2: an optimizer slot without a parameter");
    } else if (role != plan::ParamRole::kStep) {
      continue;
    }
    state.push_back(std::move(s));
  }
  return state;
}

// Stages 1, 2, init and eval, from the checked program with its resolved configuration.
Status LowerStages(const CheckedProgram& checked, CompileResult* out) {
  StageTable& t = out->stages;
  DETRAIN_ASSIGN_OR_RETURN(std::string header, frontend::CanonicalRunConfig(checked.config));
  DETRAIN_ASSIGN_OR_RETURN(std::string source,
                           VerifiedText(frontend::LowerSourceGraph(checked), "stage 1"));
  DETRAIN_RETURN_IF_ERROR(t.Add(kStageSource, kSourceGraphHeader + header + "\n" + source,
                                TransformOf("lower-source-graph", kStageProgram),
                                ProgramKind::kDt));
  Result<std::unique_ptr<ir::Module>> lowered = frontend::LowerTrainStep(checked);
  DETRAIN_ASSIGN_OR_RETURN(std::string step, VerifiedText(lowered, "stage 2"));
  DETRAIN_ASSIGN_OR_RETURN(out->state,
                           StateOf(**lowered, frontend::TrainStepSignature(checked),
                                   frontend::OptimizerSlots(checked.config.optimizer.kind)));
  DETRAIN_RETURN_IF_ERROR(t.Add(kStageHlo, std::move(step),
                                TransformOf("lower-train-step", kStageSource), ProgramKind::kDt));
  DETRAIN_ASSIGN_OR_RETURN(std::string init, InitPlan(checked.config));
  DETRAIN_RETURN_IF_ERROR(
      t.Add(kStageInit, std::move(init), TransformOf("init-plan", kStageSource), ProgramKind::kDt));
  const int64_t rows = checked.config.resolved->validation_rows;
  if (rows > 0) {
    DETRAIN_ASSIGN_OR_RETURN(std::string eval,
                             VerifiedText(frontend::LowerEval(checked, rows), "the eval program"));
    DETRAIN_ASSIGN_OR_RETURN(std::string options, OptionsJson({{"rows", rows}}));
    DETRAIN_RETURN_IF_ERROR(t.Add(kStageEval, std::move(eval),
                                  TransformOf("lower-eval", kStageProgram, options),
                                  ProgramKind::kDt));
  }
  return Status::Ok();
}

}  // namespace

Status CompileDtProgram(const std::string& path, const CompileOptions& options,
                        CompileResult* out) {
  DETRAIN_ASSIGN_OR_RETURN(std::string bytes, ReadFile(path));
  frontend::SourceFile src(path, bytes);
  DETRAIN_ASSIGN_OR_RETURN(frontend::Program program, frontend::Parse(src));
  DETRAIN_ASSIGN_OR_RETURN(CheckedProgram checked, frontend::Check(src, program));

  // The data: shapes must match the loss; sizes resolve the split and epochs.
  std::vector<const frontend::FuncArg*> in = frontend::BatchInputs(*checked.loss);
  frontend::LabelType labels = !in.empty() && in.back()->type.dtype == "s32"
                                   ? frontend::LabelType::kS32
                                   : frontend::LabelType::kF32;
  DETRAIN_ASSIGN_OR_RETURN(frontend::Dataset ds,
                           LoadData(checked.config.data, DirOf(path), labels, options.data_files));
  DETRAIN_RETURN_IF_ERROR(CheckDataShapes(src, *checked.loss, ds));
  DETRAIN_RETURN_IF_ERROR(ResolveData(checked, ds, &checked.config));

  out->program_kind = ProgramKind::kDt;
  DETRAIN_RETURN_IF_ERROR(out->stages.Add(kStageProgram, std::move(bytes), {}, ProgramKind::kDt));
  DETRAIN_RETURN_IF_ERROR(LowerStages(checked, out));
  out->signature = frontend::TrainStepSignature(checked);
  out->config = checked.config;
  out->dataset = std::make_shared<const frontend::Dataset>(std::move(ds));
  return Status::Ok();
}

}  // namespace detrain::driver
