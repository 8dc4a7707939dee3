// `detrain compile FILE [--emit STAGE] [--backend cpu|cuda] [--hashes [--json]] [--dump-dir DIR]
//                       [--pipeline SPEC] [--threads N]`: compiles a program and prints one stage's
//                       canonical form or
// the digests of every stage (driver/compile.h; docs/language.md, docs/ir.md, docs/passes.md).
//
// FILE is a .dt program (stages program, source, hlo, init, eval, opt-hlo, plan) or HLO text
// (.hlo, e.g. exported from JAX: program, hlo, opt-hlo, plan) or a run spec (.json, an exported
// train step: program, source, hlo, init, opt-hlo, plan; schemas/run-spec.md). --hashes prints one
// line per stage, `stage NAME sha256:HEX` (the plan's digest is over its serialized protobuf
// bytes), and with --json one object that also holds the pipeline spec and every pass's record.
// --dump-dir writes every stage, every pass's output and summary.json (driver/dump.h).
// --backend cuda (implied by --emit cuda, ptx or cubin) adds the CUDA executable's stages: the
// generated source, its PTX and the cubins (docs/cuda.md); no GPU is needed.
// Errors: "FILE:LINE:COLUMN: ..." and exit 2.
#include <unistd.h>

#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "cli/command.h"
#include "compiler/plan/builder.h"
#include "driver/compile.h"
#include "driver/dump.h"

namespace detrain::cli {
namespace {

struct CompileOptions {
  std::string file;
  std::string emit = "hlo";
  bool hashes = false;
  bool json = false;
  std::string dump_dir;
  std::string pipeline;
  uint32_t plan_format = plan::kPlanFormatVersion;
  std::string backend = "cpu";
  int threads = 1;
};

// What --emit accepts: every stage of the stage table but the program itself, and `cubin` for the
// newest architecture's cubin (`eval-cubin` for the eval program's).
constexpr char kCubinAlias[] = "cubin";
constexpr char kNewestCubin[] = "sm_90";

std::vector<std::string> EmitChoices() {
  std::vector<std::string> choices;
  for (std::string_view name : driver::StageNames()) {
    if (name != driver::kStageProgram) choices.emplace_back(name);
  }
  choices.push_back(kCubinAlias);
  choices.push_back(std::string(driver::kEvalPrefix) + kCubinAlias);
  return choices;
}

int RunCompile(CompileOptions opts) {
  for (const std::string prefix : {"", driver::kEvalPrefix}) {
    if (opts.emit == prefix + kCubinAlias)
      opts.emit = prefix + driver::kStageCubinPrefix + kNewestCubin;
  }
  const bool cuda = opts.backend == "cuda" || driver::IsBackendStage(opts.emit);
  // A cubin stage (cubin-ARCH, eval-cubin-ARCH) is machine code.
  const bool binary =
      opts.emit.starts_with(driver::kStageCubinPrefix) ||
      opts.emit.starts_with(std::string(driver::kEvalPrefix) + driver::kStageCubinPrefix);
  if (binary && !opts.hashes && ::isatty(STDOUT_FILENO)) {
    return ReportError("compile",
                       InvalidArgument("--emit " + opts.emit +
                                       " writes a binary: redirect standard output to a file, "
                                       "or use --dump-dir"));
  }
  bool is_hlo = driver::IsHloInput(opts.file);
  if (!is_hlo && !driver::IsDtProgram(opts.file) && !driver::IsRunSpec(opts.file)) {
    return ReportError("compile",
                       InvalidArgument(opts.file + ": expected a .dt program, HLO text (.hlo) or "
                                                   "a run spec (.json)"));
  }
  driver::CompileOptions copts;
  copts.backend = cuda || opts.hashes || !opts.dump_dir.empty() || opts.emit == "opt-hlo" ||
                  opts.emit == "plan" || opts.emit == "eval-plan";
  copts.cuda = cuda;
  copts.pipeline = opts.pipeline;
  copts.plan_format_version = opts.plan_format;
  copts.threads = opts.threads;
  Result<driver::CompileResult> c = driver::Compile(opts.file, copts);
  if (!c.ok()) return ReportProgramError("compile", opts.file, c.status());
  if (!opts.dump_dir.empty()) {
    Status st = driver::WriteDumpDir(opts.dump_dir, *c, opts.file);
    if (!st.ok()) return ReportError("compile", st);
  }
  if (opts.hashes) {
    if (opts.json) {
      std::cout << JsonOutput(driver::CompileSummary(*c, opts.file));
    } else {
      for (const auto& s : c->stages.records())
        std::cout << "stage " << s.name << " sha256:" << s.sha256 << "\n";
    }
    return kExitOk;
  }
  if (!opts.dump_dir.empty() && opts.emit == "hlo") return kExitOk;  // the dump was the point
  const driver::StageRecord* s = c->stages.Find(opts.emit);
  if (s == nullptr) {
    return ReportError(
        "compile",
        InvalidArgument("--emit " + opts.emit + ": " + opts.file + " has no such stage" +
                        (is_hlo ? " (HLO input has: program, hlo, opt-hlo, plan, and the CUDA "
                                  "stages cuda, ptx, cubin-sm_80, cubin-sm_90)"
                                : "")));
  }
  if (s->name == driver::kStagePlan || s->name == driver::kStageEvalPlan) {
    Result<std::string> text = plan::PlanToText(s->bytes);
    if (!text.ok()) return ReportError("compile", text.status());
    std::cout << *text;
  } else {
    std::cout << s->bytes;
  }
  return kExitOk;
}

}  // namespace

void RegisterCompileCommand(CLI::App& app, int* exit_code) {
  auto opts = std::make_shared<CompileOptions>();
  CLI::App* cmd =
      app.add_subcommand("compile", "Compile a program and print a stage or the stage digests");
  cmd->add_option("FILE", opts->file,
                  "Program: a .dt file, HLO text (.hlo), or a run spec (.json) naming an "
                  "exported train step")
      ->required();
  cmd->add_option(
         "--emit", opts->emit,
         "Stage to print: source (stage 1), hlo (stage 2, default), init (initialization plan), "
         "eval (evaluation program), opt-hlo (stage 3), plan (stage 4, as protobuf text); "
         "with the CUDA backend: cuda (the generated source), ptx, cubin (= cubin-sm_90), "
         "cubin-sm_80, and eval-plan, eval-cuda, eval-ptx, eval-cubin-sm_80|90 for the eval "
         "program. A cubin is binary: redirect it to a file")
      ->check(CLI::IsMember(EmitChoices()));
  cmd->add_option("--backend", opts->backend,
                  "cpu (default): stages up to the CPU plan; cuda: also the CUDA source, PTX "
                  "and cubins (sm_80, sm_90), compiled with NVRTC and nvJitLink, no GPU needed")
      ->check(CLI::IsMember({"cpu", "cuda"}));
  cmd->add_flag("--hashes", opts->hashes,
                "Print `stage NAME sha256:HEX` per stage instead of the text");
  cmd->add_flag("--json", opts->json,
                "With --hashes: one JSON object, with the pipeline and pass records");
  cmd->add_option("--dump-dir", opts->dump_dir,
                  "Write every stage, every pass's output and summary.json here");
  cmd->add_option("--pipeline", opts->pipeline,
                  "Pass pipeline spec (default: docs/passes.md); it is hashed");
  AddPlanFormatOption(cmd, &opts->plan_format);
  cmd->add_option("--threads", opts->threads, "Compiler threads; no stage depends on them")
      ->check(IntegerIn(1, 256));
  cmd->footer(
      "Errors: FILE:LINE:COLUMN: message, exit 2. Formats: docs/language.md, docs/ir.md, "
      "docs/passes.md.");
  cmd->callback([opts, exit_code] { *exit_code = RunCompile(*opts); });
}

}  // namespace detrain::cli
