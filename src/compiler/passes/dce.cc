// dce — dead code elimination.
//
// What it does: drops every instruction the root of its computation does not depend on, and
// every computation ENTRY does not reach, so that the in-memory module holds exactly the program
// (codegen and buffer assignment walk instruction lists and must not see dead values).
// What it does not do: remove parameters (a computation's parameters are its signature, and
// ENTRY's are the program's inputs), or instructions with effects (the IR has none: every op
// is a pure function of its operands, all-reduce included — it runs on every replica or none).
// The canonical text already omits dead code, so this pass never changes the text or the
// module fingerprint; it changes what later passes and codegen iterate.
// Pre: a verified module. Post: a verified module with the same canonical text.
#include "compiler/passes/passes.h"
#include "compiler/passes/rewrite.h"

namespace detrain::passes {

PassOutput EliminateDeadCode(const ir::Module& module) { return CloneModule(module); }

}  // namespace detrain::passes
