// XLA's select-and-scatter (the gradient of max-pooling), expanded by the importer into ops every
// backend runs exactly (expansions.h ExpandSelectAndScatter; docs/jax.md).
//
// select-and-scatter(X, Y, I), window W (sizes w, strides s), select computation `sel`, scatter
// computation `add`: for each window position p (an element of Y), the element of X's window
// that `sel` picks — the first in row-major window order, replaced by each later element e for
// which sel(picked, e) is false — receives Y[p], summed into I. Expanded, for the K = prod(w)
// window offsets o_0 .. o_{K-1} in row-major order:
//
//   patch_k  = slice(X, start o_k, stride s)                  shape of Y: X's element at o_k of
//                                                              each window
//   picked   = patch_0, pick = 0;  for k >= 1: keep = sel(picked, patch_k) (the compare);
//              picked = select(keep, picked, patch_k); pick = select(keep, pick, k)
//   result   = I + pad(select(pick == 0, Y, 0), lo o_0, interior s - 1) + ... (k ascending)
//
// Every op is exact, and the selection is XLA's (the same compare, in XLA's window order, NaN
// included). Where windows overlap, an element of X picked by several windows receives their
// values summed in window-offset order — the canonical order stated here, which may differ
// from XLA's in the last bit; where they do not overlap (max-pool with stride = size), each
// element receives at most one value plus zeros, exactly XLA's result.
#include <string>
#include <vector>

#include "compiler/ir/module.h"
#include "compiler/xla_import/emitter.h"

namespace detrain::xla_import {
namespace {

// The direction of a select computation that is one compare of its two parameters, in order.
Result<Direction> SelectDirection(const Computation& select, ElementType type) {
  const std::vector<Instruction*> params = select.Parameters();
  const Instruction* root = select.root();
  const Shape scalar(type, {});
  if (params.size() != 2 || params[0]->shape != scalar || params[1]->shape != scalar ||
      root == nullptr || root->opcode != Opcode::kCompare || root->operands.size() != 2 ||
      root->operands[0] != params[0] || root->operands[1] != params[1] ||
      root->shape != Shape(ElementType::kPred, {})) {
    return InvalidArgument("its select computation '" + select.name() +
                           "' must be one compare of its two parameters, in order (e.g. "
                           "direction=GE for max-pooling)");
  }
  return root->attrs.at(Attr::kDirection).direction;
}

Status CheckScatterIsAdd(const Computation& scatter, ElementType type) {
  const std::vector<Instruction*> params = scatter.Parameters();
  const Instruction* root = scatter.root();
  const Shape scalar(type, {});
  const bool ok = params.size() == 2 && params[0]->shape == scalar && params[1]->shape == scalar &&
                  root != nullptr && root->opcode == Opcode::kAdd && root->operands.size() == 2 &&
                  ((root->operands[0] == params[0] && root->operands[1] == params[1]) ||
                   (root->operands[0] == params[1] && root->operands[1] == params[0]));
  if (!ok) {
    return InvalidArgument("its scatter computation '" + scatter.name() +
                           "' must be the add of its two parameters");
  }
  return Status::Ok();
}

}  // namespace

Status ExpandSelectAndScatter(Computation& comp, Instruction& instr, const Computation& select,
                              const Computation& scatter) {
  if (instr.operands.size() != 3) {
    return InvalidArgument("takes 3 operands (operand, source, init value), got " +
                           std::to_string(instr.operands.size()));
  }
  Instruction* x = instr.operands[0];
  Instruction* y = instr.operands[1];
  Instruction* init = instr.operands[2];
  if (x->shape.is_tuple() || y->shape.is_tuple() || init->shape.is_tuple() ||
      instr.shape != x->shape || y->shape.type() != x->shape.type() ||
      init->shape != Shape(x->shape.type(), {})) {
    return InvalidArgument(
        "takes an operand, a source of its element type and a scalar init "
        "value, and gives the operand's shape");
  }
  const ElementType type = x->shape.type();
  if (type == ElementType::kPred) {
    return InvalidArgument("operand of element type pred is not supported");
  }
  DETRAIN_ASSIGN_OR_RETURN(Direction direction, SelectDirection(select, type));
  DETRAIN_RETURN_IF_ERROR(CheckScatterIsAdd(scatter, type));
  auto w = instr.attrs.find(Attr::kWindow);
  const int64_t rank = x->shape.rank();
  if (w == instr.attrs.end() || static_cast<int64_t>(w->second.window.size()) != rank) {
    return InvalidArgument("needs a window of one dimension per operand dimension");
  }
  const std::vector<WindowDim> window = w->second.window;
  const std::vector<int64_t>& in = x->shape.dims();
  const std::vector<int64_t>& out = y->shape.dims();
  if (static_cast<int64_t>(out.size()) != rank) {
    return InvalidArgument("its source must have the operand's rank");
  }
  int64_t offsets = 1;
  for (int64_t d = 0; d < rank; ++d) {
    const WindowDim& wd = window[static_cast<size_t>(d)];
    if (wd.pad_lo != 0 || wd.pad_hi != 0 || wd.lhs_dilate != 1 || wd.rhs_dilate != 1) {
      return InvalidArgument(
          "a window with padding or dilation is not supported (pool with "
          "padding \"VALID\")");
    }
    const size_t i = static_cast<size_t>(d);
    if (wd.size < 1 || wd.stride < 1 || wd.size > in[i] ||
        out[i] != (in[i] - wd.size) / wd.stride + 1) {
      return InvalidArgument(
          "its source has " + std::to_string(out[i]) +
          " windows along "
          "dimension " +
          std::to_string(d) + "; the window gives " +
          std::to_string(wd.size > in[i] || wd.stride < 1 ? 0 : (in[i] - wd.size) / wd.stride + 1));
    }
    if (wd.size > 4096 / offsets) return InvalidArgument("a window of more than 4096 elements");
    offsets *= wd.size;
  }

  Emitter e(comp, instr, ".sas");
  auto add = [&](Opcode opcode, Shape shape, std::vector<Instruction*> operands) {
    return e.Add(opcode, std::move(shape), std::move(operands));
  };
  const Shape y_shape = y->shape;
  const Shape pick_shape(ElementType::kS32, out);
  const Shape mask_shape(ElementType::kPred, out);

  // The window offsets in row-major order.
  std::vector<std::vector<int64_t>> at(static_cast<size_t>(offsets),
                                       std::vector<int64_t>(in.size()));
  for (int64_t k = 0; k < offsets; ++k) {
    int64_t rest = k;
    for (int64_t d = rank - 1; d >= 0; --d) {
      const int64_t size = window[static_cast<size_t>(d)].size;
      at[static_cast<size_t>(k)][static_cast<size_t>(d)] = rest % size;
      rest /= size;
    }
  }
  auto patch = [&](int64_t k) { return e.WindowTap(x, window, out, k); };

  // The selection: the value and the offset each window picks.
  Instruction* picked = patch(0);
  Instruction* pick = offsets > 1 ? e.Splat(ElementType::kS32, 0, out) : nullptr;
  std::vector<Instruction*> offset_index(static_cast<size_t>(offsets), nullptr);
  for (int64_t k = 1; k < offsets; ++k) {
    Instruction* candidate = patch(k);
    Instruction* keep = add(Opcode::kCompare, mask_shape, {picked, candidate});
    keep->attrs[Attr::kDirection].direction = direction;
    picked = add(Opcode::kSelect, y_shape, {keep, picked, candidate});
    offset_index[static_cast<size_t>(k)] = e.Splat(ElementType::kS32, static_cast<int32_t>(k), out);
    pick = add(Opcode::kSelect, pick_shape, {keep, pick, offset_index[static_cast<size_t>(k)]});
  }
  if (offsets > 1) offset_index[0] = e.Splat(ElementType::kS32, 0, out);

  // The scatter: each offset's picks placed back at their positions, summed into the init value.
  Instruction* zero = e.Zero(type);
  Instruction* zeros = offsets > 1 ? e.Broadcast(zero, out) : nullptr;
  Instruction* sum = e.Broadcast(init, in);
  for (int64_t k = 0; k < offsets; ++k) {
    Instruction* values = y;
    if (offsets > 1) {
      Instruction* mine =
          add(Opcode::kCompare, mask_shape, {pick, offset_index[static_cast<size_t>(k)]});
      mine->attrs[Attr::kDirection].direction = Direction::kEq;
      values = add(Opcode::kSelect, y_shape, {mine, y, zeros});
    }
    Instruction* placed = add(Opcode::kPad, x->shape, {values, zero});
    std::vector<PadDim>& pad = placed->attrs[Attr::kPadding].padding;
    for (size_t d = 0; d < in.size(); ++d) {
      const int64_t lo = at[static_cast<size_t>(k)][d], stride = window[d].stride;
      const int64_t end = lo + (out[d] - 1) * stride + 1;
      pad.push_back({lo, in[d] - end, stride - 1});
    }
    if (k + 1 < offsets) {
      sum = add(Opcode::kAdd, x->shape, {sum, placed});
    } else {
      // The last add is the instruction itself, which its users already name.
      instr.opcode = Opcode::kAdd;
      instr.operands = {sum, placed};
      instr.attrs.clear();
    }
  }
  return Status::Ok();
}

}  // namespace detrain::xla_import
