// The pass pipeline as data (STYLE.md point 3; docs/passes.md): a spec string names the passes
// in order ("dce,cse,fold-constants,..."); RunPipeline verifies the module before the first pass
// and after each one, and records for every pass (name, options digest, input digest, output
// digest), where a digest is the SHA-256 of the canonical text (ir::ModuleFingerprint).
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
};

struct PipelineResult {
  std::unique_ptr<ir::Module> module;                      // the optimized module (stage 3)
  std::vector<PassRecord> records;                         // one per pass, in order
  std::vector<std::pair<std::string, std::string>> dumps;  // ("NN.pass-name.hlo", canonical text)
  int64_t peak_bytes = 0, total_bytes = 0;                 // from assign-buffers (0 if not run)
};

// Verifies before the first pass and after each; an unknown pass name is an InvalidArgument
// naming it and listing the known passes.
Result<PipelineResult> RunPipeline(const ir::Module& module, std::string_view spec,
                                   const PipelineOptions& options);

// The known pass names, in the order docs/passes.md describes them.
std::vector<std::string> KnownPasses();

}  // namespace detrain::passes

#endif  // DETRAIN_COMPILER_PASSES_PIPELINE_H_
