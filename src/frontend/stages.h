// The stage chain of a .dt program (DESIGN.md §1): each stage's canonical bytes, from which its
// digest (SHA-256) is taken.
//
//   program  the .dt file's bytes                                         (stage 0)
//   source   "// detrain.source-graph.v1" header + the resolved configuration (canonical JSON)
//            + the canonical IR text of the loss of one shard              (stage 1)
//   hlo      canonical IR text of the train step                          (stage 2)
//   init     the parameter initialization plan: initializer and key of every parameter
//            (canonical JSON; the runtime draws the values with src/attest/prng)
//   eval     canonical IR text of the evaluation program (when there is a validation split)
//   opt-hlo  canonical IR text after the pass pipeline                   (stage 3)
//   plan     the CPU executable plan, deterministic protobuf bytes        (stage 4)
// Stages 3 and 4 are built from stage 2 by CompileProgram; the pipeline spec and every pass's
// (name, options, input, output) digests are kept in `pass_records` for the stage record.
//
// Compiling reads the data source: the split sizes fix the evaluation program's shape and
// `epochs` becomes a number of steps; the data files' SHA-256 digests go into the stage-1 header,
// so the chain commits to the data as well as to the program.
//
// Thread safety: pure function of the files. Determinism: every stage is a pure function of the
// program's and the data's bytes (tests/frontend/stages_test.cc checks repeated compiles).
#ifndef DETRAIN_FRONTEND_STAGES_H_
#define DETRAIN_FRONTEND_STAGES_H_

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "base/status.h"

namespace detrain::frontend {

struct Stage {
  std::string name;
  std::string bytes;
};

struct CompiledProgram {
  std::vector<Stage> stages;  // in chain order
  nlohmann::json config;      // the resolved configuration in the stage-1 header (.dt only)
  std::string pipeline;       // the pass pipeline spec (stage 3), when run
  nlohmann::json pass_records = nlohmann::json::array();  // [{pass, options/input/output sha256}]
  std::vector<std::pair<std::string, std::string>> pass_dumps;  // ("NN.pass.hlo", text)
  int64_t peak_bytes = 0, total_bytes = 0;  // buffer assignment of the plan
  const Stage* Find(const std::string& name) const;
};

struct CompileOptions {
  bool backend = true;   // build stages 3 and 4
  std::string pipeline;  // empty: passes::kDefaultPipeline
  int threads = 1;       // compiler threads; no stage depends on it
};

// Compiles the program at `path` through stage 2 (and eval). Errors are user-facing: a
// "file:line:col: error: ..." diagnostic for program errors, "file:line: ..." for data errors.
Result<CompiledProgram> CompileToHlo(const std::string& path);

// A .dt program or an .hlo file through every stage the options ask for.
Result<CompiledProgram> CompileProgram(const std::string& path, const CompileOptions& options);

}  // namespace detrain::frontend

#endif  // DETRAIN_FRONTEND_STAGES_H_
