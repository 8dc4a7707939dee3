// VJP rules of dot and convolution: the transposes of these bilinear ops in each operand.
//   dot         — JAX's _dot_general_transpose_lhs/rhs: contract g with the other operand
//                 over its free dimensions, keep the batch dimensions, then transpose the
//                 result back into the operand's dimension order.
//   convolution — JAX's _conv_general_dilated_transpose_lhs/rhs, written with our own
//                 convolution op in the canonical layout b01f_01io->b01f (operands are
//                 transposed into it and results back, so any dim_labels work):
//                 lhs: g (lhs-dilated by the stride) convolved with the spatially reversed
//                      kernel with i/o swapped, padding (k-1)*rd - lo and in-(out-1)*s-1+lo;
//                 rhs: x convolved with g as the kernel (window dilation = stride), batch
//                      and features exchanging roles, window stride = the kernel dilation.
// Forward convolutions with lhs_dilate != 1 are Unimplemented.
//
// Thread safety: appends to the computation being built; one thread.
#include <algorithm>
#include <string>

#include "frontend/autodiff/vjp.h"

namespace detrain::frontend::autodiff {

using ir::Instruction;
using ir::Opcode;

namespace {

bool Contains(const std::vector<int64_t>& v, int64_t x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

std::vector<int64_t> FreeDims(const Instruction* x, const std::vector<int64_t>& batch,
                              const std::vector<int64_t>& contracting) {
  std::vector<int64_t> free;
  for (int64_t d = 0; d < x->shape.rank(); ++d) {
    if (!Contains(batch, d) && !Contains(contracting, d)) free.push_back(d);
  }
  return free;
}

int64_t RankIn(const std::vector<int64_t>& v, int64_t x) {
  std::vector<int64_t> sorted = v;
  std::sort(sorted.begin(), sorted.end());
  return std::lower_bound(sorted.begin(), sorted.end(), x) - sorted.begin();
}

Instruction* TransposeIfNeeded(VjpArgs& a, Instruction* x, const std::vector<int64_t>& perm) {
  for (size_t i = 0; i < perm.size(); ++i) {
    if (perm[i] != static_cast<int64_t>(i)) return a.b().Transpose(x, perm);
  }
  return x;
}

// The cotangent of dot operand `self` (whose batch/contracting dims are sb/sc) given the other
// operand `other` (ob/oc). `self_first`: self is the dot's lhs, so in g (= [batch, lhs free,
// rhs free]) self's free dims come before other's. dot(g, other) contracts g's other-free dims
// with other's free dims; its dims are [batch, self free (g's remaining dims, in order),
// other's contracting dims ascending], which a transpose puts in self's dimension order.
Instruction* DotOperandCt(VjpArgs& a, Instruction* self, Instruction* other,
                          const std::vector<int64_t>& sb, const std::vector<int64_t>& sc,
                          const std::vector<int64_t>& ob, const std::vector<int64_t>& oc,
                          bool self_first) {
  int64_t nb = static_cast<int64_t>(sb.size());
  std::vector<int64_t> sfree = FreeDims(self, sb, sc), ofree = FreeDims(other, ob, oc);
  int64_t nsf = static_cast<int64_t>(sfree.size()), nof = static_cast<int64_t>(ofree.size());
  ir::DotDims dims;
  for (int64_t i = 0; i < nb; ++i) dims.lhs_batch.push_back(i);
  dims.rhs_batch = ob;
  int64_t g_other_free = self_first ? nb + nsf : nb;
  for (int64_t j = 0; j < nof; ++j) dims.lhs_contracting.push_back(g_other_free + j);
  dims.rhs_contracting = ofree;
  Instruction* r = a.b().Dot(a.g(), other, dims);
  std::vector<int64_t> perm(static_cast<size_t>(self->shape.rank()));
  for (int64_t i = 0; i < nb; ++i) perm[static_cast<size_t>(sb[static_cast<size_t>(i)])] = i;
  for (int64_t j = 0; j < nsf; ++j)
    perm[static_cast<size_t>(sfree[static_cast<size_t>(j)])] = nb + j;
  for (size_t m = 0; m < sc.size(); ++m)
    perm[static_cast<size_t>(sc[m])] = nb + nsf + RankIn(oc, oc[m]);
  return TransposeIfNeeded(a, r, perm);
}

}  // namespace

// dot_general: lhs gets dot(g, rhs) and rhs gets dot(g, lhs), each over the other operand's
// free dimensions, transposed back to the operand's dimension order.
VjpResult VjpDot(VjpArgs& a) {
  const auto& lb = a.fwd->IntsAttr(ir::Attr::kLhsBatchDims);
  const auto& rb = a.fwd->IntsAttr(ir::Attr::kRhsBatchDims);
  const auto& lc = a.fwd->IntsAttr(ir::Attr::kLhsContractingDims);
  const auto& rc = a.fwd->IntsAttr(ir::Attr::kRhsContractingDims);
  Instruction* dl = a.active[0] ? DotOperandCt(a, a.x(0), a.x(1), lb, lc, rb, rc, true) : nullptr;
  Instruction* dr = a.active[1] ? DotOperandCt(a, a.x(1), a.x(0), rb, rc, lb, lc, false) : nullptr;
  return PerOperand(a, {dl, dr});
}

namespace {

std::string CanonicalLabels(size_t ns) {
  std::string s;
  for (size_t i = 0; i < ns; ++i) s += static_cast<char>('0' + i);
  return "b" + s + "f_" + s + "io->b" + s + "f";
}

struct ConvLayout {
  std::vector<int64_t> in, kernel, out;  // permutations into b01f / 01io / b01f
};

ConvLayout LayoutOf(const ir::ConvDims& cd) {
  ConvLayout l;
  l.in.push_back(cd.in_batch);
  l.out.push_back(cd.out_batch);
  for (size_t s = 0; s < cd.in_spatial.size(); ++s) {
    l.in.push_back(cd.in_spatial[s]);
    l.kernel.push_back(cd.k_spatial[s]);
    l.out.push_back(cd.out_spatial[s]);
  }
  l.in.push_back(cd.in_feature);
  l.kernel.push_back(cd.k_in);
  l.kernel.push_back(cd.k_out);
  l.out.push_back(cd.out_feature);
  return l;
}

// In canonical layout: x [N, S.., C], w [K.., C, O], g [N, O.., O]. Returns dx [N, S.., C].
Instruction* ConvLhsCt(VjpArgs& a, Instruction* w, Instruction* g,
                       const std::vector<ir::WindowDim>& window,
                       const std::vector<int64_t>& in_spatial) {
  size_t ns = window.size();
  std::vector<int64_t> spatial, swap;
  for (size_t s = 0; s < ns; ++s) spatial.push_back(static_cast<int64_t>(s));
  swap = spatial;
  swap.push_back(static_cast<int64_t>(ns) + 1);
  swap.push_back(static_cast<int64_t>(ns));
  Instruction* wr = a.b().Transpose(a.b().Reverse(w, spatial), swap);  // [K.., O, C]
  std::vector<ir::WindowDim> win;
  for (size_t s = 0; s < ns; ++s) {
    const ir::WindowDim& f = window[s];
    int64_t out = g->shape.dim(static_cast<int>(s) + 1);
    ir::WindowDim t;
    t.size = f.size;
    t.pad_lo = (f.size - 1) * f.rhs_dilate - f.pad_lo;
    t.pad_hi = in_spatial[s] - (out - 1) * f.stride - 1 + f.pad_lo;
    t.lhs_dilate = f.stride;
    t.rhs_dilate = f.rhs_dilate;
    win.push_back(t);
  }
  return a.b().Convolution(g, wr, CanonicalLabels(ns), win);
}

// Returns dw [K.., C, O] in canonical layout.
Instruction* ConvRhsCt(VjpArgs& a, Instruction* x, Instruction* g,
                       const std::vector<ir::WindowDim>& window) {
  size_t ns = window.size();
  int64_t nsi = static_cast<int64_t>(ns);
  std::vector<int64_t> x_perm = {nsi + 1}, g_perm, back;
  for (int64_t s = 1; s <= nsi; ++s) x_perm.push_back(s);
  x_perm.push_back(0);  // [C, S.., N]
  for (int64_t s = 1; s <= nsi; ++s) g_perm.push_back(s);
  g_perm.push_back(0);
  g_perm.push_back(nsi + 1);  // [O.., N, O]
  std::vector<ir::WindowDim> win;
  for (size_t s = 0; s < ns; ++s) {
    const ir::WindowDim& f = window[s];
    int64_t in = x->shape.dim(static_cast<int>(s) + 1), out = g->shape.dim(static_cast<int>(s) + 1);
    ir::WindowDim t;
    t.size = out;
    t.stride = f.rhs_dilate;
    t.pad_lo = f.pad_lo;
    t.pad_hi = (f.size - 1) * f.rhs_dilate + (out - 1) * f.stride + 1 - in - f.pad_lo;
    t.rhs_dilate = f.stride;
    win.push_back(t);
  }
  Instruction* r = a.b().Convolution(a.b().Transpose(x, x_perm), a.b().Transpose(g, g_perm),
                                     CanonicalLabels(ns), win);
  for (int64_t s = 1; s <= nsi; ++s) back.push_back(s);
  back.push_back(0);
  back.push_back(nsi + 1);
  return a.b().Transpose(r, back);  // [K.., C, O]
}

}  // namespace

VjpResult VjpConvolution(VjpArgs& a) {
  DETRAIN_ASSIGN_OR_RETURN(ir::ConvDims cd,
                           ir::ParseDimLabels(a.fwd->FindAttr(ir::Attr::kDimLabels)->s));
  const auto& window = a.fwd->FindAttr(ir::Attr::kWindow)->window;
  for (const ir::WindowDim& w : window) {
    if (w.lhs_dilate != 1)
      return Unimplemented("convolution: gradient with lhs_dilate != 1 is not supported");
  }
  if (a.g()->shape.ElementCount() == 0)
    return PerOperand(a, {Like(a, a.x(0), 0), Like(a, a.x(1), 0)});
  ConvLayout l = LayoutOf(cd);
  Instruction* x = TransposeIfNeeded(a, a.x(0), l.in);
  Instruction* w = TransposeIfNeeded(a, a.x(1), l.kernel);
  Instruction* g = TransposeIfNeeded(a, a.g(), l.out);
  Instruction* dx = nullptr;
  Instruction* dw = nullptr;
  if (a.active[0]) {
    std::vector<int64_t> in_spatial;
    for (int64_t d : cd.in_spatial) in_spatial.push_back(a.x(0)->shape.dim(static_cast<int>(d)));
    dx = TransposeIfNeeded(a, ConvLhsCt(a, w, g, window, in_spatial), InversePermutation(l.in));
  }
  if (a.active[1])
    dw = TransposeIfNeeded(a, ConvRhsCt(a, x, g, window), InversePermutation(l.kernel));
  return PerOperand(a, {dx, dw});
}

}  // namespace detrain::frontend::autodiff
