// Optimizer updates as IR, with optax's semantics (docs/optimizers.md): sgd, momentum (with
// Nesterov), adam, adamw, each optionally after clip_by_global_norm.
//
// The state is per parameter: sgd none, momentum one trace, adam/adamw two moments (mu, nu),
// all f32 and shaped like the parameter, plus one s32[] update count shared by all. The learning
// rate enters as an f32[] value (runtime/train/learning_rate.h computes it for each step).
//
// Determinism: a fixed sequence of IR ops per element; the global norm sums per-parameter
// reductions (canonical reduce order) in declaration order starting from 0, as optax's
// tree reduction does.
// Thread safety: builds into the given emitter's computation.
#ifndef DETRAIN_FRONTEND_OPTIMIZER_H_
#define DETRAIN_FRONTEND_OPTIMIZER_H_

#include <vector>

#include "frontend/emit.h"
#include "frontend/run_config.h"

namespace detrain::frontend {

// (State tensors per parameter: OptimizerSlots in run_config.h.)

struct OptimizerIo {
  std::vector<ir::Instruction*> params;
  std::vector<ir::Instruction*> grads;
  std::vector<std::vector<ir::Instruction*>> state;  // [param][slot]
  ir::Instruction* count = nullptr;                  // s32[]: updates done so far
  ir::Instruction* learning_rate = nullptr;          // f32[]
};

// Emits one update. Returns the new parameters, state and count in the same layout.
Result<OptimizerIo> EmitOptimizerUpdate(Emitter& e, const OptimizerConfig& optimizer,
                                        const OptimizerIo& in);

}  // namespace detrain::frontend

#endif  // DETRAIN_FRONTEND_OPTIMIZER_H_
