// The programs a .dt file compiles to (DESIGN.md §1):
//   stage 1  source graph: the loss of one shard (B = batch / shards), forward only;
//   stage 2  train step: value-and-grad over S canonical shards combined by the pairwise tree,
//            then the optimizer update;
//   eval     loss (dropout off) and, with a predict function, accuracy on a whole split.
// Parameter initialization is not an IR program: the runtime draws each parameter with the
// JAX-compatible initializers of src/attest/prng from the key fold_in(fold_in(key(seed), 0), i);
// docs/language.md §Keys says why and lists every key the run derives.
//
// Train step signature (parameters in this order; docs/language.md §The train step):
//   p_0..p_{n-1}          the program's parameters, declaration order
//   s_{i,k}               optimizer state, parameter-major (slot k of parameter i)
//   count: s32[]          updates done so far
//   learning_rate: f32[]  this update's learning rate (runtime/train/learning_rate.h)
//   batch inputs          the loss's inputs with B = the global batch; the last is the labels
//                         (the data source binds features, then labels, in this order)
//   key: u32[2]           this step's key (shard s uses fold_in(key, s)); present even when
//                         the loss takes no key
// returns tuple(p'_0.., s'_{0,0}.., count', loss).
//
// Thread safety: each call builds a new module. Determinism: pure function of the checked
// program and the options.
#ifndef DETRAIN_FRONTEND_TRAIN_STEP_H_
#define DETRAIN_FRONTEND_TRAIN_STEP_H_

#include <memory>
#include <vector>

#include "compiler/ir/module.h"
#include "compiler/plan/entry_signature.h"
#include "frontend/check.h"
#include "frontend/lower.h"

namespace detrain::frontend {

struct ProgramShape {
  int64_t batch = 0;   // global batch
  int64_t shards = 1;  // S
  PrngMode prng = PrngMode::kPartitionable;
};

// Reads batch, shards and prng from the checked configuration.
ProgramShape ShapeOf(const CheckedProgram& program);

// The role of every parameter of LowerTrainStep's entry, in order (the signature above), and
// shards = S. tests/driver checks it against the lowered module's parameter names.
plan::EntrySignature TrainStepSignature(const CheckedProgram& program);

// The loss's batch inputs, in order: every argument but a trailing key.
std::vector<const FuncArg*> BatchInputs(const FuncDecl& loss);

Result<std::unique_ptr<ir::Module>> LowerSourceGraph(const CheckedProgram& program);
Result<std::unique_ptr<ir::Module>> LowerTrainStep(const CheckedProgram& program);
// `rows`: the size of the split evaluated in one call.
Result<std::unique_ptr<ir::Module>> LowerEval(const CheckedProgram& program, int64_t rows);

}  // namespace detrain::frontend

#endif  // DETRAIN_FRONTEND_TRAIN_STEP_H_
