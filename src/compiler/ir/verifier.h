// The verifier: checks that a module is well formed before anything consumes it — an ENTRY
// computation, no cycles or recursion, operands in the same computation, parameters numbered
// 0..n-1, every op's arity, attributes (allowed and required, from ops.def) and shape rules
// (shape_inference.h), declared shapes equal to inferred ones, and all-reduce only where every
// replica runs it (not inside reduction combiners); the limits below on the call graph, and
// every result's element count and size (the memory budget, base/budget.h).
//
// Messages name the instruction and the rule broken; instructions parsed from text carry their
// location: "12:3: instruction 'add.5' (add): operands of add must have the same shape, ...".
//
// Thread safety: pure functions.
#ifndef DETRAIN_COMPILER_IR_VERIFIER_H_
#define DETRAIN_COMPILER_IR_VERIFIER_H_

#include <memory>
#include <string_view>

#include "base/status.h"
#include "compiler/ir/module.h"

namespace detrain::ir {

// Limits on the call graph (calls, fusions, combiners: every computation-valued attribute),
// docs/ir.md §3. The depth counts ENTRY as 1; the expanded size counts each instruction once
// per path from ENTRY to its computation.
inline constexpr int64_t kMaxCallDepth = 256;
inline constexpr int64_t kMaxExpandedInstructions = int64_t{1} << 22;

Status VerifyModule(const Module& module);

// VerifyModule, returning the module's CanonicalOrder, which it walks anyway (for a caller that
// prints the module next: PrintModule(module, order)).
Result<Module::Order> VerifyModuleInOrder(const Module& module);

// ParseModule followed by VerifyModule.
Result<std::unique_ptr<Module>> ParseAndVerify(std::string_view text);

}  // namespace detrain::ir

#endif  // DETRAIN_COMPILER_IR_VERIFIER_H_
