// ScalarBody (expansions.h): a computation of scalars — a reduce's combiner, a sort's
// comparator — applied elementwise to whole arrays by the importer's expansions.
#include <unordered_map>

#include "compiler/xla_import/expansions.h"

namespace detrain::xla_import {

Status ScalarBody::Init(const Computation& f, size_t max_instructions, const std::string& what) {
  f_ = &f;
  params_ = f.Parameters();
  const Instruction* root = f.root();
  if (root == nullptr) return InvalidArgument(what + "has no root");
  outputs_.clear();
  if (root->opcode == Opcode::kTuple) {
    outputs_.assign(root->operands.begin(), root->operands.end());
  } else {
    outputs_.push_back(root);
  }
  DETRAIN_ASSIGN_OR_RETURN(std::vector<const Instruction*> order, f.PostOrder());
  if (order.size() > max_instructions) {
    return InvalidArgument(what + "has more than " + std::to_string(max_instructions) +
                           " instructions");
  }
  body_.clear();
  for (const Instruction* i : order) {
    if (i == root && root->opcode == Opcode::kTuple) continue;
    const OpCategory c = OpcodeCategory(i->opcode);
    const bool scalar = !i->shape.is_tuple() && i->shape.rank() == 0;
    const bool elementwise = c == OpCategory::kUnary || c == OpCategory::kBinary ||
                             c == OpCategory::kElementwise || i->opcode == Opcode::kParameter ||
                             i->opcode == Opcode::kConstant;
    if (!elementwise || !scalar) {
      return InvalidArgument(what + "may hold only elementwise ops on scalars; '" + i->name +
                             "' is " + std::string(OpcodeName(i->opcode)));
    }
    body_.push_back(i);
  }
  return Status::Ok();
}

std::vector<Instruction*> ScalarBody::Apply(Computation& comp, const Instruction& like,
                                            const std::vector<Instruction*>& args,
                                            const std::string& suffix, int* serial) const {
  const std::vector<int64_t> dims = args.at(0)->shape.dims();
  auto add = [&](Opcode opcode, Shape shape, std::vector<Instruction*> operands) {
    return AddBeside(comp, like, opcode, std::move(shape), std::move(operands),
                     suffix + std::to_string((*serial)++));
  };
  std::unordered_map<const Instruction*, Instruction*> value;
  for (size_t p = 0; p < params_.size(); ++p) value[params_[p]] = args.at(p);
  for (const Instruction* i : body_) {
    if (i->opcode == Opcode::kParameter) continue;
    if (i->opcode == Opcode::kConstant) {
      Instruction* c = add(Opcode::kConstant, i->shape, {});
      c->literal = i->literal;
      if (!dims.empty()) {
        c = add(Opcode::kBroadcast, Shape(i->shape.type(), dims), {c});
        c->attrs[Attr::kDimensions].ints = {};
      }
      value[i] = c;
      continue;
    }
    std::vector<Instruction*> operands;
    for (const Instruction* o : i->operands) operands.push_back(value.at(o));
    Instruction* r = add(i->opcode, Shape(i->shape.type(), dims), std::move(operands));
    r->attrs = i->attrs;
    value[i] = r;
  }
  std::vector<Instruction*> out;
  for (const Instruction* o : outputs_) out.push_back(value.at(o));
  return out;
}

}  // namespace detrain::xla_import
