// See module.h.
#include "compiler/ir/module.h"

#include <algorithm>
#include <unordered_map>

namespace detrain::ir {

const AttrValue* Instruction::FindAttr(Attr a) const {
  auto it = attrs.find(a);
  return it == attrs.end() ? nullptr : &it->second;
}

int64_t Instruction::IntAttr(Attr a) const {
  const AttrValue* v = FindAttr(a);
  return v ? v->i : 0;
}

const std::vector<int64_t>& Instruction::IntsAttr(Attr a) const {
  static const std::vector<int64_t> kEmpty;
  const AttrValue* v = FindAttr(a);
  return v ? v->ints : kEmpty;
}

const Computation* Instruction::ComputationAttr(Attr a) const {
  const AttrValue* v = FindAttr(a);
  return v ? v->computation : nullptr;
}

Instruction* Computation::AddInstruction(std::unique_ptr<Instruction> instr) {
  instr->id = static_cast<int64_t>(instructions_.size());
  instructions_.push_back(std::move(instr));
  return instructions_.back().get();
}

void Computation::KeepOnly(const std::vector<const Instruction*>& keep) {
  std::vector<std::unique_ptr<Instruction>> kept;
  kept.reserve(keep.size());
  for (const Instruction* instr : keep) {
    kept.push_back(std::move(instructions_[static_cast<size_t>(instr->id)]));
    kept.back()->id = static_cast<int64_t>(kept.size() - 1);
  }
  instructions_.swap(kept);  // the rest are destroyed with `kept`
}

std::vector<Instruction*> Computation::Parameters() const {
  std::vector<Instruction*> params;
  for (const auto& instr : instructions_) {
    if (instr->opcode == Opcode::kParameter) params.push_back(instr.get());
  }
  auto by_number = [](const Instruction* a, const Instruction* b) {
    return a->parameter_number < b->parameter_number;
  };
  if (!std::is_sorted(params.begin(), params.end(), by_number)) {  // as every pass leaves them
    std::stable_sort(params.begin(), params.end(), by_number);
  }
  return params;
}

Result<std::vector<const Instruction*>> Computation::PostOrder() const {
  std::vector<const Instruction*> order;
  order.reserve(instructions_.size());
  for (const Instruction* p : Parameters()) order.push_back(p);
  if (root_ == nullptr) return order;
  // By id: 0 unvisited, 1 on the stack, 2 done. Iterative DFS: deep graphs must not overflow
  // the stack. An operand from another computation (a verifier error) has an id that may
  // collide; Owns catches it so that the walk never indexes past the table.
  std::vector<uint8_t> state(instructions_.size(), 0);
  auto foreign = [&](const Instruction* user) {
    return InvalidArgument("computation '" + name_ + "': an operand of '" + user->name +
                           "' is not one of its instructions");
  };
  for (const Instruction* p : order) state[static_cast<size_t>(p->id)] = 2;
  if (!Owns(root_))
    return InvalidArgument("computation '" + name_ + "': its root is not one of its instructions");
  if (state[static_cast<size_t>(root_->id)] == 2) return order;  // the root is a parameter
  std::vector<std::pair<const Instruction*, size_t>> stack = {{root_, 0}};
  state[static_cast<size_t>(root_->id)] = 1;
  while (!stack.empty()) {
    auto& [instr, next] = stack.back();
    if (next < instr->operands.size()) {
      const Instruction* operand = instr->operands[next++];
      if (!Owns(operand)) return foreign(instr);
      uint8_t& s = state[static_cast<size_t>(operand->id)];
      if (s == 1) {
        std::string where = instr->loc.line > 0 ? std::to_string(instr->loc.line) + ":" +
                                                      std::to_string(instr->loc.column) + ": "
                                                : "";
        return InvalidArgument(where + "computation '" + name_ +
                               "' has a cycle through an operand of '" + instr->name + "'");
      }
      if (s == 0) {
        s = 1;
        stack.push_back({operand, 0});
      }
      continue;
    }
    state[static_cast<size_t>(instr->id)] = 2;
    order.push_back(instr);
    stack.pop_back();
  }
  return order;
}

Computation* Module::AddComputation(std::unique_ptr<Computation> computation) {
  computation->set_id(static_cast<int64_t>(computations_.size()));
  computations_.push_back(std::move(computation));
  return computations_.back().get();
}

void Module::KeepOnly(const std::vector<const Computation*>& keep) {
  std::vector<std::unique_ptr<Computation>> kept;
  kept.reserve(keep.size());
  for (const Computation* c : keep) {
    kept.push_back(std::move(computations_[static_cast<size_t>(c->id())]));
    kept.back()->set_id(static_cast<int64_t>(kept.size() - 1));
  }
  computations_.swap(kept);
}

std::vector<const Computation*> CalledComputations(const Instruction& instr) {
  std::vector<const Computation*> called;
  for (const auto& [attr, value] : instr.attrs) {
    if (AttrKindOf(attr) == AttrKind::kComputation && value.computation) {
      called.push_back(value.computation);
    }
  }
  return called;
}

Result<std::vector<const Computation*>> Module::ComputationPostOrder() const {
  DETRAIN_ASSIGN_OR_RETURN(Order order, CanonicalOrder());
  return std::move(order.computations);
}

Result<Module::Order> Module::CanonicalOrder() const {
  if (entry_ == nullptr) return InvalidArgument("module '" + name_ + "' has no ENTRY computation");
  // Iterative DFS over the call graph (0 unvisited, 1 on the stack, 2 done): a chain of 50 000
  // computations calling each other must not overflow the native stack.
  struct Frame {
    const Computation* computation;
    std::vector<const Instruction*> instructions;  // its PostOrder
    std::vector<const Computation*> callees;       // in canonical instruction order
    size_t next = 0;
  };
  // By computation id; a computation of another module (a verifier error) is looked up by
  // address instead, so that its id cannot alias one of ours.
  std::vector<int> state(computations_.size(), 0);
  std::unordered_map<const Computation*, int> foreign_state;
  auto state_of = [&](const Computation* c) -> int& {
    return Owns(c) ? state[static_cast<size_t>(c->id())] : foreign_state[c];
  };
  Order order;
  std::vector<Frame> stack;
  auto push = [&](const Computation* c) -> Status {
    state_of(c) = 1;
    DETRAIN_ASSIGN_OR_RETURN(auto instrs, c->PostOrder());
    Frame frame{c, std::move(instrs), {}, 0};
    for (const Instruction* instr : frame.instructions) {
      for (const auto& [attr, value] : instr->attrs) {  // CalledComputations, in place
        if (AttrKindOf(attr) == AttrKind::kComputation && value.computation) {
          frame.callees.push_back(value.computation);
        }
      }
    }
    stack.push_back(std::move(frame));
    return Status::Ok();
  };
  DETRAIN_RETURN_IF_ERROR(push(entry_));
  while (!stack.empty()) {
    Frame& top = stack.back();
    if (top.next < top.callees.size()) {
      const Computation* callee = top.callees[top.next++];
      int s = state_of(callee);
      if (s == 1) {
        return InvalidArgument("computation '" + callee->name() + "' calls itself (recursion)");
      }
      if (s == 0) DETRAIN_RETURN_IF_ERROR(push(callee));
      continue;
    }
    state_of(top.computation) = 2;
    order.computations.push_back(top.computation);
    order.instructions.push_back(std::move(top.instructions));
    stack.pop_back();
  }
  return order;
}

std::string DebugTables::Describe(int64_t frame_id) const {
  auto frame = stack_frames.find(frame_id);
  if (frame == stack_frames.end()) return "";
  auto loc = file_locations.find(frame->second.file_location_id);
  if (loc == file_locations.end()) return "";
  auto file = file_names.find(loc->second.file_name_id);
  auto function = function_names.find(loc->second.function_name_id);
  std::string out = (file == file_names.end() ? std::string("?") : file->second) + ":" +
                    std::to_string(loc->second.line);
  if (function != function_names.end()) out += " (" + function->second + ")";
  return out;
}

}  // namespace detrain::ir
