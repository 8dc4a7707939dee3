// See rewrite.h.
#include "compiler/passes/rewrite.h"

#include <cstring>
#include <unordered_map>
#include <vector>

namespace detrain::passes {

using ir::Computation;
using ir::Instruction;
using ir::Module;

Result<std::unique_ptr<Module>> CloneModule(const Module& module) {
  DETRAIN_ASSIGN_OR_RETURN(Module::Order canonical, module.CanonicalOrder());
  auto out = std::make_unique<Module>(module.name());
  std::unordered_map<const Computation*, Computation*> comp_map;
  for (size_t ci = 0; ci < canonical.computations.size(); ++ci) {
    const Computation* c = canonical.computations[ci];
    const std::vector<const Instruction*>& order = canonical.instructions[ci];
    Computation* nc = out->AddComputation(std::make_unique<Computation>(c->name()));
    comp_map[c] = nc;
    std::vector<Instruction*> copy_of(c->instructions().size(), nullptr);  // by id
    for (const Instruction* instr : order) {
      auto copy = std::make_unique<Instruction>(*instr);
      for (Instruction*& op : copy->operands) op = copy_of[static_cast<size_t>(op->id)];
      for (auto& [attr, value] : copy->attrs) {
        if (value.computation != nullptr) value.computation = comp_map.at(value.computation);
      }
      copy_of[static_cast<size_t>(instr->id)] = nc->AddInstruction(std::move(copy));
    }
    if (c->root() != nullptr) nc->set_root(copy_of[static_cast<size_t>(c->root()->id)]);
    if (c == module.entry()) out->set_entry(nc);
  }
  return out;
}

Status Compact(Module& module) {
  DETRAIN_ASSIGN_OR_RETURN(Module::Order order, module.CanonicalOrder());
  for (const Computation* c : order.computations) {
    if (!module.Owns(c)) {
      return Internal("computation '" + c->name() + "' is called but belongs to another module");
    }
  }
  for (size_t i = 0; i < order.computations.size(); ++i) {
    // Only this module's computations are reachable from its entry in a verified module; the
    // const_cast is the caller's ownership of `module`.
    const_cast<Computation*>(order.computations[i])->KeepOnly(order.instructions[i]);
  }
  module.KeepOnly(order.computations);
  return Status::Ok();
}

Result<std::unique_ptr<Module>> OnCopy(const Module& module, ModuleEdit edit) {
  DETRAIN_ASSIGN_OR_RETURN(auto copy, CloneModule(module));
  DETRAIN_RETURN_IF_ERROR(edit(*copy));
  return copy;
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

Result<MutableOrder> MutableCanonicalOrder(Module& module) {
  DETRAIN_ASSIGN_OR_RETURN(Module::Order order, module.CanonicalOrder());
  // The caller owns `module` mutably; CanonicalOrder only hands out const views of it.
  MutableOrder out;
  for (size_t i = 0; i < order.computations.size(); ++i) {
    out.computations.push_back(const_cast<Computation*>(order.computations[i]));
    std::vector<Instruction*>& instrs = out.instructions.emplace_back();
    instrs.reserve(order.instructions[i].size());
    for (const Instruction* x : order.instructions[i])
      instrs.push_back(const_cast<Instruction*>(x));
  }
  return out;
}

Status RewriteComputation(Computation& computation, const RewriteRule& rule) {
  DETRAIN_ASSIGN_OR_RETURN(auto order, MutablePostOrder(computation));
  return RewriteComputation(computation, rule, order);
}

Status RewriteComputation(Computation& computation, const RewriteRule& rule,
                          const std::vector<Instruction*>& order) {
  // By id; instructions the rule adds (ids past the table) are never replaced.
  std::vector<Instruction*> replaced(computation.instructions().size(), nullptr);
  auto resolve = [&](Instruction* x) {
    const size_t id = static_cast<size_t>(x->id);
    return id < replaced.size() && replaced[id] != nullptr ? replaced[id] : x;
  };
  for (Instruction* instr : order) {
    for (Instruction*& op : instr->operands) op = resolve(op);
    DETRAIN_ASSIGN_OR_RETURN(Instruction * replacement, rule(instr));
    if (replacement != nullptr && replacement != instr) {
      replaced[static_cast<size_t>(instr->id)] = resolve(replacement);
    }
  }
  computation.set_root(resolve(computation.root()));
  return Status::Ok();
}

bool DependsOn(const Instruction* x, const std::vector<const Instruction*>& members,
               DependenceScratch* scratch) {
  if (members.empty()) return false;
  scratch->Reset();
  for (const Instruction* m : members) scratch->Mark(m, DependenceScratch::kMember);
  std::vector<const Instruction*>& stack = scratch->stack;
  stack.assign(1, x);
  while (!stack.empty()) {
    const Instruction* i = stack.back();
    stack.pop_back();
    const uint32_t mark = scratch->MarkOf(i);
    if (mark == DependenceScratch::kMember) return true;
    if (mark == DependenceScratch::kSeen) continue;
    scratch->Mark(i, DependenceScratch::kSeen);
    for (const Instruction* op : i->operands) stack.push_back(op);
  }
  return false;
}

void DependenceScratch::Reset() {
  if (++generation_ == 0) {  // wrapped: forget every stale stamp
    stamp_.assign(stamp_.size(), 0);
    generation_ = 1;
  }
}

void DependenceScratch::Mark(const Instruction* x, uint32_t mark) {
  const size_t id = static_cast<size_t>(x->id);
  if (id >= stamp_.size()) {
    stamp_.resize(id + 1 + id / 2, 0);
    mark_.resize(stamp_.size(), 0);
  }
  stamp_[id] = generation_;
  mark_[id] = mark;
}

uint32_t DependenceScratch::MarkOf(const Instruction* x) const {
  const size_t id = static_cast<size_t>(x->id);
  return id < stamp_.size() && stamp_[id] == generation_ ? mark_[id] : kNone;
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
