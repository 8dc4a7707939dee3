// `detrain compile FILE [--emit STAGE] [--hashes [--json]] [--dump-dir DIR] [--pipeline SPEC]
//                       [--threads N]`: compiles a program and prints one stage's canonical form or
// the digests of every stage (driver/compile.h; docs/language.md, docs/ir.md, docs/passes.md).
//
// FILE is a .dt program (stages program, source, hlo, init, eval, opt-hlo, plan) or HLO text
// (.hlo, e.g. exported from JAX: program, hlo, opt-hlo, plan). --hashes prints one line per
// stage, `stage NAME sha256:HEX` (the plan's digest is over its serialized protobuf bytes), and
// with --json one object that also holds the pipeline spec and every pass's record.
// --dump-dir writes every stage, every pass's output and summary.json (driver/dump.h).
// Errors: "FILE:LINE:COLUMN: ..." and exit 2.
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "cli/command.h"
#include "compiler/codegen/cpu/plan.h"
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
  int threads = 1;
};

int RunCompile(const CompileOptions& opts) {
  for (const char* later : {"cuda", "ptx", "cubin"}) {
    if (opts.emit == later) {
      return ReportError("compile", Unimplemented("--emit " + opts.emit +
                                                  " is not supported yet (the CUDA backend "
                                                  "comes with a later issue)"));
    }
  }
  bool is_hlo = driver::IsHloInput(opts.file);
  if (!is_hlo && !driver::IsDtProgram(opts.file)) {
    return ReportError("compile",
                       InvalidArgument(opts.file + ": expected a .dt program or HLO text (.hlo)"));
  }
  driver::CompileOptions copts;
  copts.backend =
      opts.hashes || !opts.dump_dir.empty() || opts.emit == "opt-hlo" || opts.emit == "plan";
  copts.pipeline = opts.pipeline;
  copts.threads = opts.threads;
  Result<driver::CompileResult> c = driver::Compile(opts.file, copts);
  if (!c.ok()) {
    // Located errors already start with the file name; others get it here.
    const std::string& m = c.status().message();
    std::cerr << (m.rfind(opts.file, 0) == 0 ? "" : "detrain compile: ") << m << "\n";
    return c.status().code() == StatusCode::kInternal ? kExitInternal : kExitUsage;
  }
  if (!opts.dump_dir.empty()) {
    Status st = driver::WriteDumpDir(opts.dump_dir, *c, opts.file);
    if (!st.ok()) return ReportError("compile", st);
  }
  if (opts.hashes) {
    if (opts.json) {
      std::cout << driver::CompileSummary(*c, opts.file).dump(2) << "\n";
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
                        (is_hlo ? " (HLO input has: program, hlo, opt-hlo, plan)" : "")));
  }
  if (s->name == driver::kStagePlan) {
    Result<std::string> text = codegen::cpu::PlanToText(s->bytes);
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
  cmd->add_option("FILE", opts->file, "Program: a .dt file, or HLO text (.hlo)")->required();
  cmd->add_option(
         "--emit", opts->emit,
         "Stage to print: source (stage 1), hlo (stage 2, default), init (initialization plan), "
         "eval (evaluation program), opt-hlo (stage 3), plan (stage 4, as protobuf text)")
      ->check(CLI::IsMember(
          {"hlo", "source", "init", "eval", "opt-hlo", "plan", "cuda", "ptx", "cubin"}));
  cmd->add_flag("--hashes", opts->hashes,
                "Print `stage NAME sha256:HEX` per stage instead of the text");
  cmd->add_flag("--json", opts->json,
                "With --hashes: one JSON object, with the pipeline and pass records");
  cmd->add_option("--dump-dir", opts->dump_dir,
                  "Write every stage, every pass's output and summary.json here");
  cmd->add_option("--pipeline", opts->pipeline,
                  "Pass pipeline spec (default: docs/passes.md); it is hashed");
  cmd->add_option("--threads", opts->threads, "Compiler threads; no stage depends on them")
      ->check(CLI::Range(1, 256));
  cmd->footer(
      "Errors: FILE:LINE:COLUMN: message, exit 2. Formats: docs/language.md, docs/ir.md, "
      "docs/passes.md.");
  cmd->callback([opts, exit_code] { *exit_code = RunCompile(*opts); });
}

}  // namespace detrain::cli
