// Helpers shared by the VJP rules (see vjp.h).
#include "frontend/autodiff/vjp.h"

namespace detrain::frontend::autodiff {

ir::Instruction* Like(VjpArgs& a, ir::Instruction* t, double value) {
  return a.e.Full(t->shape, value);
}

ir::Instruction* Bin(VjpArgs& a, ir::Opcode op, ir::Instruction* l, ir::Instruction* r) {
  return a.b().Binary(op, l, r);
}

ir::Instruction* Un(VjpArgs& a, ir::Opcode op, ir::Instruction* x) { return a.b().Unary(op, x); }

std::optional<ir::Opcode> CombinerOp(const ir::Computation* c) {
  if (c == nullptr || c->root() == nullptr) return std::nullopt;
  const ir::Instruction* root = c->root();
  auto params = c->Parameters();
  if (!ir::AsBinaryOp(root->opcode) || params.size() != 2 || root->operands.size() != 2) {
    return std::nullopt;
  }
  bool direct = root->operands[0] == params[0] && root->operands[1] == params[1];
  bool swapped = root->operands[0] == params[1] && root->operands[1] == params[0];
  if (!direct && !swapped) return std::nullopt;
  return root->opcode;
}

std::vector<int64_t> InversePermutation(const std::vector<int64_t>& perm) {
  std::vector<int64_t> inv(perm.size());
  for (size_t i = 0; i < perm.size(); ++i)
    inv[static_cast<size_t>(perm[i])] = static_cast<int64_t>(i);
  return inv;
}

std::vector<Contribution> PerOperand(const VjpArgs& a, std::vector<ir::Instruction*> values) {
  std::vector<Contribution> out(a.fwd->operands.size());
  for (size_t i = 0; i < out.size() && i < values.size(); ++i) {
    if (a.active[i]) out[i].value = values[i];
  }
  return out;
}

}  // namespace detrain::frontend::autodiff
