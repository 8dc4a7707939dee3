// `detrain compile FILE [--emit STAGE] [--hashes [--json]] [--dump-dir DIR] [--pipeline SPEC]
//                       [--threads N]`: compiles a program and prints one stage's canonical form or
// the digests of every stage (frontend/stages.h; docs/language.md, docs/ir.md, docs/passes.md).
//
// FILE is a .dt program (stages program, source, hlo, init, eval, opt-hlo, plan) or HLO text
// (.hlo, e.g. exported from JAX: program, hlo, opt-hlo, plan). --hashes prints one line per
// stage, `stage NAME sha256:HEX` (the plan's digest is over its serialized protobuf bytes), and
// with --json one object that also holds the pipeline spec and every pass's record.
// --dump-dir writes every stage, every pass's output and summary.json, in the manner of XLA's
// --xla_dump_to but canonical. Errors: "FILE:LINE:COLUMN: ..." and exit 2.
#include <sys/stat.h>

#include <cerrno>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "attest/sha256.h"
#include "base/file_io.h"
#include "cli/command.h"
#include "compiler/codegen/cpu/plan.h"
#include "frontend/stages.h"

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

bool EndsWith(const std::string& s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// The file name of a stage in a dump directory.
std::string StageFileName(const std::string& stage, bool is_hlo_input) {
  if (stage == "program") return is_hlo_input ? "00.program.hlo" : "00.program.dt";
  if (stage == "source") return "01.source.hlo";
  if (stage == "hlo") return "02.hlo.hlo";
  if (stage == "init") return "02.init.json";
  if (stage == "eval") return "02.eval.hlo";
  if (stage == "opt-hlo") return "03.opt-hlo.hlo";
  return "04.plan.pb";
}

nlohmann::json Summary(const CompileOptions& opts, const frontend::CompiledProgram& c, bool is_hlo) {
  nlohmann::json stages = nlohmann::json::array();
  for (const auto& s : c.stages) {
    stages.push_back({{"stage", s.name}, {"sha256", attest::Sha256Hex(s.bytes)}, {"file", StageFileName(s.name, is_hlo)}});
  }
  nlohmann::json j = {{"file", opts.file}, {"stages", stages}};
  if (!c.pipeline.empty()) {
    j["pipeline"] = c.pipeline;
    j["passes"] = c.pass_records;
    j["buffers"] = {{"peak_bytes", c.peak_bytes}, {"total_bytes", c.total_bytes}};
  }
  return j;
}

Status MakeDir(const std::string& dir) {
  if (::mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) return IoError(ErrnoMessage(dir, errno));
  return Status::Ok();
}

Status WriteDump(const CompileOptions& opts, const frontend::CompiledProgram& c, bool is_hlo) {
  DETRAIN_RETURN_IF_ERROR(MakeDir(opts.dump_dir));
  DETRAIN_RETURN_IF_ERROR(MakeDir(opts.dump_dir + "/passes"));
  for (const auto& s : c.stages) {
    DETRAIN_RETURN_IF_ERROR(WriteFileAtomic(opts.dump_dir + "/" + StageFileName(s.name, is_hlo), s.bytes));
    if (s.name == "plan") {
      DETRAIN_ASSIGN_OR_RETURN(std::string text, codegen::cpu::PlanToText(s.bytes));
      DETRAIN_RETURN_IF_ERROR(WriteFileAtomic(opts.dump_dir + "/04.plan.txt", text));
    }
  }
  for (const auto& [name, text] : c.pass_dumps) {
    DETRAIN_RETURN_IF_ERROR(WriteFileAtomic(opts.dump_dir + "/passes/" + name, text));
  }
  return WriteFileAtomic(opts.dump_dir + "/summary.json", Summary(opts, c, is_hlo).dump(2) + "\n");
}

int RunCompile(const CompileOptions& opts) {
  for (const char* later : {"cuda", "ptx", "cubin"}) {
    if (opts.emit == later) {
      return ReportError("compile", Unimplemented("--emit " + opts.emit + " is not supported yet (the CUDA backend "
                                                  "comes with a later issue)"));
    }
  }
  bool is_hlo = EndsWith(opts.file, ".hlo");
  if (!is_hlo && !EndsWith(opts.file, ".dt")) {
    return ReportError("compile", InvalidArgument(opts.file + ": expected a .dt program or HLO text (.hlo)"));
  }
  frontend::CompileOptions copts;
  copts.backend = opts.hashes || !opts.dump_dir.empty() || opts.emit == "opt-hlo" || opts.emit == "plan";
  copts.pipeline = opts.pipeline;
  copts.threads = opts.threads;
  Result<frontend::CompiledProgram> c = frontend::CompileProgram(opts.file, copts);
  if (!c.ok()) {
    // Located errors already start with the file name; others get it here.
    const std::string& m = c.status().message();
    std::cerr << (m.rfind(opts.file, 0) == 0 ? "" : "detrain compile: ") << m << "\n";
    return c.status().code() == StatusCode::kInternal ? kExitInternal : kExitUsage;
  }
  if (!opts.dump_dir.empty()) {
    Status st = WriteDump(opts, *c, is_hlo);
    if (!st.ok()) return ReportError("compile", st);
  }
  if (opts.hashes) {
    if (opts.json) {
      std::cout << Summary(opts, *c, is_hlo).dump(2) << "\n";
    } else {
      for (const auto& s : c->stages) std::cout << "stage " << s.name << " sha256:" << attest::Sha256Hex(s.bytes) << "\n";
    }
    return kExitOk;
  }
  if (!opts.dump_dir.empty() && opts.emit == "hlo") return kExitOk;  // the dump was the point
  const frontend::Stage* s = c->Find(opts.emit);
  if (s == nullptr) {
    return ReportError("compile", InvalidArgument("--emit " + opts.emit + ": " + opts.file + " has no such stage" +
                                                  (is_hlo ? " (HLO input has: program, hlo, opt-hlo, plan)" : "")));
  }
  if (s->name == "plan") {
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
  CLI::App* cmd = app.add_subcommand("compile", "Compile a program and print a stage or the stage digests");
  cmd->add_option("FILE", opts->file, "Program: a .dt file, or HLO text (.hlo)")->required();
  cmd->add_option("--emit", opts->emit,
                  "Stage to print: source (stage 1), hlo (stage 2, default), init (initialization plan), "
                  "eval (evaluation program), opt-hlo (stage 3), plan (stage 4, as protobuf text)")
      ->check(CLI::IsMember({"hlo", "source", "init", "eval", "opt-hlo", "plan", "cuda", "ptx", "cubin"}));
  cmd->add_flag("--hashes", opts->hashes, "Print `stage NAME sha256:HEX` per stage instead of the text");
  cmd->add_flag("--json", opts->json, "With --hashes: one JSON object, with the pipeline and pass records");
  cmd->add_option("--dump-dir", opts->dump_dir, "Write every stage, every pass's output and summary.json here");
  cmd->add_option("--pipeline", opts->pipeline, "Pass pipeline spec (default: docs/passes.md); it is hashed");
  cmd->add_option("--threads", opts->threads, "Compiler threads; no stage depends on them")->check(CLI::Range(1, 256));
  cmd->footer("Errors: FILE:LINE:COLUMN: message, exit 2. Formats: docs/language.md, docs/ir.md, docs/passes.md.");
  cmd->callback([opts, exit_code] { *exit_code = RunCompile(*opts); });
}

}  // namespace detrain::cli
