// Gather and scatter with batching dimensions (expansions.h UnbatchIndexing; docs/ir.md §5):
// StableHLO's batched indexing as the unbatched op that moves the same elements.
#include <algorithm>
#include <set>

#include "compiler/xla_import/expansions.h"

namespace detrain::xla_import {

// A gather or scatter with batching dimensions (StableHLO's operand_batching_dims and
// start_indices_batching_dims; input_batching_dims and scatter_indices_batching_dims) as an
// unbatched one: batching dimension k of the operand is indexed by the position along the
// paired dimension of the indices, so that position joins the index vector (an iota along that
// dimension, concatenated to the indices along index_vector_dim), the operand dimension joins
// start_index_map (scatter_dims_to_operand_dims) and, being of slice size 1, the collapsed
// (inserted window) dimensions. Every element moves exactly as before: the same op, new indices.
Status UnbatchIndexing(Computation& comp, Instruction& instr, SourceLoc loc) {
  const bool gather = instr.opcode == Opcode::kGather;
  if (!gather && instr.opcode != Opcode::kScatter) {
    return Cursor::ErrorAt(loc,
                           "batching dimensions are attributes of gather and scatter, "
                           "not of " +
                               std::string(ir::OpcodeName(instr.opcode)));
  }
  const Attr operand_attr = gather ? Attr::kOperandBatchingDims : Attr::kInputBatchingDims;
  const Attr indices_attr =
      gather ? Attr::kStartIndicesBatchingDims : Attr::kScatterIndicesBatchingDims;
  const Attr wrong_a = gather ? Attr::kInputBatchingDims : Attr::kOperandBatchingDims;
  const Attr wrong_b = gather ? Attr::kScatterIndicesBatchingDims : Attr::kStartIndicesBatchingDims;
  for (Attr a : {wrong_a, wrong_b}) {
    if (instr.attrs.count(a)) {
      return Cursor::ErrorAt(loc, std::string(ir::AttrName(a)) + " is not an attribute of " +
                                      std::string(ir::OpcodeName(instr.opcode)));
    }
  }
  const std::string what = std::string(ir::OpcodeName(instr.opcode)) + " " + Quoted(instr.name);
  const size_t want_operands = gather ? 2 : 3;
  if (instr.operands.size() != want_operands) {
    return Cursor::ErrorAt(loc, what + " takes " + std::to_string(want_operands) +
                                    " operands, got " + std::to_string(instr.operands.size()));
  }
  const std::vector<int64_t> operand_dims = instr.attrs[operand_attr].ints;
  const std::vector<int64_t> indices_dims = instr.attrs[indices_attr].ints;
  instr.attrs.erase(operand_attr);
  instr.attrs.erase(indices_attr);
  const Shape& operand = instr.operands[0]->shape;
  Instruction* indices = instr.operands[1];
  if (operand.is_tuple() || indices->shape.is_tuple() || !ir::IsInteger(indices->shape.type())) {
    return Cursor::ErrorAt(loc, what + ": batching needs an array operand and integer indices");
  }
  if (operand_dims.size() != indices_dims.size()) {
    return Cursor::ErrorAt(loc, what + ": " + std::to_string(operand_dims.size()) + " " +
                                    std::string(ir::AttrName(operand_attr)) + " but " +
                                    std::to_string(indices_dims.size()) + " " +
                                    std::string(ir::AttrName(indices_attr)));
  }
  if (!instr.attrs.count(Attr::kIndexVectorDim)) {
    return Cursor::ErrorAt(loc, what + " needs index_vector_dim");
  }
  const int64_t ivd = instr.attrs[Attr::kIndexVectorDim].i;
  std::vector<int64_t> dims = indices->shape.dims();
  if (ivd < 0 || ivd > static_cast<int64_t>(dims.size())) {
    return Cursor::ErrorAt(loc, what + ": index_vector_dim " + std::to_string(ivd) +
                                    " is outside the indices' " + std::to_string(dims.size()) +
                                    " dimensions");
  }
  std::set<int64_t> seen_operand, seen_indices;
  for (size_t k = 0; k < operand_dims.size(); ++k) {
    const int64_t o = operand_dims[k], x = indices_dims[k];
    if (o < 0 || o >= operand.rank() || !seen_operand.insert(o).second) {
      return Cursor::ErrorAt(loc, what + ": " + std::string(ir::AttrName(operand_attr)) +
                                      " must be distinct dimensions of the operand");
    }
    if (x < 0 || x >= static_cast<int64_t>(dims.size()) || x == ivd ||
        !seen_indices.insert(x).second) {
      return Cursor::ErrorAt(loc, what + ": " + std::string(ir::AttrName(indices_attr)) +
                                      " must be distinct dimensions of the indices other "
                                      "than index_vector_dim");
    }
    if (operand.dim(static_cast<int>(o)) != dims[static_cast<size_t>(x)]) {
      return Cursor::ErrorAt(
          loc, what + ": batching dimension " + std::to_string(o) + " of the operand has size " +
                   std::to_string(operand.dim(static_cast<int>(o))) + ", its indices dimension " +
                   std::to_string(x) + " " + std::to_string(dims[static_cast<size_t>(x)]));
    }
  }
  if (operand_dims.empty()) return Status::Ok();
  auto add = [&](Opcode opcode, Shape result, std::vector<Instruction*> operands,
                 const std::string& suffix) {
    return AddBeside(comp, instr, opcode, std::move(result), std::move(operands), suffix);
  };
  const ElementType type = indices->shape.type();
  if (ivd == static_cast<int64_t>(dims.size())) {  // an implicit trailing index vector of 1
    dims.push_back(1);
    indices = add(Opcode::kReshape, Shape(type, dims), {indices}, ".indices");
  }
  std::vector<Instruction*> parts = {indices};
  std::vector<int64_t> one = dims;
  one[static_cast<size_t>(ivd)] = 1;
  for (size_t k = 0; k < indices_dims.size(); ++k) {
    Instruction* iota = add(Opcode::kIota, Shape(type, one), {}, ".batch" + std::to_string(k));
    iota->attrs[Attr::kIotaDimension].i = indices_dims[k];
    parts.push_back(iota);
  }
  dims[static_cast<size_t>(ivd)] += static_cast<int64_t>(indices_dims.size());
  Instruction* joined = add(Opcode::kConcatenate, Shape(type, dims), parts, ".batched-indices");
  joined->attrs[Attr::kDimensions].ints = {ivd};
  instr.operands[1] = joined;
  const Attr map_attr = gather ? Attr::kStartIndexMap : Attr::kScatterDimsToOperandDims;
  const Attr collapsed_attr = gather ? Attr::kCollapsedSliceDims : Attr::kInsertedWindowDims;
  std::vector<int64_t>& map = instr.attrs[map_attr].ints;
  map.insert(map.end(), operand_dims.begin(), operand_dims.end());
  std::vector<int64_t>& collapsed = instr.attrs[collapsed_attr].ints;
  collapsed.insert(collapsed.end(), operand_dims.begin(), operand_dims.end());
  std::sort(collapsed.begin(), collapsed.end());
  return Status::Ok();
}

}  // namespace detrain::xla_import
