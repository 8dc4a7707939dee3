// The pass pipeline as data (STYLE.md point 3; docs/passes.md): a spec string names the passes
// in order ("inline,cse,fold-constants,..."); RunPipeline verifies the module before the first pass
// and after the last (after each one when asked, or when the last check fails: PipelineOptions),
// and records for every pass (name, options digest, input digest, output
// digest), where a digest is the SHA-256 of the canonical text (ir::ModuleFingerprint).
// Every pass in the table changes the canonical text of some modules: a step that never could
// (dead code elimination, scheduling, buffer assignment) is not a pass — see docs/passes.md §3.
//
// Thread safety: RunPipeline is a pure function of its arguments; concurrent calls are safe.
// Determinism: the optimized module, the records and the dumps depend only on the input module
// and the spec — never on options.threads (which only bounds the worker threads a pass may use).
#ifndef DETRAIN_COMPILER_PASSES_PIPELINE_H_
#define DETRAIN_COMPILER_PASSES_PIPELINE_H_

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/status.h"
#include "compiler/ir/module.h"

namespace detrain::passes {

// The default pipeline spec, itself hashed into the stage record.
extern const char kDefaultPipeline[];

struct PassRecord {
  std::string pass, options_sha256, input_sha256, output_sha256;
};

struct PipelineOptions {
  int threads = 1;  // may parallelize; results must not depend on it
  // Verify after every pass (tests, fuzzers). Otherwise the module is verified before the first
  // pass and after the last, and only a failure there runs the pipeline again with every pass
  // verified, to name the pass that broke it: the same verdicts, and the same error, for the
  // price of two verifications on the path every valid program takes.
  bool verify_each_pass = false;
};

struct PipelineResult {
  // The optimized module (stage 3). Its computations are those ENTRY reaches, and each one's
  // instruction list is exactly its live instructions in canonical order (the execution order
  // codegen follows): what `dce` and `schedule` used to promise.
  std::unique_ptr<ir::Module> module;
  std::vector<PassRecord> records;                         // one per pass, in order
  std::vector<std::pair<std::string, std::string>> dumps;  // ("NN.pass-name.hlo", canonical text)
};

// Verifies before the first pass and after each; an unknown pass name is an InvalidArgument
// naming it and listing the known passes (for `dce`, `schedule` and `assign-buffers`, which
// left the pipeline, it also says why).
Result<PipelineResult> RunPipeline(const ir::Module& module, std::string_view spec,
                                   const PipelineOptions& options);

// Why this detrain cannot run `spec` as the detrain that wrote it did ("" when it can): a pass
// it does not know or no longer has, or has at another version ("fuse@2"; docs/passes.md, pass
// versions). A spec it can run gives the same stage 3 byte for byte. `unavailable` names spec
// elements ("fuse", "cse@2") to treat as passes it no longer runs (a verifier standing for a
// later detrain in tests).
std::string PipelineGap(std::string_view spec, const std::vector<std::string>& unavailable = {});

// The file name of pass `index`'s (1-based) output in a dump: "NN.pass.hlo", `pass` as the spec
// writes it.
std::string DumpName(size_t index, std::string_view pass);

// The known pass names, in the order docs/passes.md describes them.
std::vector<std::string> KnownPasses();

}  // namespace detrain::passes

#endif  // DETRAIN_COMPILER_PASSES_PIPELINE_H_
