// `detrain compile FILE [--emit STAGE] [--hashes] [--json]`: compiles a program and prints one
// stage's canonical text or the digests of its stages (docs/ir.md "CLI").
//
// The input is a .dt program (frontend/stages.h: stages program, source, hlo, eval) or HLO text
// (`.hlo`, e.g. exported from JAX: stages program and hlo, the canonical text). Stages not built
// yet (cuda, ptx, cubin) are reported as such, exit 2.
//
// --hashes prints, instead of the text, one line per stage produced:
//   stage program sha256:<hex>    SHA-256 of the input file's bytes (stage 0)
//   stage source sha256:<hex>     .dt only: the source graph (stage 1)
//   stage hlo sha256:<hex>        SHA-256 of the canonical HLO text (stage 2)
//   stage init sha256:<hex>       .dt only: the parameter initialization plan (JSON)
//   stage eval sha256:<hex>       .dt with a validation split: the evaluation program
// and with --json one object {"file": ..., "stages": [{"stage": ..., "sha256": ...}, ...]}.
// Parse and verify errors print "FILE:LINE:COLUMN: message" to stderr and exit 2.
#include <cctype>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "attest/sha256.h"
#include "base/file_io.h"
#include "cli/command.h"
#include "compiler/ir/printer.h"
#include "compiler/ir/verifier.h"
#include "frontend/stages.h"

namespace detrain::cli {
namespace {

struct CompileOptions {
  std::string file;
  std::string emit = "hlo";
  bool hashes = false;
  bool json = false;
};

struct Stage {
  std::string name;
  std::string text;
};

bool EndsWith(const std::string& s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// Prints a located error as "FILE:LINE:COLUMN: message" (the message from the IR starts with
// "LINE:COLUMN: "), anything else as "FILE: message". Returns the exit code.
int ReportFileError(const std::string& file, const Status& status) {
  std::cerr << file << ":" << (status.message().empty() || !std::isdigit(static_cast<unsigned char>(status.message()[0])) ? " " : "")
            << status.message() << "\n";
  return status.code() == StatusCode::kInternal ? kExitInternal : kExitUsage;
}

// The stages of an .hlo input: its bytes, then the canonical text.
Result<std::vector<Stage>> CompileHlo(std::string bytes) {
  DETRAIN_ASSIGN_OR_RETURN(auto module, ir::ParseAndVerify(bytes));
  DETRAIN_ASSIGN_OR_RETURN(std::string canonical, ir::PrintModule(*module));
  return std::vector<Stage>{{"program", std::move(bytes)}, {"hlo", std::move(canonical)}};
}

// The stages of a .dt program (frontend/stages.h).
Result<std::vector<Stage>> CompileDt(const std::string& file) {
  DETRAIN_ASSIGN_OR_RETURN(frontend::CompiledProgram compiled, frontend::CompileToHlo(file));
  std::vector<Stage> stages;
  for (auto& s : compiled.stages) stages.push_back({s.name, std::move(s.bytes)});
  return stages;
}

int RunCompile(const CompileOptions& opts) {
  static const char* kLater[] = {"opt-hlo", "plan", "cuda", "ptx", "cubin"};
  for (const char* later : kLater) {
    if (opts.emit == later) {
      return ReportError("compile", Unimplemented("--emit " + opts.emit + " is not supported yet (source, hlo, init, eval)"));
    }
  }
  bool is_hlo = EndsWith(opts.file, ".hlo");
  if (!is_hlo && !EndsWith(opts.file, ".dt")) {
    return ReportError("compile", InvalidArgument(opts.file + ": expected a .dt program or HLO text (.hlo)"));
  }
  Result<std::vector<Stage>> stages = Status(StatusCode::kInternal, "unset");
  if (is_hlo) {
    Result<std::string> bytes = ReadFile(opts.file);
    if (!bytes.ok()) return ReportError("compile", bytes.status());
    stages = CompileHlo(std::move(*bytes));
    if (!stages.ok()) return ReportFileError(opts.file, stages.status());
  } else {
    stages = CompileDt(opts.file);
    // Program errors are already "file:line:col: error: ..."; others name their file.
    if (!stages.ok()) {
      std::cerr << stages.status().message() << "\n";
      return stages.status().code() == StatusCode::kInternal ? kExitInternal : kExitUsage;
    }
  }
  if (!opts.hashes) {
    for (const Stage& s : *stages) {
      if (s.name == opts.emit) {
        std::cout << s.text;
        return kExitOk;
      }
    }
    return ReportError("compile", InvalidArgument("--emit " + opts.emit + ": " + opts.file + " has no such stage" +
                                                  (is_hlo ? " (HLO input has: program, hlo)" : "")));
  }
  nlohmann::json list = nlohmann::json::array();
  for (const Stage& s : *stages) {
    std::string digest = attest::Sha256Hex(s.text);
    if (opts.json) {
      list.push_back({{"stage", s.name}, {"sha256", digest}});
    } else {
      std::cout << "stage " << s.name << " sha256:" << digest << "\n";
    }
  }
  if (opts.json) std::cout << nlohmann::json{{"file", opts.file}, {"stages", list}}.dump(2) << "\n";
  return kExitOk;
}

}  // namespace

void RegisterCompileCommand(CLI::App& app, int* exit_code) {
  auto opts = std::make_shared<CompileOptions>();
  CLI::App* cmd = app.add_subcommand("compile", "Compile a program and print a stage or the stage digests");
  cmd->add_option("FILE", opts->file, "Program: a .dt file, or HLO text (.hlo)")->required();
  cmd->add_option("--emit", opts->emit,
                  "Stage to print: source (stage 1, .dt only), hlo (stage 2, default), init (the "
                  "parameter initialization plan), eval (.dt with a validation split)")
      ->check(CLI::IsMember({"hlo", "source", "init", "eval", "opt-hlo", "plan", "cuda", "ptx", "cubin"}));
  cmd->add_flag("--hashes", opts->hashes, "Print `stage NAME sha256:HEX` per stage instead of the text");
  cmd->add_flag("--json", opts->json, "With --hashes: print one JSON object");
  cmd->footer("Errors: FILE:LINE:COLUMN: message, exit 2. Formats: docs/ir.md.");
  cmd->callback([opts, exit_code] { *exit_code = RunCompile(*opts); });
}

}  // namespace detrain::cli
