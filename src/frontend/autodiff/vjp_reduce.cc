// VJP rules of reduce and reduce-window, by combiner:
//   add      — the transpose: broadcast g back (reduce), or pad/dilate g and sum it over the
//              same window (reduce-window; JAX's _reduce_window_sum_transpose_rule);
//   max, min — JAX's _reduce_chooser_jvp_rule: every position equal to the result gets
//              g / (number of such positions), so ties split the cotangent evenly. For
//              reduce-window the same split is done per window (see VjpReduceWindow).
// Other combiners and a gradient with respect to the init value are Unimplemented.
//
// Thread safety: appends to the computation being built; one thread.
#include <algorithm>
#include <cmath>
#include <string>

#include "frontend/autodiff/vjp.h"

namespace detrain::frontend::autodiff {

using ir::Instruction;
using ir::Opcode;

namespace {

Result<Opcode> DifferentiableCombiner(const VjpArgs& a) {
  std::string op(ir::OpcodeName(a.fwd->opcode));
  if (a.active[1])
    return Unimplemented(op + ": gradient with respect to the init value is not supported");
  auto c = CombinerOp(a.fwd->ComputationAttr(ir::Attr::kToApply));
  if (!c || (*c != Opcode::kAdd && *c != Opcode::kMaximum && *c != Opcode::kMinimum)) {
    return Unimplemented(op + ": only add, maximum and minimum combiners are differentiable");
  }
  return *c;
}

std::vector<int64_t> KeptDims(const Instruction* x, const std::vector<int64_t>& reduced) {
  std::vector<int64_t> kept;
  for (int64_t d = 0; d < x->shape.rank(); ++d) {
    if (std::find(reduced.begin(), reduced.end(), d) == reduced.end()) kept.push_back(d);
  }
  return kept;
}

}  // namespace

// reduce: add -> broadcast(g); max/min -> loc = convert(x == broadcast(y)),
// broadcast(g / reduce_sum(loc)) * loc.
VjpResult VjpReduce(VjpArgs& a) {
  DETRAIN_ASSIGN_OR_RETURN(Opcode op, DifferentiableCombiner(a));
  Instruction* x = a.x(0);
  const auto& dims = a.fwd->IntsAttr(ir::Attr::kDimensions);
  std::vector<int64_t> kept = KeptDims(x, dims);
  if (op == Opcode::kAdd)
    return PerOperand(a, {a.e.BroadcastInDims(a.g(), x->shape, kept), nullptr});
  Instruction* hit =
      a.b().Compare(x, a.e.BroadcastInDims(a.y(), x->shape, kept), ir::Direction::kEq);
  Instruction* loc = a.b().Convert(hit, ir::ElementType::kF32);
  Instruction* share = Bin(a, Opcode::kDivide, a.g(), a.e.ReduceSum(loc, dims));
  return PerOperand(
      a, {Bin(a, Opcode::kMultiply, a.e.BroadcastInDims(share, x->shape, kept), loc), nullptr});
}

namespace {

// Sum-window transpose: pad g with interior stride - 1, low (k - 1) * rhs_dilate - pad_lo and
// high in - (out - 1) * stride - 1 + pad_lo (negative values crop), then sum each window of
// size k (rhs_dilate kept) with stride 1: x[i] collects g[o] for every window o covering i.
Instruction* SumWindowTranspose(VjpArgs& a, const std::vector<ir::WindowDim>& window) {
  Instruction* x = a.x(0);
  std::vector<ir::PadDim> pad;
  std::vector<ir::WindowDim> w2;
  for (size_t d = 0; d < window.size(); ++d) {
    const ir::WindowDim& w = window[d];
    int64_t in = x->shape.dim(static_cast<int>(d)), out = a.g()->shape.dim(static_cast<int>(d));
    pad.push_back({(w.size - 1) * w.rhs_dilate - w.pad_lo, in - (out - 1) * w.stride - 1 + w.pad_lo,
                   w.stride - 1});
    ir::WindowDim t;
    t.size = w.size;
    t.rhs_dilate = w.rhs_dilate;
    w2.push_back(t);
  }
  Instruction* padded = a.b().Pad(a.g(), a.e.ScalarF32(0), pad);
  return a.b().ReduceWindow(padded, a.e.ScalarF32(0), w2,
                            a.e.Combiner(Opcode::kAdd, ir::ElementType::kF32));
}

// Max/min-window VJP, tap by tap. For each window tap t (row-major), xt = the input value at
// tap t of every window (a strided slice of x padded with NaN, which equals nothing, so taps
// in padding never match). mask_t = (xt == y); count = sum_t mask_t (the number of positions
// achieving each window's result); each matching tap gets g / count, and is scattered back to
// x by the transpose of its slice (a pad). Contributions are summed in tap order. Correct for
// overlapping windows too; costs a few ops per tap.
Instruction* ChooserWindowVjp(VjpArgs& a, const std::vector<ir::WindowDim>& window) {
  Instruction* x = a.x(0);
  std::vector<ir::PadDim> nan_pad;
  std::vector<int64_t> sizes;
  for (const ir::WindowDim& w : window) {
    nan_pad.push_back({w.pad_lo, w.pad_hi, 0});
    sizes.push_back(w.size);
  }
  Instruction* xp = a.b().Pad(x, a.e.ScalarF32(NAN), nan_pad);
  int64_t taps = 1;
  for (int64_t s : sizes) taps *= s;
  std::vector<Instruction*> masks;
  std::vector<std::vector<ir::PadDim>> places;
  Instruction* count = nullptr;
  for (int64_t t = 0; t < taps; ++t) {
    std::vector<ir::SliceDim> slice;
    std::vector<ir::PadDim> place;
    int64_t rest = t;
    std::vector<int64_t> tap(sizes.size());
    for (size_t d = sizes.size(); d-- > 0;) {
      tap[d] = rest % sizes[d];
      rest /= sizes[d];
    }
    for (size_t d = 0; d < sizes.size(); ++d) {
      const ir::WindowDim& w = window[d];
      int64_t out = a.y()->shape.dim(static_cast<int>(d));
      int64_t start = tap[d] * w.rhs_dilate, limit = start + (out - 1) * w.stride + 1;
      slice.push_back({start, limit, w.stride});
      int64_t padded = xp->shape.dim(static_cast<int>(d));
      place.push_back({start - w.pad_lo, padded - limit - w.pad_hi, w.stride - 1});
    }
    Instruction* mask = a.b().Compare(a.b().Slice(xp, slice), a.y(), ir::Direction::kEq);
    Instruction* one = a.b().Convert(mask, ir::ElementType::kF32);
    count = count == nullptr ? one : Bin(a, Opcode::kAdd, count, one);
    masks.push_back(mask);
    places.push_back(place);
  }
  Instruction* share = Bin(a, Opcode::kDivide, a.g(), count);
  Instruction* zero = Like(a, share, 0);
  Instruction* dx = nullptr;
  for (size_t t = 0; t < masks.size(); ++t) {
    Instruction* c = a.b().Pad(a.b().Select(masks[t], share, zero), a.e.ScalarF32(0), places[t]);
    dx = dx == nullptr ? c : Bin(a, Opcode::kAdd, dx, c);
  }
  return dx;
}

}  // namespace

VjpResult VjpReduceWindow(VjpArgs& a) {
  DETRAIN_ASSIGN_OR_RETURN(Opcode op, DifferentiableCombiner(a));
  const auto& window = a.fwd->FindAttr(ir::Attr::kWindow)->window;
  for (const ir::WindowDim& w : window) {
    if (w.lhs_dilate != 1)
      return Unimplemented(
          "reduce-window: gradient with lhs_dilate (base dilation) != 1 is not supported");
  }
  if (a.g()->shape.ElementCount() == 0) return PerOperand(a, {Like(a, a.x(0), 0), nullptr});
  if (op == Opcode::kAdd) return PerOperand(a, {SumWindowTranspose(a, window), nullptr});
  int64_t taps = 1;
  for (const ir::WindowDim& w : window) taps *= w.size;
  if (taps > 1024)
    return Unimplemented(
        "reduce-window max/min: gradient of a window with more than 1024 taps is not supported");
  return PerOperand(a, {ChooserWindowVjp(a, window), nullptr});
}

}  // namespace detrain::frontend::autodiff
