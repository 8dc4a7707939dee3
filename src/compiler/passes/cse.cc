// cse — common subexpression elimination.
//
// What it does: (1) merges called computations that are identical (same parameters and the
// same instructions, compared structurally after their own callees are merged), so that e.g.
// every `add` combiner becomes one; (2) within each computation, replaces an instruction by an
// earlier one with the same opcode, shape, operands, attributes and constant bits. Every IR op
// is a pure function of its operands and attributes (all-reduce and threefry included), so two
// such instructions always hold the same bits and the rewrite is exact.
// What it does not do: merge parameters; reorder operands of commutative ops (add(a,b) and
// add(b,a) may differ in which NaN payload they return); look through algebraic identities
// (that is simplify's job).
// Pre: a verified module. Post: a verified module in which no two live instructions of a
// computation are structurally equal and no two reachable non-entry computations are.
#include <functional>
#include <string>
#include <unordered_map>

#include "compiler/ir/literal.h"
#include "compiler/passes/passes.h"
#include "compiler/passes/rewrite.h"

namespace detrain::passes {
namespace {

using ir::Computation;
using ir::Instruction;

// The key of one instruction: everything that determines its value, with operands named by
// `operand_name`. Called computations are named by address (and, during the sweep, operands by
// id): keys are only compared for equality, never printed or ordered by.
std::string InstructionKey(const Instruction& instr,
                           const std::function<std::string(const Instruction*)>& operand_name) {
  std::string key(ir::OpcodeName(instr.opcode));
  key += ' ' + instr.shape.ToString();
  if (instr.opcode == ir::Opcode::kParameter) key += " #" + std::to_string(instr.parameter_number);
  key += " (";
  for (const Instruction* op : instr.operands) key += operand_name(op) + ",";
  key += ")";
  auto comp_name = [](const Computation* c) {
    return std::to_string(reinterpret_cast<uintptr_t>(c));
  };
  for (const auto& [attr, value] : instr.attrs) {
    key += ' ';
    key += ir::AttrName(attr);
    key += '=' + ir::FormatAttrValue(attr, value, comp_name);
  }
  if (instr.opcode == ir::Opcode::kConstant) key += " bits=" + instr.literal.bytes();
  return key;
}

// Merges identical instructions of one computation (`order`: its PostOrder); returns the
// computation's structural key (the keys of its live instructions in canonical order after
// merging, and its root), or "" without `want_key`.
Result<std::string> CseComputation(Computation& c, const std::vector<Instruction*>& order,
                                   bool want_key) {
  std::unordered_map<std::string, Instruction*> seen;
  auto rule = [&](Instruction* instr) -> Result<Instruction*> {
    if (instr->opcode == ir::Opcode::kParameter) return nullptr;
    // Operands are already merged, so their ids identify their values.
    std::string key =
        InstructionKey(*instr, [](const Instruction* op) { return std::to_string(op->id); });
    auto [it, inserted] = seen.emplace(std::move(key), instr);
    return inserted ? nullptr : it->second;
  };
  DETRAIN_RETURN_IF_ERROR(RewriteComputation(c, rule, order));
  if (!want_key) return std::string();
  DETRAIN_ASSIGN_OR_RETURN(auto merged, c.PostOrder());
  std::vector<size_t> position(c.instructions().size());  // by id
  std::string body;
  for (size_t i = 0; i < merged.size(); ++i) {
    position[static_cast<size_t>(merged[i]->id)] = i;
    body += InstructionKey(*merged[i],
                           [&](const Instruction* op) {
                             return std::to_string(position[static_cast<size_t>(op->id)]);
                           }) +
            "\n";
  }
  return body + "root " + std::to_string(position[static_cast<size_t>(c.root()->id)]);
}

}  // namespace

Status EliminateCommonSubexpressionsInPlace(ir::Module& module) {
  DETRAIN_ASSIGN_OR_RETURN(MutableOrder order, MutableCanonicalOrder(module));
  std::unordered_map<const Computation*, const Computation*> merged_into;
  std::unordered_map<std::string, const Computation*> by_body;
  // Callees first, so that their merges are visible to their callers.
  for (size_t i = 0; i < order.computations.size(); ++i) {
    Computation* c = order.computations[i];
    for (Instruction* instr : order.instructions[i]) {
      for (auto& [attr, value] : instr->attrs) {
        auto it = value.computation ? merged_into.find(value.computation) : merged_into.end();
        if (it != merged_into.end()) value.computation = it->second;
      }
    }
    const bool entry = c == module.entry();  // merged with no other: its key is not needed
    DETRAIN_ASSIGN_OR_RETURN(std::string body, CseComputation(*c, order.instructions[i], !entry));
    if (entry) continue;
    auto [it, inserted] = by_body.emplace(body, c);
    if (!inserted) merged_into[c] = it->second;
  }
  return Compact(module);
}

PassOutput EliminateCommonSubexpressions(const ir::Module& module) {
  return OnCopy(module, EliminateCommonSubexpressionsInPlace);
}

}  // namespace detrain::passes
