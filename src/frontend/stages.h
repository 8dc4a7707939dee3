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
//   opt-hlo, plan  (stages 3 and 4) are added by the compiler pipeline.
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
  nlohmann::json config;      // the resolved configuration in the stage-1 header
  const Stage* Find(const std::string& name) const;
};

// Compiles the program at `path` through stage 2 (and eval). Errors are user-facing: a
// "file:line:col: error: ..." diagnostic for program errors, "file:line: ..." for data errors.
Result<CompiledProgram> CompileToHlo(const std::string& path);

}  // namespace detrain::frontend

#endif  // DETRAIN_FRONTEND_STAGES_H_
