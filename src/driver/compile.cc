// See compile.h. Stages 3 and 4 live here: both inputs (a .dt program, HLO text) reach them
// through stage 2's bytes.
//
// Stage 3's module is printed, verified and buffer-assigned once, by the pipeline: its bytes are
// the pipeline's output text of the last pass (not printed again here), and stage 2 is parsed
// without verification because RunPipeline verifies its input. plan::BuildPlan still
// verifies, prints and assigns buffers on its own (it takes only the module); see the note at
// its call.
#include "driver/compile.h"

#include <optional>
#include <thread>

#include "base/budget.h"
#include "base/checked.h"
#include "compiler/codegen/cuda/cuda_program.h"
#include "compiler/codegen/cuda/toolchain.h"
#include "compiler/ir/parser.h"
#include "compiler/ir/printer.h"
#include "compiler/plan/builder.h"
#include "driver/compile_internal.h"

namespace detrain::driver {

namespace {

bool EndsWith(const std::string& s, std::string_view suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// The bytes of the state the train step carries (every parameter, optimizer slot and the step
// counter), which the runtime holds for the whole run; INT64_MAX when they overflow int64.
int64_t StateBytes(const CompileResult& out) {
  int64_t total = 0;
  for (const StateSpec& s : out.state) {
    if (s.shape.is_tuple()) continue;  // a state tensor is an array
    Result<int64_t> count = s.shape.CheckedElementCount();
    int64_t bytes = 0;
    if (!count.ok() || !CheckedMul(*count, ir::ElementTypeByteSize(s.shape.type()), &bytes) ||
        !CheckedAdd(total, bytes, &total)) {
      return INT64_MAX;
    }
  }
  return total;
}

Status CheckStateBytes(const CompileResult& out) {
  return CheckTotalBytes(StateBytes(out), "the training state (" +
                                              std::to_string(out.state.size()) +
                                              " tensors: parameters, optimizer slots, counter)");
}

// A plan's buffers at their peak, held while the training state is: together against the total
// budget, before anything runs the plan. `plan` names it ("plan", "eval plan").
Status CheckPlanBytes(const CompileResult& out, const plan::BuiltPlan& built,
                      const std::string& plan) {
  int64_t total = 0;
  if (!CheckedAdd(StateBytes(out), built.peak_bytes, &total)) total = INT64_MAX;
  return CheckTotalBytes(total, "the peak of the " + plan + "'s buffers" +
                                    (out.state.empty() ? "" : " with the training state"));
}

// The eval program (a .dt program with a validation split) through the same pipeline to a plan
// of its own; every parameter is an input and there is one shard. Its optimized text is not a
// stage of its own: the plan records the optimized module's digest.
Status AppendEvalPlan(const std::string& spec, const passes::PipelineOptions& popts,
                      uint32_t format, CompileResult* out) {
  const StageRecord* eval = out->stages.Find(kStageEval);
  if (eval == nullptr) return Status::Ok();
  DETRAIN_ASSIGN_OR_RETURN(std::unique_ptr<ir::Module> module, ir::ParseModule(eval->bytes));
  DETRAIN_ASSIGN_OR_RETURN(passes::PipelineResult r, passes::RunPipeline(*module, spec, popts));
  std::string optimized;
  if (r.dumps.empty()) {
    DETRAIN_ASSIGN_OR_RETURN(optimized, ir::PrintModule(*r.module));
  } else {
    optimized = r.dumps.back().second;
  }
  DETRAIN_ASSIGN_OR_RETURN(
      plan::BuiltPlan built,
      plan::BuildPlan(*r.module, plan::EntrySignature{}, optimized, plan::PlanOptions{format}));
  DETRAIN_RETURN_IF_ERROR(CheckPlanBytes(*out, built, "eval plan"));
  DETRAIN_ASSIGN_OR_RETURN(std::string options,
                           OptionsJson({{"pipeline", spec}, {"format_version", format}}));
  Transform t = TransformOf("cpu-plan", kStageEval, std::move(options));
  t.pipeline = spec;
  t.passes = std::move(r.records);
  t.plan_format_version = format;
  return out->stages.Add(kStageEvalPlan, std::move(built.bytes), std::move(t), out->program_kind);
}

// A toolchain stage of the CUDA executable: the PTX, or a cubin.
struct ToolchainStage {
  std::string name;  // e.g. "eval-cubin-sm_90"
  std::string bytes;
  std::string options;  // the transform's, canonical JSON
};

// The PTX of `source` and a cubin per architecture, from NVRTC and nvJitLink, each with the
// toolchain's version and options. The cubins are assembled on up to `threads` threads; each is
// the same bytes either way.
Result<std::vector<ToolchainStage>> RunToolchain(const std::string& source,
                                                 const std::string& prefix, int threads) {
  namespace cuda = codegen::cuda;
  DETRAIN_ASSIGN_OR_RETURN(cuda::ToolchainVersions versions, cuda::Versions());
  std::vector<ToolchainStage> out(1);
  out[0].name = prefix + kStagePtx;
  DETRAIN_ASSIGN_OR_RETURN(out[0].bytes, cuda::CompilePtx(source));
  DETRAIN_ASSIGN_OR_RETURN(out[0].options, OptionsJson({{"arch", cuda::kPtxArch},
                                                        {"nvrtc", versions.nvrtc},
                                                        {"options", cuda::NvrtcOptions()}}));
  const std::string& ptx = out[0].bytes;
  std::vector<Result<std::string>> cubins(cuda::kCubinArchs.size(), std::string());
  auto link = [&](size_t i) { cubins[i] = cuda::LinkCubin(ptx, cuda::kCubinArchs[i]); };
  if (threads > 1) {
    std::vector<std::thread> workers;
    for (size_t i = 0; i < cubins.size(); ++i) workers.emplace_back(link, i);
    for (std::thread& t : workers) t.join();
  } else {
    for (size_t i = 0; i < cubins.size(); ++i) link(i);
  }
  for (size_t i = 0; i < cubins.size(); ++i) {
    if (!cubins[i].ok()) return cubins[i].status();
    const std::string arch = cuda::kCubinArchs[i];
    ToolchainStage s;
    s.name = prefix + kStageCubinPrefix + arch;
    s.bytes = std::move(*cubins[i]);
    DETRAIN_ASSIGN_OR_RETURN(s.options, OptionsJson({{"arch", arch},
                                                     {"nvjitlink", versions.nvjitlink},
                                                     {"options", cuda::LinkOptions(arch)}}));
    out.push_back(std::move(s));
  }
  return out;
}

// The same stages as recorded (CompileOptions::recorded_toolchain_stages).
Result<std::vector<ToolchainStage>> RecordedToolchain(
    const std::map<std::string, CompileOptions::RecordedStage>& recorded,
    const std::string& prefix) {
  std::vector<std::string> names = {prefix + kStagePtx};
  for (const char* arch : codegen::cuda::kCubinArchs) {
    names.push_back(prefix + kStageCubinPrefix + arch);
  }
  std::vector<ToolchainStage> out;
  for (const std::string& name : names) {
    auto it = recorded.find(name);
    if (it == recorded.end()) {
      return NotFound("no recorded stage '" + name + "' (this detrain builds it)");
    }
    out.push_back({name, it->second.bytes, it->second.options});
  }
  return out;
}

// The CUDA executable of stage `plan_stage` (stage_table.h): the generated source, its PTX and a
// cubin per architecture — from the toolchain, or as recorded.
Status AppendCudaStages(const std::string& plan_stage, const std::string& prefix,
                        const CompileOptions& options, CompileResult* out) {
  namespace cuda = codegen::cuda;
  const StageRecord* plan = out->stages.Find(plan_stage);
  if (plan == nullptr) return Status::Ok();
  DETRAIN_ASSIGN_OR_RETURN(cuda::CudaProgram program, cuda::GenerateCuda(plan->bytes));
  DETRAIN_ASSIGN_OR_RETURN(std::string codegen_options,
                           OptionsJson({{"format_version", cuda::kCudaSourceVersion}}));
  const std::string source_stage = prefix + kStageCuda;
  DETRAIN_RETURN_IF_ERROR(out->stages.Add(source_stage, program.source,
                                          TransformOf("cuda-codegen", plan_stage, codegen_options),
                                          out->program_kind));
  DETRAIN_ASSIGN_OR_RETURN(std::vector<ToolchainStage> stages,
                           options.recorded_toolchain_stages.has_value()
                               ? RecordedToolchain(*options.recorded_toolchain_stages, prefix)
                               : RunToolchain(program.source, prefix, options.threads));
  // The executable the CUDA backend runs: this program and these images (the PTX first, then a
  // cubin per architecture, in kCubinArchs order).
  auto images = std::make_shared<cuda::CudaImages>();
  images->ptx = stages[0].bytes;
  for (size_t i = 1; i < stages.size(); ++i)
    images->cubins.emplace_back(cuda::kCubinArchs[i - 1], stages[i].bytes);
  out->cuda[prefix] = {std::make_shared<const cuda::CudaProgram>(std::move(program)),
                       std::move(images)};
  for (ToolchainStage& s : stages) {
    // The PTX reads the source; each cubin the PTX.
    const bool ptx = s.name == prefix + kStagePtx;
    DETRAIN_RETURN_IF_ERROR(
        out->stages.Add(s.name, std::move(s.bytes),
                        TransformOf(ptx ? "nvrtc" : "nvjitlink",
                                    ptx ? source_stage : prefix + kStagePtx, std::move(s.options)),
                        out->program_kind));
  }
  return Status::Ok();
}

// The front end's stages (0 to 2, init, eval): with options.stages_before_budget, every one
// made before the first declared size over the budget is reported.
Status FrontEnd(const std::string& path, const CompileOptions& options, CompileResult* out) {
  std::optional<DeferDeclaredSizes> deferred;
  if (options.stages_before_budget) deferred.emplace();
  DETRAIN_RETURN_IF_ERROR(IsHloInput(path)  ? ImportHlo(path, out)
                          : IsRunSpec(path) ? CompileRunSpec(path, options, out)
                                            : CompileDtProgram(path, options, out));
  if (deferred.has_value() && !deferred->excess().ok()) {
    return deferred->excess().WithContext(path);
  }
  return Status::Ok();
}

Status CompileInto(const std::string& path, const CompileOptions& options, CompileResult* out) {
  DETRAIN_RETURN_IF_ERROR(FrontEnd(path, options, out));
  DETRAIN_RETURN_IF_ERROR(CheckStateBytes(*out).WithContext(path));
  if (options.backend) DETRAIN_RETURN_IF_ERROR(AppendBackendStages(options, out));
  return Status::Ok();
}

}  // namespace

bool IsHloInput(const std::string& path) { return EndsWith(path, ".hlo"); }
bool IsDtProgram(const std::string& path) { return EndsWith(path, ".dt"); }
bool IsRunSpec(const std::string& path) { return EndsWith(path, ".json"); }

Status AppendBackendStages(const CompileOptions& options, CompileResult* out) {
  const StageRecord* hlo = out->stages.Find(kStageHlo);
  if (hlo == nullptr) return Internal("no stage 2 to optimize");
  // Parsing back the canonical text makes stage 3 a function of stage 2's bytes.
  DETRAIN_ASSIGN_OR_RETURN(std::unique_ptr<ir::Module> module, ir::ParseModule(hlo->bytes));
  const std::string spec = options.pipeline.empty() ? passes::kDefaultPipeline : options.pipeline;
  passes::PipelineOptions popts;
  popts.threads = options.threads;
  DETRAIN_ASSIGN_OR_RETURN(passes::PipelineResult r, passes::RunPipeline(*module, spec, popts));

  // The last pass's dump is the canonical text of r.module; a spec names at least one pass.
  std::string optimized;
  if (r.dumps.empty()) {
    DETRAIN_ASSIGN_OR_RETURN(optimized, ir::PrintModule(*r.module));
  } else {
    optimized = r.dumps.back().second;
  }
  DETRAIN_ASSIGN_OR_RETURN(std::string pipeline_options, OptionsJson({{"pipeline", spec}}));
  Transform pipeline = TransformOf("pass-pipeline", kStageHlo, std::move(pipeline_options));
  pipeline.pipeline = spec;
  pipeline.passes = std::move(r.records);
  out->pass_dumps = std::move(r.dumps);
  DETRAIN_RETURN_IF_ERROR(
      out->stages.Add(kStageOptHlo, std::move(optimized), std::move(pipeline), out->program_kind));

  // The pipeline verified r.module after its last pass, and stage 3's bytes are its canonical
  // text: the plan builder neither verifies nor prints it again.
  DETRAIN_ASSIGN_OR_RETURN(
      plan::BuiltPlan built,
      plan::BuildPlan(*r.module, out->signature, out->stages.Find(kStageOptHlo)->bytes,
                      plan::PlanOptions{options.plan_format_version}));
  DETRAIN_RETURN_IF_ERROR(CheckPlanBytes(*out, built, "plan"));
  out->peak_bytes = built.peak_bytes;
  out->total_bytes = built.total_bytes;
  DETRAIN_ASSIGN_OR_RETURN(std::string plan_options,
                           OptionsJson({{"format_version", options.plan_format_version}}));
  Transform codegen = TransformOf("cpu-plan", kStageOptHlo, std::move(plan_options));
  codegen.plan_format_version = options.plan_format_version;
  DETRAIN_RETURN_IF_ERROR(
      out->stages.Add(kStagePlan, std::move(built.bytes), std::move(codegen), out->program_kind));
  DETRAIN_RETURN_IF_ERROR(AppendEvalPlan(spec, popts, options.plan_format_version, out));
  if (!options.cuda) return Status::Ok();
  DETRAIN_RETURN_IF_ERROR(AppendCudaStages(kStagePlan, "", options, out));
  return AppendCudaStages(kStageEvalPlan, kEvalPrefix, options, out);
}

int64_t TrainerBytes(const CompileResult& c) {
  int64_t total = 0;
  return CheckedAdd(StateBytes(c), c.peak_bytes, &total) ? total : INT64_MAX;
}

Result<CompileResult> Compile(const std::string& path, const CompileOptions& options) {
  CompileResult out;
  out.stages.set_on_add(options.on_stage);
  Status compiled = CompileInto(path, options, &out);
  out.stages.set_on_add(nullptr);
  if (!compiled.ok()) return compiled;
  return out;
}

}  // namespace detrain::driver
