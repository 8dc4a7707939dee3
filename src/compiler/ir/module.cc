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
  instructions_.push_back(std::move(instr));
  return instructions_.back().get();
}

std::vector<Instruction*> Computation::Parameters() const {
  std::vector<Instruction*> params;
  for (const auto& instr : instructions_) {
    if (instr->opcode == Opcode::kParameter) params.push_back(instr.get());
  }
  std::stable_sort(params.begin(), params.end(), [](const Instruction* a, const Instruction* b) {
    return a->parameter_number < b->parameter_number;
  });
  return params;
}

Result<std::vector<const Instruction*>> Computation::PostOrder() const {
  std::vector<const Instruction*> order;
  for (const Instruction* p : Parameters()) order.push_back(p);
  if (root_ == nullptr) return order;
  // 0 unvisited, 1 on the stack, 2 done. Iterative DFS: deep graphs must not overflow the stack.
  std::unordered_map<const Instruction*, int> state;
  for (const Instruction* p : order) state[p] = 2;
  if (state[root_] == 2) return order;  // the root is a parameter, already listed
  std::vector<std::pair<const Instruction*, size_t>> stack = {{root_, 0}};
  state[root_] = 1;
  while (!stack.empty()) {
    auto& [instr, next] = stack.back();
    if (next < instr->operands.size()) {
      const Instruction* operand = instr->operands[next++];
      int& s = state[operand];
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
    state[instr] = 2;
    order.push_back(instr);
    stack.pop_back();
  }
  return order;
}

Computation* Module::AddComputation(std::unique_ptr<Computation> computation) {
  computations_.push_back(std::move(computation));
  return computations_.back().get();
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
  if (entry_ == nullptr) return InvalidArgument("module '" + name_ + "' has no ENTRY computation");
  // Iterative DFS over the call graph (0 unvisited, 1 on the stack, 2 done): a chain of 50 000
  // computations calling each other must not overflow the native stack.
  struct Frame {
    const Computation* computation;
    std::vector<const Computation*> callees;  // in canonical instruction order
    size_t next = 0;
  };
  std::unordered_map<const Computation*, int> state;
  std::vector<const Computation*> order;
  std::vector<Frame> stack;
  auto push = [&](const Computation* c) -> Status {
    state[c] = 1;
    DETRAIN_ASSIGN_OR_RETURN(auto instrs, c->PostOrder());
    Frame frame{c, {}, 0};
    for (const Instruction* instr : instrs) {
      for (const Computation* callee : CalledComputations(*instr)) frame.callees.push_back(callee);
    }
    stack.push_back(std::move(frame));
    return Status::Ok();
  };
  DETRAIN_RETURN_IF_ERROR(push(entry_));
  while (!stack.empty()) {
    Frame& top = stack.back();
    if (top.next < top.callees.size()) {
      const Computation* callee = top.callees[top.next++];
      int s = state[callee];
      if (s == 1) {
        return InvalidArgument("computation '" + callee->name() + "' calls itself (recursion)");
      }
      if (s == 0) DETRAIN_RETURN_IF_ERROR(push(callee));
      continue;
    }
    state[top.computation] = 2;
    order.push_back(top.computation);
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
