// dot and convolution: one fmaf chain per output element (DESIGN.md §2, docs/ir.md), with the
// chain step and order of compiler/semantics (MultiplyAccumulate, DotChain).
//   dot:         acc = +0; for k ascending (row-major over the contracting dimensions, in the
//                order lhs_contracting_dims lists them): acc = fmaf(lhs[k], rhs[k], acc)
//   convolution: acc = +0; for each window tap (row-major over the kernel's spatial dimensions),
//                for each input feature ascending: acc = fmaf(input, kernel, acc), where input
//                is +0 at padding and dilation holes — exactly im2col followed by a dot.
// Integer dots accumulate with wrap-around; the order does not matter for them.
#include "compiler/interp/interp_internal.h"

namespace detrain::interp::internal {
namespace {

bool Contains(const std::vector<int64_t>& v, int64_t x) {
  for (int64_t y : v) {
    if (y == x) return true;
  }
  return false;
}

}  // namespace

Result<Literal> EvalDot(const Instruction& instr, const Operands& ops) {
  const Literal& lhs = *ops[0];
  const Literal& rhs = *ops[1];
  const auto& lb = instr.IntsAttr(ir::Attr::kLhsBatchDims);
  const auto& rb = instr.IntsAttr(ir::Attr::kRhsBatchDims);
  const auto& lc = instr.IntsAttr(ir::Attr::kLhsContractingDims);
  const auto& rc = instr.IntsAttr(ir::Attr::kRhsContractingDims);
  std::vector<int64_t> lfree, rfree, k_sizes;
  for (int64_t d = 0; d < lhs.shape().rank(); ++d) {
    if (!Contains(lb, d) && !Contains(lc, d)) lfree.push_back(d);
  }
  for (int64_t d = 0; d < rhs.shape().rank(); ++d) {
    if (!Contains(rb, d) && !Contains(rc, d)) rfree.push_back(d);
  }
  int64_t k_count = 1;
  for (int64_t d : lc) {
    k_sizes.push_back(lhs.shape().dim(static_cast<int>(d)));
    k_count *= k_sizes.back();
  }
  auto ls = ir::RowMajorStrides(lhs.shape().dims());
  auto rs = ir::RowMajorStrides(rhs.shape().dims());
  // The linear offset of contracting index k (row-major over lc / rc) from an output's base.
  std::vector<int64_t> l_offset(static_cast<size_t>(k_count)), r_offset(l_offset.size());
  for (int64_t k = 0; k < k_count; ++k) {
    auto kidx = Unravel(k, k_sizes);
    for (size_t j = 0; j < lc.size(); ++j) {
      l_offset[static_cast<size_t>(k)] += kidx[j] * ls[static_cast<size_t>(lc[j])];
      r_offset[static_cast<size_t>(k)] += kidx[j] * rs[static_cast<size_t>(rc[j])];
    }
  }
  Literal out(instr.shape);
  DispatchElementType(instr.shape.type(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    std::vector<int64_t> li(static_cast<size_t>(lhs.shape().rank()));
    std::vector<int64_t> ri(static_cast<size_t>(rhs.shape().rank()));
    for (int64_t o = 0; o < out.element_count(); ++o) {
      auto idx = Unravel(o, instr.shape.dims());
      size_t p = 0;  // output dims: batch, lhs free, rhs free; contracting indices stay 0
      for (size_t i = 0; i < lb.size(); ++i, ++p) {
        li[static_cast<size_t>(lb[i])] = ri[static_cast<size_t>(rb[i])] = idx[p];
      }
      for (int64_t d : lfree) li[static_cast<size_t>(d)] = idx[p++];
      for (int64_t d : rfree) ri[static_cast<size_t>(d)] = idx[p++];
      int64_t l_base = Ravel(li, ls), r_base = Ravel(ri, rs);
      const int64_t* l_off = l_offset.data();
      const int64_t* r_off = r_offset.data();
      auto load_l = [&](int64_t k) { return lhs.Get<T>(l_base + l_off[k]); };
      auto load_r = [&](int64_t k) { return rhs.Get<T>(r_base + r_off[k]); };
      out.Set<T>(o, semantics::DotChain<T>(k_count, load_l, load_r));
    }
  });
  return out;
}

Result<Literal> EvalConvolution(const Instruction& instr, const Operands& ops) {
  const Literal& in = *ops[0];
  const Literal& kernel = *ops[1];
  DETRAIN_ASSIGN_OR_RETURN(ir::ConvDims cd,
                           ir::ParseDimLabels(instr.FindAttr(ir::Attr::kDimLabels)->s));
  const auto& window = instr.FindAttr(ir::Attr::kWindow)->window;
  size_t ns = cd.in_spatial.size();
  std::vector<int64_t> taps_dims;
  for (const ir::WindowDim& w : window) taps_dims.push_back(w.size);
  int64_t taps = 1;
  for (int64_t t : taps_dims) taps *= t;
  int64_t features = in.shape().dim(static_cast<int>(cd.in_feature));
  auto is = ir::RowMajorStrides(in.shape().dims());
  auto ks = ir::RowMajorStrides(kernel.shape().dims());
  Literal out(instr.shape);
  std::vector<int64_t> ii(ns + 2), ki(ns + 2);
  for (int64_t o = 0; o < out.element_count(); ++o) {
    auto idx = Unravel(o, instr.shape.dims());
    ii[static_cast<size_t>(cd.in_batch)] = idx[static_cast<size_t>(cd.out_batch)];
    ki[static_cast<size_t>(cd.k_out)] = idx[static_cast<size_t>(cd.out_feature)];
    float acc = 0.0f;
    for (int64_t t = 0; t < taps; ++t) {
      auto w_idx = Unravel(t, taps_dims);
      bool inside = true;
      for (size_t s = 0; s < ns; ++s) {
        const ir::WindowDim& w = window[s];
        int64_t pos = idx[static_cast<size_t>(cd.out_spatial[s])] * w.stride +
                      w_idx[s] * w.rhs_dilate - w.pad_lo;
        int64_t limit = in.shape().dim(static_cast<int>(cd.in_spatial[s]));
        inside = inside && pos >= 0 && pos % w.lhs_dilate == 0 && pos / w.lhs_dilate < limit;
        ii[static_cast<size_t>(cd.in_spatial[s])] = pos / w.lhs_dilate;
        ki[static_cast<size_t>(cd.k_spatial[s])] = w_idx[s];
      }
      for (int64_t z = 0; z < features; ++z) {
        ii[static_cast<size_t>(cd.in_feature)] = z;
        ki[static_cast<size_t>(cd.k_in)] = z;
        float x = inside ? in.Get<float>(Ravel(ii, is)) : 0.0f;
        acc = semantics::MultiplyAccumulate(x, kernel.Get<float>(Ravel(ki, ks)), acc);
      }
    }
    out.Set<float>(o, acc);
  }
  return out;
}

}  // namespace detrain::interp::internal
