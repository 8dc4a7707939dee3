// `detrain eval FILE.hlo|PROGRAM.dt --input NAME=FILE.npy ... [-o DIR] [--backend interp|cpu|cuda]
// [--threads T] [--isa I] [--devices D]`: runs the entry computation of an HLO module, or one train
// step of a program, on the reference interpreter, the CPU executor or the GPUs (docs/ir.md "CLI").
//
// interp evaluates stage 2 (the canonical module; for a program, its train step). cpu compiles
// through the pass pipeline and the plan exactly as `detrain compile` does (stage 4) and runs
// the plan; threads, ISA and devices never change a bit, so the two backends' output files are
// byte-identical; cuda runs the same plan's generated CUDA program (docs/cuda.md), with the same
// bits again.
//
// Inputs are matched to entry parameters by name or by position (`p0`, `p1`, ...); a missing,
// unknown, repeated or mis-shaped input is an error (exit 2) naming the parameter and the
// expected shape. With -o DIR the result is written as DIR/out.npy, or for a tuple result as
// DIR/out0.npy, DIR/out1.npy, ...; stdout lists each output with its shape and the SHA-256 of
// its .npy bytes. Without -o the outputs are printed as IR constant text.
#include <filesystem>
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
#include "driver/compile.h"
#include "runtime/executor.h"

namespace detrain::cli {
namespace {

struct EvalOptions {
  std::string file;
  std::vector<std::string> inputs;
  std::string out_dir;
  std::string backend = "interp";
  int threads = 1;
  std::string isa;
  int devices = 1;
};

Result<std::vector<ir::Literal>> LoadArguments(const ir::Module& module,
                                               const std::vector<std::string>& inputs) {
  std::map<std::string, std::string> by_name;
  for (const std::string& spec : inputs) {
    size_t eq = spec.find('=');
    if (eq == std::string::npos || eq == 0)
      return InvalidArgument("--input '" + spec + "' is not NAME=FILE.npy");
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
      return InvalidArgument("missing --input for parameter " +
                             std::to_string(p->parameter_number) + " '" + name + "' (" +
                             p->shape.ToString() + ")");
    }
    DETRAIN_ASSIGN_OR_RETURN(NpyArray array, ReadNpyFile(it->second));
    DETRAIN_ASSIGN_OR_RETURN(ir::Literal lit, ir::LiteralFromNpy(array));
    if (!(lit.shape() == p->shape)) {
      return InvalidArgument("--input " + it->first + ": parameter '" + name + "' expects " +
                             p->shape.ToString() + ", " + it->second + " holds " +
                             lit.shape().ToString());
    }
    args.push_back(std::move(lit));
    by_name.erase(it);
  }
  if (!by_name.empty()) {
    return InvalidArgument("--input " + by_name.begin()->first +
                           " matches no parameter of the entry computation");
  }
  return args;
}

// `arrays`: the result's array leaves; `tuple`: whether the result is a tuple.
Status WriteOutputs(const std::vector<ir::Literal>& arrays, bool tuple, const std::string& dir) {
  std::vector<std::pair<std::string, const ir::Literal*>> outputs;
  for (size_t i = 0; i < arrays.size(); ++i) {
    outputs.push_back({tuple ? "out" + std::to_string(i) : "out", &arrays[i]});
  }
  if (!dir.empty()) {
    // -o names a directory that may not exist yet (as `run -o` does).
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    if (ec) return InvalidArgument(dir + ": cannot create the directory (" + ec.message() + ")");
  }
  for (const auto& [name, lit] : outputs) {
    if (dir.empty()) {
      std::cout << name << " = " << lit->ToString() << "\n";
      continue;
    }
    std::string bytes = SerializeNpy(ir::LiteralToNpy(*lit));
    std::string path = dir + "/" + name + ".npy";
    DETRAIN_RETURN_IF_ERROR(WriteFileAtomic(path, bytes));
    std::cout << path << " " << lit->shape().ToString() << " sha256:" << attest::Sha256Hex(bytes)
              << "\n";
  }
  return Status::Ok();
}

bool IsNestedTuple(const ir::Shape& shape) {
  if (!shape.is_tuple()) return false;
  for (const ir::Shape& e : shape.tuple_elements()) {
    if (e.is_tuple()) return true;
  }
  return false;
}

// The CPU executor for the compiled plan; options are checked here, before any input is read.
Result<std::unique_ptr<runtime::Executor>> MakeExecutor(const EvalOptions& opts,
                                                        const driver::CompileResult& compiled) {
  runtime::ExecutorOptions eo;
  if (opts.backend == "cuda") eo.backend = runtime::Backend::kCuda;
  eo.threads = opts.threads;
  eo.devices = opts.devices;
  if (!opts.isa.empty()) {
    auto isa = IsaFromName(opts.isa);
    if (!isa) return InvalidArgument("--isa '" + opts.isa + "': expected scalar, avx2 or avx512");
    eo.isa = *isa;
  }
  const driver::StageRecord* plan = compiled.stages.Find(driver::kStagePlan);
  if (plan == nullptr) return Internal("no plan stage");
  return runtime::Executor::Create(plan->bytes, eo);
}

int RunEval(const EvalOptions& opts) {
  driver::CompileOptions copts;
  copts.backend = opts.backend != "interp";
  auto compiled = driver::Compile(opts.file, copts);
  if (!compiled.ok()) return ReportProgramError("eval", opts.file, compiled.status());
  auto module = ir::ParseAndVerify(compiled->stages.Find(driver::kStageHlo)->bytes);
  if (!module.ok()) return ReportError("eval", module.status());
  const ir::Shape& root = (*module)->entry()->root()->shape;
  if (IsNestedTuple(root))
    return ReportError("eval",
                       InvalidArgument("the result is a nested tuple; .npy holds arrays only"));
  std::unique_ptr<runtime::Executor> executor;
  if (opts.backend != "interp") {
    auto made = MakeExecutor(opts, *compiled);
    if (!made.ok()) return ReportError("eval", made.status());
    executor = std::move(*made);
  } else if (opts.threads != 1 || opts.devices != 1 || !opts.isa.empty()) {
    return ReportError(
        "eval",
        InvalidArgument("--threads, --isa and --devices apply to --backend cpu and cuda only"));
  }
  auto args = LoadArguments(**module, opts.inputs);
  if (!args.ok()) return ReportError("eval", args.status());
  Result<std::vector<ir::Literal>> result = std::vector<ir::Literal>();
  if (executor) {
    auto runs = executor->Run({*args});
    result = runs.ok() ? Result<std::vector<ir::Literal>>(std::move((*runs)[0]))
                       : Result<std::vector<ir::Literal>>(runs.status());
  } else {
    auto value = interp::Evaluate(**module, *args);
    result = value.ok() ? Result<std::vector<ir::Literal>>(runtime::FlattenLiteral(*value))
                        : Result<std::vector<ir::Literal>>(value.status());
  }
  if (!result.ok()) return ReportError("eval", result.status());
  Status written = WriteOutputs(*result, root.is_tuple(), opts.out_dir);
  if (!written.ok()) return ReportError("eval", written);
  return kExitOk;
}

}  // namespace

void RegisterEvalCommand(CLI::App& app, int* exit_code) {
  auto opts = std::make_shared<EvalOptions>();
  CLI::App* cmd = app.add_subcommand(
      "eval",
      "Run an HLO module, or one train step of a program, on the interpreter, the CPU or a GPU");
  cmd->add_option("FILE", opts->file, "HLO text (.hlo), or a .dt program (its train step)")
      ->required();
  cmd->add_option("--backend", opts->backend,
                  "interp (the reference interpreter, default), cpu (the executable plan) or "
                  "cuda (its CUDA program on the machine's NVIDIA GPUs)")
      ->check(CLI::IsMember({"interp", "cpu", "cuda"}));
  cmd->add_option("--threads", opts->threads, "cpu: worker threads; results never depend on them")
      ->check(IntegerIn(1, 256));
  cmd->add_option(
      "--isa", opts->isa,
      "cpu: scalar, avx2 or avx512 (default: the best this CPU has); never changes a bit");
  cmd->add_option("--devices", opts->devices,
                  "cpu: in-process devices, 1, 2, 4 or 8, dividing the program's shard count; "
                  "never changes a bit")
      ->check(DeviceCount());
  cmd->add_option("--input", opts->inputs, "NAME=FILE.npy: a parameter by name or as p0, p1, ...");
  cmd->add_option("-o,--output-dir", opts->out_dir,
                  "Write out.npy (or out0.npy, out1.npy, ... for a tuple) here");
  cmd->footer(
      "Inputs are matched to entry parameters by name or position (p0, p1, ...); for a program, "
      "the train\n"
      "step's parameters (docs/language.md \"The train step\").\n"
      "Exit codes: 0 ok, 2 input error (parse, verify, missing/extra/mis-shaped input, bad "
      "option).");
  cmd->callback([opts, exit_code] { *exit_code = RunEval(*opts); });
}

}  // namespace detrain::cli
