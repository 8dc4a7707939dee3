// schedule — fixes the execution order.
//
// What it does: makes each computation's instruction list its execution order, which is the
// canonical order (Computation::PostOrder: parameters by number, then depth-first post-order
// from the root, operands left to right). That order is a pure function of the graph, so the
// schedule is deterministic and the canonical text *is* the schedule: instruction k of a
// computation in the text runs k-th. assign-buffers and the CPU plan (codegen/cpu) execute it.
// What it does not do: search for a memory-minimizing order (a different order could not be
// written in canonical text, which fixes the order; DFS post-order already finishes one
// operand's subtree before starting the next, which keeps few values live); change the graph.
// Pre: a verified module. Post: a verified module with the same canonical text, whose
// instruction lists hold exactly the live instructions in execution order.
#include "compiler/passes/passes.h"
#include "compiler/passes/rewrite.h"

namespace detrain::passes {

PassOutput Schedule(const ir::Module& module) { return CloneModule(module); }

}  // namespace detrain::passes
