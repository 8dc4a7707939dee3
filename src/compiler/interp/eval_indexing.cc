// gather and scatter (XLA's general forms, docs/ir.md). gather clamps each start index so the
// slice fits, as XLA does; scatter skips an update whose window would leave the operand, and
// applies the others one element at a time in row-major order of the updates array.
#include <algorithm>

#include "compiler/interp/interp_internal.h"

namespace detrain::interp::internal {
namespace {

bool Contains(const std::vector<int64_t>& v, int64_t x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

// The index vector of `indices` at batch position `batch` (dims of indices without ivd).
std::vector<int64_t> IndexVector(const Literal& indices, int64_t ivd,
                                 const std::vector<int64_t>& batch) {
  const auto& dims = indices.shape().dims();
  auto strides = ir::RowMajorStrides(dims);
  std::vector<int64_t> full;
  size_t b = 0;
  for (int64_t d = 0; d < static_cast<int64_t>(dims.size()); ++d)
    full.push_back(d == ivd ? 0 : batch[b++]);
  int64_t len = ivd == static_cast<int64_t>(dims.size()) ? 1 : dims[static_cast<size_t>(ivd)];
  std::vector<int64_t> vec;
  for (int64_t k = 0; k < len; ++k) {
    if (ivd < static_cast<int64_t>(dims.size())) full[static_cast<size_t>(ivd)] = k;
    vec.push_back(ReadIndex(indices, Ravel(full, strides)));
  }
  return vec;
}

}  // namespace

Result<Literal> EvalGather(const Instruction& instr, const Operands& ops) {
  const Literal& in = *ops[0];
  const auto& in_dims = in.shape().dims();
  const auto& offset_dims = instr.IntsAttr(ir::Attr::kOffsetDims);
  const auto& collapsed = instr.IntsAttr(ir::Attr::kCollapsedSliceDims);
  const auto& start_map = instr.IntsAttr(ir::Attr::kStartIndexMap);
  const auto& sizes = instr.IntsAttr(ir::Attr::kSliceSizes);
  int64_t ivd = instr.IntAttr(ir::Attr::kIndexVectorDim);
  std::vector<int64_t> window_operand_dims;  // operand dims that appear as offset dims
  for (int64_t d = 0; d < static_cast<int64_t>(in_dims.size()); ++d) {
    if (!Contains(collapsed, d)) window_operand_dims.push_back(d);
  }
  Literal out(instr.shape);
  auto in_strides = ir::RowMajorStrides(in_dims);
  for (int64_t i = 0; i < out.element_count(); ++i) {
    auto idx = Unravel(i, instr.shape.dims());
    std::vector<int64_t> batch, offset;
    for (int64_t d = 0; d < static_cast<int64_t>(idx.size()); ++d) {
      (Contains(offset_dims, d) ? offset : batch).push_back(idx[static_cast<size_t>(d)]);
    }
    auto vec = IndexVector(*ops[1], ivd, batch);
    std::vector<int64_t> src(in_dims.size(), 0);
    for (size_t k = 0; k < start_map.size(); ++k) src[static_cast<size_t>(start_map[k])] = vec[k];
    for (size_t d = 0; d < src.size(); ++d)
      src[d] = std::clamp<int64_t>(src[d], 0, in_dims[d] - sizes[d]);
    for (size_t k = 0; k < offset.size(); ++k)
      src[static_cast<size_t>(window_operand_dims[k])] += offset[k];
    CopyElement(in, Ravel(src, in_strides), out, i);
  }
  return out;
}

Result<Literal> EvalScatter(const Instruction& instr, const Operands& ops,
                            const ComputationFn& eval) {
  Literal out = *ops[0];
  const Literal& updates = *ops[2];
  const auto& out_dims = out.shape().dims();
  const auto& window_dims = instr.IntsAttr(ir::Attr::kUpdateWindowDims);
  const auto& inserted = instr.IntsAttr(ir::Attr::kInsertedWindowDims);
  const auto& to_operand = instr.IntsAttr(ir::Attr::kScatterDimsToOperandDims);
  int64_t ivd = instr.IntAttr(ir::Attr::kIndexVectorDim);
  std::vector<int64_t> window_operand_dims, window_sizes(out_dims.size(), 1);
  for (int64_t d = 0; d < static_cast<int64_t>(out_dims.size()); ++d) {
    if (!Contains(inserted, d)) window_operand_dims.push_back(d);
  }
  for (size_t k = 0; k < window_dims.size(); ++k) {
    window_sizes[static_cast<size_t>(window_operand_dims[k])] =
        updates.shape().dims()[static_cast<size_t>(window_dims[k])];
  }
  Combiner combine(instr.ComputationAttr(ir::Attr::kToApply), eval);
  auto out_strides = ir::RowMajorStrides(out_dims);
  DispatchElementType(out.shape().type(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    for (int64_t u = 0; u < updates.element_count(); ++u) {
      auto idx = Unravel(u, updates.shape().dims());
      std::vector<int64_t> batch, window;
      for (int64_t d = 0; d < static_cast<int64_t>(idx.size()); ++d) {
        (Contains(window_dims, d) ? window : batch).push_back(idx[static_cast<size_t>(d)]);
      }
      auto vec = IndexVector(*ops[1], ivd, batch);
      std::vector<int64_t> dst(out_dims.size(), 0);
      for (size_t k = 0; k < to_operand.size(); ++k)
        dst[static_cast<size_t>(to_operand[k])] = vec[k];
      bool in_bounds = true;
      for (size_t d = 0; d < dst.size(); ++d)
        in_bounds = in_bounds && dst[d] >= 0 &&
                    dst[d] <= out_dims[d] - window_sizes[d];  // no overflow near INT64_MAX
      if (!in_bounds) continue;
      for (size_t k = 0; k < window.size(); ++k)
        dst[static_cast<size_t>(window_operand_dims[k])] += window[k];
      int64_t o = Ravel(dst, out_strides);
      out.Set<T>(o, combine.Apply<T>(out.Get<T>(o), updates.Get<T>(u)));
    }
  });
  if (!combine.status().ok()) return combine.status();
  return out;
}

}  // namespace detrain::interp::internal
