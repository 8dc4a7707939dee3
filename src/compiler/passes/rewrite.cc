// See rewrite.h.
#include "compiler/passes/rewrite.h"

#include <cstring>
#include <unordered_map>

namespace detrain::passes {

using ir::Computation;
using ir::Instruction;
using ir::Module;

Result<std::unique_ptr<Module>> CloneModule(const Module& module) {
  DETRAIN_ASSIGN_OR_RETURN(auto comps, module.ComputationPostOrder());
  auto out = std::make_unique<Module>(module.name());
  std::unordered_map<const Computation*, Computation*> comp_map;
  for (const Computation* c : comps) {
    Computation* nc = out->AddComputation(std::make_unique<Computation>(c->name()));
    comp_map[c] = nc;
    DETRAIN_ASSIGN_OR_RETURN(auto order, c->PostOrder());
    std::unordered_map<const Instruction*, Instruction*> instr_map;
    for (const Instruction* instr : order) {
      auto copy = std::make_unique<Instruction>(*instr);
      for (Instruction*& op : copy->operands) op = instr_map.at(op);
      for (auto& [attr, value] : copy->attrs) {
        if (value.computation != nullptr) value.computation = comp_map.at(value.computation);
      }
      instr_map[instr] = nc->AddInstruction(std::move(copy));
    }
    if (c->root() != nullptr) nc->set_root(instr_map.at(c->root()));
    if (c == module.entry()) out->set_entry(nc);
  }
  return out;
}

Result<std::vector<Instruction*>> MutablePostOrder(Computation& computation) {
  DETRAIN_ASSIGN_OR_RETURN(auto order, computation.PostOrder());
  std::vector<Instruction*> out;
  out.reserve(order.size());
  // The caller owns `computation` mutably; PostOrder only hands out const views of it.
  for (const Instruction* instr : order) out.push_back(const_cast<Instruction*>(instr));
  return out;
}

Result<std::vector<Computation*>> MutableComputations(Module& module) {
  DETRAIN_ASSIGN_OR_RETURN(auto comps, module.ComputationPostOrder());
  std::vector<Computation*> out;
  for (const Computation* c : comps) out.push_back(const_cast<Computation*>(c));
  return out;
}

Status RewriteComputation(Computation& computation, const RewriteRule& rule) {
  DETRAIN_ASSIGN_OR_RETURN(auto order, MutablePostOrder(computation));
  std::unordered_map<const Instruction*, Instruction*> replaced;
  auto resolve = [&](Instruction* x) {
    auto it = replaced.find(x);
    return it == replaced.end() ? x : it->second;
  };
  for (Instruction* instr : order) {
    for (Instruction*& op : instr->operands) op = resolve(op);
    DETRAIN_ASSIGN_OR_RETURN(Instruction * replacement, rule(instr));
    if (replacement != nullptr && replacement != instr) replaced[instr] = resolve(replacement);
  }
  computation.set_root(resolve(computation.root()));
  return Status::Ok();
}

bool DependsOn(const ir::Instruction* x,
               const std::unordered_set<const ir::Instruction*>& members) {
  std::unordered_set<const ir::Instruction*> seen;
  std::vector<const ir::Instruction*> stack = {x};
  while (!stack.empty()) {
    const ir::Instruction* i = stack.back();
    stack.pop_back();
    if (members.count(i)) return true;
    if (!seen.insert(i).second) continue;
    for (const ir::Instruction* op : i->operands) stack.push_back(op);
  }
  return false;
}

Instruction* AddInstruction(Computation& computation, ir::Opcode op, ir::Shape shape,
                            std::vector<Instruction*> operands, ir::AttrMap attrs) {
  auto instr = std::make_unique<Instruction>();
  instr->opcode = op;
  instr->shape = std::move(shape);
  instr->operands = std::move(operands);
  instr->attrs = std::move(attrs);
  return computation.AddInstruction(std::move(instr));
}

std::optional<std::string> SplatBits(const Instruction& instr) {
  if (instr.opcode == ir::Opcode::kBroadcast) {
    const Instruction& x = *instr.operands[0];
    if (x.opcode == ir::Opcode::kConstant && x.shape.rank() == 0) return x.literal.bytes();
    return std::nullopt;
  }
  if (instr.opcode != ir::Opcode::kConstant || instr.shape.is_tuple()) return std::nullopt;
  const std::string& bytes = instr.literal.bytes();
  size_t size = static_cast<size_t>(ir::ElementTypeByteSize(instr.shape.type()));
  if (bytes.size() < size) return std::nullopt;
  for (size_t i = size; i < bytes.size(); i += size) {
    if (std::memcmp(bytes.data(), bytes.data() + i, size) != 0) return std::nullopt;
  }
  return bytes.substr(0, size);
}

std::string F32Bits(float value) {
  std::string out(4, '\0');
  std::memcpy(out.data(), &value, 4);
  return out;
}

std::string IntBits(ir::ElementType type, int64_t value) {
  size_t size = static_cast<size_t>(ir::ElementTypeByteSize(type));
  std::string out(size, '\0');
  for (size_t i = 0; i < size; ++i)
    out[i] = static_cast<char>((static_cast<uint64_t>(value) >> (8 * i)) & 0xff);
  return out;
}

}  // namespace detrain::passes
