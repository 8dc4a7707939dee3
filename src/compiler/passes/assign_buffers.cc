// assign-buffers — liveness-based buffer assignment over the schedule (buffer_assignment.h).
//
// What it does: computes the assignment of every array value of the entry to an arena slice
// (AssignBuffers) and checks that it succeeds; RunPipeline reports its peak (arena) bytes and
// the naive sum of all buffers. The assignment is a pure function of the scheduled module, so
// it is not stored in the IR text: codegen/cpu recomputes the same one and writes it into the
// plan (stage 4), where it is hashed.
// What it does not do: change the module (its output text equals its input text); alias an
// instruction's output with an operand buffer (no in-place updates).
// Pre: a verified module, scheduled (run `schedule` first so the instruction lists are the
// execution order; the order itself is the canonical one either way). Post: the same module.
#include "compiler/passes/buffer_assignment.h"
#include "compiler/passes/passes.h"
#include "compiler/passes/rewrite.h"

namespace detrain::passes {

PassOutput AssignBuffersPass(const ir::Module& module) {
  DETRAIN_ASSIGN_OR_RETURN(auto out, CloneModule(module));
  DETRAIN_RETURN_IF_ERROR(AssignBuffers(*out).status());
  return out;
}

}  // namespace detrain::passes
