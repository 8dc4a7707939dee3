// inline — replaces every `call`, and every `fusion` already in its input, by the body of the
// computation it calls.
//
// What it does: for each `call(args), to_apply=C`, copies C's live instructions into the
// calling computation with C's parameter i replaced by args[i], and uses the copy of C's root
// in place of the call. Callees are inlined before callers, so nested calls disappear in one
// run. After it the entry is flat, which is what lets cse merge work repeated in every call
// (e.g. the per-shard value-and-grad bodies of a train step) and lets buffer assignment see
// every value.
// A fusion in the input comes from an optimized XLA module (issue 19): its value is by
// definition its called computation applied to the operands, exactly as a call's, and XLA's
// grouping (which may put a dot or a broadcast in a fused body) is not detrain's, so it is
// inlined and the fuse pass groups the ops again by its own rules.
// What it does not do: inline reduction combiners (those are not calls); change any value (a
// call is by definition its body evaluated on its arguments).
// Pre: a verified module. Post: a verified module with no `call` or `fusion` reachable from
// ENTRY.
#include <unordered_map>

#include "compiler/passes/passes.h"
#include "compiler/passes/rewrite.h"

namespace detrain::passes {
namespace {

using ir::Instruction;

Result<Instruction*> InlineOne(ir::Computation& caller, Instruction* call) {
  const ir::Computation* callee = call->ComputationAttr(
      call->opcode == ir::Opcode::kFusion ? ir::Attr::kCalls : ir::Attr::kToApply);
  DETRAIN_ASSIGN_OR_RETURN(auto order, callee->PostOrder());
  std::unordered_map<const Instruction*, Instruction*> copies;
  for (const Instruction* instr : order) {
    if (instr->opcode == ir::Opcode::kParameter) {
      copies[instr] = call->operands.at(static_cast<size_t>(instr->parameter_number));
      continue;
    }
    auto copy = std::make_unique<Instruction>(*instr);
    copy->name.clear();
    for (Instruction*& op : copy->operands) op = copies.at(op);
    copies[instr] = caller.AddInstruction(std::move(copy));
  }
  return copies.at(callee->root());
}

}  // namespace

Status InlineCallsInPlace(ir::Module& module) {
  DETRAIN_ASSIGN_OR_RETURN(MutableOrder order, MutableCanonicalOrder(module));
  // Callees first: their own calls are already inlined.
  for (size_t i = 0; i < order.computations.size(); ++i) {
    ir::Computation* c = order.computations[i];
    auto rule = [&](Instruction* instr) -> Result<Instruction*> {
      if (instr->opcode != ir::Opcode::kCall && instr->opcode != ir::Opcode::kFusion) {
        return nullptr;
      }
      return InlineOne(*c, instr);
    };
    DETRAIN_RETURN_IF_ERROR(RewriteComputation(*c, rule, order.instructions[i]));
  }
  return Compact(module);
}

PassOutput InlineCalls(const ir::Module& module) { return OnCopy(module, InlineCallsInPlace); }

}  // namespace detrain::passes
