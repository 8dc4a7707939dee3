// VJP rules of the data-movement and structural ops. These are linear, so each rule is the
// transpose of its op (JAX's `*_transpose_rule` in jax/_src/lax/lax.py, slicing.py); they
// only move, pad or sum cotangent values.
//
// Thread safety: appends to the computation being built; one thread.
#include <algorithm>

#include "frontend/autodiff/vjp.h"

namespace detrain::frontend::autodiff {

using ir::Instruction;
using ir::Opcode;

// broadcast_in_dim transpose: sum over the result dimensions the operand does not map to,
// then transpose if `dimensions` is not increasing.
VjpResult VjpBroadcast(VjpArgs& a) {
  const auto& dims = a.fwd->IntsAttr(ir::Attr::kDimensions);
  std::vector<int64_t> summed;
  for (int64_t d = 0; d < a.g()->shape.rank(); ++d) {
    if (std::find(dims.begin(), dims.end(), d) == dims.end()) summed.push_back(d);
  }
  Instruction* ct = summed.empty() ? a.g() : a.e.ReduceSum(a.g(), summed);
  std::vector<int64_t> sorted = dims;
  std::sort(sorted.begin(), sorted.end());
  if (sorted != dims) {
    std::vector<int64_t> perm;
    for (int64_t d : dims)
      perm.push_back(std::lower_bound(sorted.begin(), sorted.end(), d) - sorted.begin());
    ct = a.b().Transpose(ct, perm);
  }
  return PerOperand(a, {ct});
}

// reshape transpose: reshape back.
VjpResult VjpReshape(VjpArgs& a) {
  return PerOperand(a, {a.b().Reshape(a.g(), a.x(0)->shape.dims())});
}

// transpose transpose: the inverse permutation.
VjpResult VjpTranspose(VjpArgs& a) {
  return PerOperand(
      a, {a.b().Transpose(a.g(), InversePermutation(a.fwd->IntsAttr(ir::Attr::kDimensions)))});
}

// slice transpose: zeros with g at the sliced positions — pad with 0: low = start,
// interior = stride - 1, high = what remains after the last sliced element.
VjpResult VjpSlice(VjpArgs& a) {
  const Instruction* x = a.x(0);
  if (a.g()->shape.ElementCount() == 0) return PerOperand(a, {Like(a, a.x(0), 0)});
  const auto& slice = a.fwd->FindAttr(ir::Attr::kSlice)->slice;
  std::vector<ir::PadDim> pad;
  for (size_t d = 0; d < slice.size(); ++d) {
    int64_t n = a.g()->shape.dim(static_cast<int>(d));
    int64_t last = slice[d].start + (n - 1) * slice[d].stride;
    pad.push_back(
        {slice[d].start, x->shape.dim(static_cast<int>(d)) - 1 - last, slice[d].stride - 1});
  }
  return PerOperand(a, {a.b().Pad(a.g(), a.e.ScalarF32(0), pad)});
}

// concatenate transpose: operand i gets its slice of g along the concatenated dimension.
VjpResult VjpConcatenate(VjpArgs& a) {
  int64_t dim = a.fwd->IntsAttr(ir::Attr::kDimensions)[0];
  std::vector<Instruction*> out;
  int64_t offset = 0;
  for (size_t i = 0; i < a.fwd->operands.size(); ++i) {
    int64_t n = a.x(i)->shape.dim(static_cast<int>(dim));
    if (a.active[i]) {
      std::vector<ir::SliceDim> s;
      for (int64_t d = 0; d < a.g()->shape.rank(); ++d)
        s.push_back({0, a.g()->shape.dim(static_cast<int>(d)), 1});
      s[static_cast<size_t>(dim)] = {offset, offset + n, 1};
      out.push_back(a.b().Slice(a.g(), s));
    } else {
      out.push_back(nullptr);
    }
    offset += n;
  }
  return PerOperand(a, out);
}

// pad transpose (as JAX's _pad_transpose): operand gets slice(pad(g, 0, -lo, -hi), stride
// interior + 1); the padding value gets sum(g) - sum(operand's cotangent).
VjpResult VjpPad(VjpArgs& a) {
  const auto& padding = a.fwd->FindAttr(ir::Attr::kPadding)->padding;
  std::vector<ir::PadDim> unpad;
  for (const ir::PadDim& p : padding) unpad.push_back({-p.lo, -p.hi, 0});
  Instruction* zero = a.e.ScalarF32(0);
  Instruction* unpadded = a.b().Pad(a.g(), zero, unpad);
  std::vector<ir::SliceDim> s;
  for (size_t d = 0; d < padding.size(); ++d) {
    s.push_back({0, unpadded->shape.dim(static_cast<int>(d)), padding[d].interior + 1});
  }
  Instruction* dx = a.b().Slice(unpadded, s);
  Instruction* dv = nullptr;
  if (a.active[1]) {
    std::vector<int64_t> all;
    for (int64_t d = 0; d < a.g()->shape.rank(); ++d) all.push_back(d);
    dv = Bin(a, Opcode::kSubtract, a.e.ReduceSum(a.g(), all), a.e.ReduceSum(dx, all));
  }
  return PerOperand(a, {dx, dv});
}

// rev transpose: reverse g along the same dimensions.
VjpResult VjpReverse(VjpArgs& a) {
  return PerOperand(a, {a.b().Reverse(a.g(), a.fwd->IntsAttr(ir::Attr::kDimensions))});
}

namespace {

std::vector<Instruction*> StartIndices(const VjpArgs& a, size_t first) {
  return std::vector<Instruction*>(a.fwd->operands.begin() + static_cast<std::ptrdiff_t>(first),
                                   a.fwd->operands.end());
}

}  // namespace

// dynamic_slice transpose: dynamic_update_slice(zeros, g, starts); the starts are clamped the
// same way by both ops, so g lands where the slice was read.
VjpResult VjpDynamicSlice(VjpArgs& a) {
  Instruction* zeros = Like(a, a.x(0), 0);
  return PerOperand(a, {a.b().DynamicUpdateSlice(zeros, a.g(), StartIndices(a, 1))});
}

// dynamic_update_slice transpose: operand gets dus(g, 0, starts); update gets
// dynamic_slice(g, starts, update's sizes).
VjpResult VjpDynamicUpdateSlice(VjpArgs& a) {
  auto starts = StartIndices(a, 2);
  Instruction* dx =
      a.active[0] ? a.b().DynamicUpdateSlice(a.g(), Like(a, a.x(1), 0), starts) : nullptr;
  Instruction* du = a.active[1] ? a.b().DynamicSlice(a.g(), starts, a.x(1)->shape.dims()) : nullptr;
  return PerOperand(a, {dx, du});
}

namespace {

// The start indices clamped as gather clamps them (0 <= start <= dim - slice size per index
// component), so that the scatter that transposes the gather never skips an update.
Instruction* ClampedStarts(VjpArgs& a, const Instruction* gather) {
  Instruction* idx = gather->operands[1];
  const Instruction* x = gather->operands[0];
  const auto& start_map = gather->IntsAttr(ir::Attr::kStartIndexMap);
  const auto& sizes = gather->IntsAttr(ir::Attr::kSliceSizes);
  int64_t ivd = gather->IntAttr(ir::Attr::kIndexVectorDim);
  std::vector<int64_t> bounds;
  for (int64_t d : start_map)
    bounds.push_back(x->shape.dim(static_cast<int>(d)) - sizes[static_cast<size_t>(d)]);
  ir::ElementType t = idx->shape.type();
  ir::Literal lit = ir::DispatchElementType(t, [&](auto tag) {
    using T = typename decltype(tag)::type;
    std::vector<T> v;
    for (int64_t b : bounds) v.push_back(static_cast<T>(b));
    return ir::Literal::FromVector<T>(t, {static_cast<int64_t>(v.size())}, v);
  });
  Instruction* hi;
  if (ivd == idx->shape.rank()) {
    hi = a.b().Broadcast(a.b().Reshape(a.b().Constant(lit), {}), idx->shape, {});
  } else {
    hi = a.b().Broadcast(a.b().Constant(lit), idx->shape, {ivd});
  }
  return a.b().Clamp(a.e.Full(idx->shape, 0), idx, hi);
}

}  // namespace

// gather transpose (JAX's _gather_transpose_rule): scatter-add of g into zeros of the
// operand's shape with the dual dimension numbers. Repeated indices accumulate in update
// order (the scatter's canonical order).
VjpResult VjpGather(VjpArgs& a) {
  const Instruction* gather = a.fwd;
  ir::ScatterDims s;
  s.update_window_dims = gather->IntsAttr(ir::Attr::kOffsetDims);
  s.inserted_window_dims = gather->IntsAttr(ir::Attr::kCollapsedSliceDims);
  s.scatter_dims_to_operand_dims = gather->IntsAttr(ir::Attr::kStartIndexMap);
  s.index_vector_dim = gather->IntAttr(ir::Attr::kIndexVectorDim);
  Instruction* zeros = Like(a, a.x(0), 0);
  const ir::Computation* add = a.e.Combiner(Opcode::kAdd, ir::ElementType::kF32);
  return PerOperand(a, {a.b().Scatter(zeros, ClampedStarts(a, gather), a.g(), s, add), nullptr});
}

// tuple transpose: element i's cotangent goes to operand i.
VjpResult VjpTuple(VjpArgs& a) {
  std::vector<Instruction*> parts(a.fwd->operands.size(), nullptr);
  for (size_t i = 0; i < parts.size() && i < a.ct.size(); ++i) parts[i] = a.ct[i];
  return PerOperand(a, parts);
}

// get-tuple-element transpose: g is the cotangent of element `index` of the operand.
VjpResult VjpGetTupleElement(VjpArgs& a) {
  std::vector<Contribution> out(1);
  if (a.active[0]) out[0] = {a.g(), a.fwd->IntAttr(ir::Attr::kIndex)};
  return out;
}

}  // namespace detrain::frontend::autodiff
