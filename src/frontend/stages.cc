// See stages.h.
#include "frontend/stages.h"

#include "attest/canonical_json.h"
#include "attest/prng/jax_random.h"
#include "base/file_io.h"
#include "compiler/codegen/cpu/plan.h"
#include "compiler/ir/printer.h"
#include "compiler/passes/pipeline.h"
#include "compiler/ir/verifier.h"
#include "frontend/data.h"
#include "frontend/parser.h"
#include "frontend/train_step.h"

namespace detrain::frontend {
namespace {

std::string DirOf(const std::string& path) {
  size_t slash = path.rfind('/');
  return slash == std::string::npos ? "." : path.substr(0, slash);
}

// The batch inputs of the loss (all arguments but a trailing key).
std::vector<const FuncArg*> BatchInputs(const FuncDecl& loss) {
  std::vector<const FuncArg*> in;
  for (const FuncArg& a : loss.args) {
    if (!a.type.is_key) in.push_back(&a);
  }
  return in;
}

std::string DimsText(const std::vector<int64_t>& dims) {
  std::string s;
  for (int64_t d : dims) s += ", " + std::to_string(d);
  return s;
}

// Checks that the data's example shapes are what the loss takes.
Status CheckDataShapes(const SourceFile& src, const FuncDecl& loss, const Dataset& ds) {
  std::vector<const FuncArg*> in = BatchInputs(loss);
  if (in.size() != 2) {
    return src.Error(loss.name_range, "loss takes " + std::to_string(in.size()) +
                                          " batch inputs; the data source provides two (features, labels)");
  }
  const std::vector<int64_t>* want[2] = {&ds.x_dims, &ds.y_dims};
  const char* what[2] = {"features", "labels"};
  for (int i = 0; i < 2; ++i) {
    const TypeExpr& t = in[static_cast<size_t>(i)]->type;
    std::vector<int64_t> dims;
    for (size_t d = 1; d < t.dims.size(); ++d) dims.push_back(t.dims[d].size);
    bool x_s32 = i == 0 && !ds.x_s32.empty();
    bool dtype_ok = i == 1 || (t.dtype == "s32") == x_s32;
    if (dims != *want[i] || !dtype_ok) {
      return src.Error(t.range, std::string("the data source gives ") + what[i] + " of shape [B" +
                                    DimsText(*want[i]) + "] (" + (i == 0 && x_s32 ? "s32" : i == 0 ? "f32" : t.dtype) +
                                    "), but loss takes " + std::string(src.Slice(t.range)));
    }
  }
  return Status::Ok();
}

// The parameter initialization plan: for each parameter its initializer and its key,
// fold_in(fold_in(key(seed), 0), i) (docs/language.md §Keys), as canonical JSON. The runtime
// draws the values with src/attest/prng's JAX-compatible initializers.
Result<std::string> InitPlan(const nlohmann::json& cfg) {
  int64_t seed = cfg["train"]["seed"].get<int64_t>();
  prng::Key init = prng::FoldIn(prng::KeyFromSeed(seed), 0);
  nlohmann::json params = nlohmann::json::array();
  uint32_t i = 0;
  for (const auto& p : cfg["params"]) {
    prng::Key k = prng::FoldIn(init, i);
    params.push_back({{"name", p["name"]},
                      {"type", p["type"]},
                      {"initializer", p["init"]},
                      {"key", {k.hi, k.lo}},
                      {"key_path", "fold_in(fold_in(key(" + std::to_string(seed) + "), 0), " + std::to_string(i) + ")"}});
    ++i;
  }
  nlohmann::json plan = {{"format", "detrain.init-plan.v1"}, {"seed", seed}, {"prng", cfg["train"]["prng"]}, {"params", params}};
  DETRAIN_ASSIGN_OR_RETURN(std::string text, attest::CanonicalJson(plan));
  return text + "\n";
}

}  // namespace

const Stage* CompiledProgram::Find(const std::string& name) const {
  for (const Stage& s : stages) {
    if (s.name == name) return &s;
  }
  return nullptr;
}

Result<CompiledProgram> CompileToHlo(const std::string& path) {
  DETRAIN_ASSIGN_OR_RETURN(std::string bytes, ReadFile(path));
  SourceFile src(path, bytes);
  DETRAIN_ASSIGN_OR_RETURN(Program program, Parse(src));
  DETRAIN_ASSIGN_OR_RETURN(CheckedProgram checked, Check(src, program));

  // The data: shapes must match the loss; sizes resolve the split and epochs.
  std::vector<const FuncArg*> in = BatchInputs(*checked.loss);
  LabelType labels = !in.empty() && in.back()->type.dtype == "s32" ? LabelType::kS32 : LabelType::kF32;
  DETRAIN_ASSIGN_OR_RETURN(Dataset ds, LoadProgramData(checked.config["data"], DirOf(path), labels));
  DETRAIN_RETURN_IF_ERROR(CheckDataShapes(src, *checked.loss, ds));
  nlohmann::json& cfg = checked.config;
  int64_t validation_rows = static_cast<int64_t>(cfg["data"]["validation"].get<double>() * static_cast<double>(ds.rows));
  int64_t train_rows = ds.rows - validation_rows;
  int64_t batch = cfg["train"]["batch"].get<int64_t>();
  if (train_rows < batch) {
    return src.Error(program.data[0].source->range, "the training split has " + std::to_string(train_rows) +
                                                        " rows, fewer than one batch of " + std::to_string(batch));
  }
  if (cfg["train"].contains("epochs")) {
    cfg["train"]["steps"] = cfg["train"]["epochs"].get<int64_t>() * (train_rows / batch);
  }
  nlohmann::json files = nlohmann::json::array();
  for (const auto& [file, digest] : ds.file_sha256) files.push_back({{"path", file}, {"sha256", digest}});
  cfg["resolved"] = {{"rows", ds.rows}, {"train_rows", train_rows}, {"validation_rows", validation_rows}, {"files", files}};

  CompiledProgram out;
  out.config = cfg;
  out.stages.push_back({"program", bytes});
  DETRAIN_ASSIGN_OR_RETURN(std::string header, attest::CanonicalJson(cfg));
  DETRAIN_ASSIGN_OR_RETURN(auto source, LowerSourceGraph(checked));
  DETRAIN_RETURN_IF_ERROR(ir::VerifyModule(*source).WithContext("internal error: stage 1 fails verification"));
  DETRAIN_ASSIGN_OR_RETURN(std::string source_text, ir::PrintModule(*source));
  out.stages.push_back({"source", "// detrain.source-graph.v1\n// config " + header + "\n" + source_text});
  DETRAIN_ASSIGN_OR_RETURN(auto step, LowerTrainStep(checked));
  DETRAIN_RETURN_IF_ERROR(ir::VerifyModule(*step).WithContext("internal error: stage 2 fails verification"));
  DETRAIN_ASSIGN_OR_RETURN(std::string step_text, ir::PrintModule(*step));
  out.stages.push_back({"hlo", std::move(step_text)});
  DETRAIN_ASSIGN_OR_RETURN(std::string init, InitPlan(cfg));
  out.stages.push_back({"init", std::move(init)});
  if (validation_rows > 0) {
    DETRAIN_ASSIGN_OR_RETURN(auto eval, LowerEval(checked, validation_rows));
    DETRAIN_RETURN_IF_ERROR(ir::VerifyModule(*eval).WithContext("internal error: the eval program fails verification"));
    DETRAIN_ASSIGN_OR_RETURN(std::string eval_text, ir::PrintModule(*eval));
    out.stages.push_back({"eval", std::move(eval_text)});
  }
  return out;
}

namespace {

bool EndsWith(const std::string& s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// HLO text: stage 0 is the file, stage 2 its canonical form. Errors carry "line:col: ".
Result<CompiledProgram> CompileHloFile(const std::string& path) {
  DETRAIN_ASSIGN_OR_RETURN(std::string bytes, ReadFile(path));
  Result<std::unique_ptr<ir::Module>> module = ir::ParseAndVerify(bytes);
  if (!module.ok()) return Status(module.status().code(), path + ":" + module.status().message());
  DETRAIN_ASSIGN_OR_RETURN(std::string canonical, ir::PrintModule(**module));
  CompiledProgram out;
  out.stages.push_back({"program", std::move(bytes)});
  out.stages.push_back({"hlo", std::move(canonical)});
  return out;
}

// Stages 3 and 4 from stage 2.
Status AppendBackendStages(const CompileOptions& options, CompiledProgram* out) {
  DETRAIN_ASSIGN_OR_RETURN(std::unique_ptr<ir::Module> hlo, ir::ParseAndVerify(out->Find("hlo")->bytes));
  out->pipeline = options.pipeline.empty() ? passes::kDefaultPipeline : options.pipeline;
  passes::PipelineOptions popts;
  popts.threads = options.threads;
  DETRAIN_ASSIGN_OR_RETURN(passes::PipelineResult r, passes::RunPipeline(*hlo, out->pipeline, popts));
  for (const auto& rec : r.records) {
    out->pass_records.push_back({{"pass", rec.pass},
                                 {"options_sha256", rec.options_sha256},
                                 {"input_sha256", rec.input_sha256},
                                 {"output_sha256", rec.output_sha256}});
  }
  out->pass_dumps = std::move(r.dumps);
  out->peak_bytes = r.peak_bytes;
  out->total_bytes = r.total_bytes;
  DETRAIN_ASSIGN_OR_RETURN(std::string optimized, ir::PrintModule(*r.module));
  out->stages.push_back({"opt-hlo", std::move(optimized)});
  DETRAIN_ASSIGN_OR_RETURN(std::string plan, codegen::cpu::BuildPlan(*r.module));
  out->stages.push_back({"plan", std::move(plan)});
  return Status::Ok();
}

}  // namespace

Result<CompiledProgram> CompileProgram(const std::string& path, const CompileOptions& options) {
  Result<CompiledProgram> out = EndsWith(path, ".hlo") ? CompileHloFile(path) : CompileToHlo(path);
  if (!out.ok() || !options.backend) return out;
  DETRAIN_RETURN_IF_ERROR(AppendBackendStages(options, &*out));
  return out;
}

}  // namespace detrain::frontend
