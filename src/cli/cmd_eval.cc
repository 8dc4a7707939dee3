// `detrain eval FILE.hlo --input NAME=FILE.npy ... [-o DIR]`: runs the entry computation of an
// HLO module on the reference interpreter (docs/ir.md "CLI").
//
// Inputs are matched to entry parameters by name or by position (`p0`, `p1`, ...); a missing,
// unknown, repeated or mis-shaped input is an error (exit 2) naming the parameter and the
// expected shape. With -o DIR the result is written as DIR/out.npy, or for a tuple result as
// DIR/out0.npy, DIR/out1.npy, ...; stdout lists each output with its shape and the SHA-256 of
// its .npy bytes. Without -o the outputs are printed as IR constant text.
#include <cctype>
#include <iostream>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "attest/sha256.h"
#include "base/file_io.h"
#include "base/npy.h"
#include "cli/command.h"
#include "compiler/interp/interpreter.h"
#include "compiler/ir/literal_npy.h"
#include "compiler/ir/verifier.h"

namespace detrain::cli {
namespace {

struct EvalOptions {
  std::string file;
  std::vector<std::string> inputs;
  std::string out_dir;
};

Result<std::vector<ir::Literal>> LoadArguments(const ir::Module& module, const std::vector<std::string>& inputs) {
  std::map<std::string, std::string> by_name;
  for (const std::string& spec : inputs) {
    size_t eq = spec.find('=');
    if (eq == std::string::npos || eq == 0) return InvalidArgument("--input '" + spec + "' is not NAME=FILE.npy");
    if (!by_name.emplace(spec.substr(0, eq), spec.substr(eq + 1)).second) {
      return InvalidArgument("--input " + spec.substr(0, eq) + " is given twice");
    }
  }
  std::vector<ir::Literal> args;
  for (const ir::Instruction* p : module.entry()->Parameters()) {
    std::string positional = "p" + std::to_string(p->parameter_number);
    std::string name = p->name.empty() ? positional : p->name;
    auto it = by_name.find(name);
    if (it == by_name.end()) it = by_name.find(positional);
    if (it == by_name.end()) {
      return InvalidArgument("missing --input for parameter " + std::to_string(p->parameter_number) + " '" +
                             name + "' (" + p->shape.ToString() + ")");
    }
    DETRAIN_ASSIGN_OR_RETURN(NpyArray array, ReadNpyFile(it->second));
    DETRAIN_ASSIGN_OR_RETURN(ir::Literal lit, ir::LiteralFromNpy(array));
    if (!(lit.shape() == p->shape)) {
      return InvalidArgument("--input " + it->first + ": parameter '" + name + "' expects " + p->shape.ToString() +
                             ", " + it->second + " holds " + lit.shape().ToString());
    }
    args.push_back(std::move(lit));
    by_name.erase(it);
  }
  if (!by_name.empty()) {
    return InvalidArgument("--input " + by_name.begin()->first + " matches no parameter of the entry computation");
  }
  return args;
}

Status WriteOutputs(const ir::Literal& result, const std::string& dir) {
  std::vector<std::pair<std::string, const ir::Literal*>> outputs;
  if (result.shape().is_tuple()) {
    for (size_t i = 0; i < result.tuple_elements().size(); ++i) {
      outputs.push_back({"out" + std::to_string(i), &result.tuple_elements()[i]});
    }
  } else {
    outputs.push_back({"out", &result});
  }
  for (const auto& [name, lit] : outputs) {
    if (lit->shape().is_tuple()) return InvalidArgument("output " + name + " is a nested tuple; .npy holds arrays only");
    if (dir.empty()) {
      std::cout << name << " = " << lit->ToString() << "\n";
      continue;
    }
    std::string bytes = SerializeNpy(ir::LiteralToNpy(*lit));
    std::string path = dir + "/" + name + ".npy";
    DETRAIN_RETURN_IF_ERROR(WriteFileAtomic(path, bytes));
    std::cout << path << " " << lit->shape().ToString() << " sha256:" << attest::Sha256Hex(bytes) << "\n";
  }
  return Status::Ok();
}

int RunEval(const EvalOptions& opts) {
  Result<std::string> text = ReadFile(opts.file);
  if (!text.ok()) return ReportError("eval", text.status());
  auto module = ir::ParseAndVerify(*text);
  if (!module.ok()) {
    const std::string& m = module.status().message();
    bool located = !m.empty() && std::isdigit(static_cast<unsigned char>(m[0]));
    std::cerr << opts.file << (located ? ":" : ": ") << m << "\n";
    return kExitUsage;
  }
  auto args = LoadArguments(**module, opts.inputs);
  if (!args.ok()) return ReportError("eval", args.status());
  auto result = interp::Evaluate(**module, *args);
  if (!result.ok()) return ReportError("eval", result.status());
  Status written = WriteOutputs(*result, opts.out_dir);
  if (!written.ok()) return ReportError("eval", written);
  return kExitOk;
}

}  // namespace

void RegisterEvalCommand(CLI::App& app, int* exit_code) {
  auto opts = std::make_shared<EvalOptions>();
  CLI::App* cmd = app.add_subcommand("eval", "Run an HLO module's entry computation on the reference interpreter");
  cmd->add_option("FILE", opts->file, "HLO text (.hlo)")->required();
  cmd->add_option("--input", opts->inputs, "NAME=FILE.npy: a parameter by name or as p0, p1, ...");
  cmd->add_option("-o,--output-dir", opts->out_dir, "Write out.npy (or out0.npy, out1.npy, ... for a tuple) here");
  cmd->footer("Exit codes: 0 ok, 2 input error (parse, verify, missing/extra/mis-shaped input).");
  cmd->callback([opts, exit_code] { *exit_code = RunEval(*opts); });
}

}  // namespace detrain::cli
