// bitcast between layouts (expansions.h ExpandBitcast; docs/ir.md "HLO text").
//
// A layout says how a value lies in memory; bitcast reinterprets memory, so its value is the
// operand's elements in the operand's memory order, read back in the result's. With P the
// major-to-minor order of a layout: transpose(x, P_x) lists x in memory order, a reshape gives
// the result's dimensions in memory order, and the transpose that undoes P_y gives the result.
// Between row-major layouts both transposes are the identity and it is a reshape.
#include <algorithm>
#include <vector>

#include "compiler/xla_import/expansions.h"

namespace detrain::xla_import {
namespace {

bool IsIdentity(const std::vector<int64_t>& p) {
  for (size_t i = 0; i < p.size(); ++i) {
    if (p[i] != static_cast<int64_t>(i)) return false;
  }
  return true;
}

Shape Permuted(const Shape& s, const std::vector<int64_t>& p) {
  std::vector<int64_t> dims;
  for (int64_t d : p) dims.push_back(s.dims()[static_cast<size_t>(d)]);
  return Shape(s.type(), dims);
}

}  // namespace

Status ExpandBitcast(Computation& comp, Instruction& instr, std::vector<int64_t> operand_m2m,
                     std::vector<int64_t> result_m2m) {
  Instruction* operand = instr.operands[0];
  if ((operand_m2m.empty() && operand->shape.rank() > 0) ||
      (result_m2m.empty() && instr.shape.rank() > 0)) {
    return InvalidArgument(
        " of a layout with tiles or other attributes, which detrain (whose "
        "arrays are row-major) does not take");
  }
  if (instr.shape.ElementCount() != operand->shape.ElementCount()) {
    return InvalidArgument(" changes the element count");
  }
  std::vector<int64_t>& px = operand_m2m;
  std::vector<int64_t>& py = result_m2m;
  std::reverse(px.begin(), px.end());  // now major to minor
  std::reverse(py.begin(), py.end());
  Instruction* x = operand;
  if (!IsIdentity(px)) {
    x = AddBeside(comp, instr, Opcode::kTranspose, Permuted(operand->shape, px), {x}, ".physical");
    x->attrs[Attr::kDimensions].ints = px;
  }
  if (IsIdentity(py)) {
    instr.operands = {x};  // instr stays the reshape
    return Status::Ok();
  }
  Instruction* y =
      AddBeside(comp, instr, Opcode::kReshape, Permuted(instr.shape, py), {x}, ".reshaped");
  std::vector<int64_t> inverse(py.size());
  for (size_t i = 0; i < py.size(); ++i) inverse[static_cast<size_t>(py[i])] = int64_t(i);
  instr.opcode = Opcode::kTranspose;
  instr.operands = {y};
  instr.attrs[Attr::kDimensions].ints = inverse;
  return Status::Ok();
}

}  // namespace detrain::xla_import
