// Shape rules of the ops that combine or index many elements: gather, scatter, reduce,
// reduce-window, dot, convolution, all-reduce (see shape_inference.h).
#include <algorithm>

#include "compiler/ir/shape_inference_internal.h"

namespace detrain::ir::shape_internal {
namespace {

bool IsSorted(const std::vector<int64_t>& v) { return std::is_sorted(v.begin(), v.end()); }
bool Contains(const std::vector<int64_t>& v, int64_t x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

// The dimensions of the indices array other than index_vector_dim, and the index vector length.
Result<std::vector<int64_t>> IndexBatchDims(const Shape& indices, int64_t ivd,
                                            int64_t* vector_len) {
  if (!IsInteger(indices.type()))
    return Fail("indices must have an integer type, got " + indices.ToString());
  if (ivd < 0 || ivd > indices.rank())
    return Fail("index_vector_dim " + std::to_string(ivd) + " is outside [0, rank of indices]");
  std::vector<int64_t> batch;
  for (int d = 0; d < indices.rank(); ++d) {
    if (d != ivd) batch.push_back(indices.dim(d));
  }
  *vector_len = ivd == indices.rank() ? 1 : indices.dim(static_cast<int>(ivd));
  return batch;
}

}  // namespace

Result<Shape> InferGather(const Instruction& instr) {
  DETRAIN_ASSIGN_OR_RETURN(Shape a, ArrayOperand(instr, 0));
  DETRAIN_ASSIGN_OR_RETURN(Shape idx, ArrayOperand(instr, 1));
  const auto& offset_dims = instr.IntsAttr(Attr::kOffsetDims);
  const auto& collapsed = instr.IntsAttr(Attr::kCollapsedSliceDims);
  const auto& start_map = instr.IntsAttr(Attr::kStartIndexMap);
  const auto& sizes = instr.IntsAttr(Attr::kSliceSizes);
  int64_t vlen = 0;
  DETRAIN_ASSIGN_OR_RETURN(auto batch,
                           IndexBatchDims(idx, instr.IntAttr(Attr::kIndexVectorDim), &vlen));
  if (static_cast<int>(sizes.size()) != a.rank())
    return Fail("gather slice_sizes needs one size per operand dimension");
  for (int d = 0; d < a.rank(); ++d) {
    int64_t s = sizes[static_cast<size_t>(d)];
    if (s < 0 || s > a.dim(d))
      return Fail("gather slice size " + std::to_string(s) + " exceeds operand dimension " +
                  std::to_string(d));
  }
  DETRAIN_RETURN_IF_ERROR(CheckDimList(collapsed, a.rank(), "gather collapsed_slice_dims"));
  DETRAIN_RETURN_IF_ERROR(CheckDimList(start_map, a.rank(), "gather start_index_map"));
  if (!IsSorted(collapsed)) return Fail("gather collapsed_slice_dims must be sorted");
  for (int64_t d : collapsed) {
    if (sizes[static_cast<size_t>(d)] != 1)
      return Fail("gather collapsed dimension " + std::to_string(d) + " must have slice size 1");
  }
  if (static_cast<int64_t>(start_map.size()) != vlen)
    return Fail("gather start_index_map needs one entry per index vector element (" +
                std::to_string(vlen) + ")");
  int64_t out_rank = static_cast<int64_t>(batch.size() + offset_dims.size());
  if (offset_dims.size() + collapsed.size() != sizes.size())
    return Fail("gather offset_dims must have one entry per slice dimension that is not collapsed");
  DETRAIN_RETURN_IF_ERROR(CheckDimList(offset_dims, out_rank, "gather offset_dims"));
  if (!IsSorted(offset_dims)) return Fail("gather offset_dims must be sorted");
  std::vector<int64_t> out;
  size_t next_batch = 0, next_offset = 0;
  for (int64_t d = 0; d < out_rank; ++d) {
    if (Contains(offset_dims, d)) {
      while (Contains(collapsed, static_cast<int64_t>(next_offset))) ++next_offset;
      out.push_back(sizes[next_offset++]);
    } else {
      out.push_back(batch[next_batch++]);
    }
  }
  return Shape(a.type(), out);
}

Result<Shape> InferScatter(const Instruction& instr) {
  DETRAIN_ASSIGN_OR_RETURN(Shape a, ArrayOperand(instr, 0));
  DETRAIN_ASSIGN_OR_RETURN(Shape idx, ArrayOperand(instr, 1));
  DETRAIN_ASSIGN_OR_RETURN(Shape upd, ArrayOperand(instr, 2));
  if (upd.type() != a.type()) return Fail("scatter updates must have the operand's element type");
  DETRAIN_RETURN_IF_ERROR(
      CheckCombiner(instr.ComputationAttr(Attr::kToApply), a.type(), "scatter"));
  const auto& window_dims = instr.IntsAttr(Attr::kUpdateWindowDims);
  const auto& inserted = instr.IntsAttr(Attr::kInsertedWindowDims);
  const auto& to_operand = instr.IntsAttr(Attr::kScatterDimsToOperandDims);
  int64_t vlen = 0;
  DETRAIN_ASSIGN_OR_RETURN(auto batch,
                           IndexBatchDims(idx, instr.IntAttr(Attr::kIndexVectorDim), &vlen));
  DETRAIN_RETURN_IF_ERROR(CheckDimList(window_dims, upd.rank(), "scatter update_window_dims"));
  DETRAIN_RETURN_IF_ERROR(CheckDimList(inserted, a.rank(), "scatter inserted_window_dims"));
  DETRAIN_RETURN_IF_ERROR(
      CheckDimList(to_operand, a.rank(), "scatter scatter_dims_to_operand_dims"));
  if (!IsSorted(window_dims) || !IsSorted(inserted))
    return Fail("scatter update_window_dims and inserted_window_dims must be sorted");
  if (static_cast<int64_t>(window_dims.size() + inserted.size()) != a.rank()) {
    return Fail("scatter needs update_window_dims + inserted_window_dims = operand rank");
  }
  if (static_cast<int64_t>(to_operand.size()) != vlen)
    return Fail("scatter_dims_to_operand_dims needs one entry per index vector element");
  if (upd.rank() != static_cast<int>(window_dims.size() + batch.size())) {
    return Fail(
        "scatter updates rank must be the index batch rank plus the number of update_window_dims");
  }
  size_t next_batch = 0, next_window = 0;
  for (int d = 0; d < upd.rank(); ++d) {
    if (Contains(window_dims, d)) {
      while (Contains(inserted, static_cast<int64_t>(next_window))) ++next_window;
      if (upd.dim(d) > a.dim(static_cast<int>(next_window++)))
        return Fail("scatter update window dimension " + std::to_string(d) +
                    " is larger than the operand");
    } else if (upd.dim(d) != batch[next_batch++]) {
      return Fail("scatter update dimension " + std::to_string(d) +
                  " must match the indices' batch dimension");
    }
  }
  return a;
}

Result<Shape> InferReduce(const Instruction& instr) {
  DETRAIN_ASSIGN_OR_RETURN(Shape a, ArrayOperand(instr, 0));
  DETRAIN_ASSIGN_OR_RETURN(Shape init, ArrayOperand(instr, 1));
  if (!(init == Shape::Scalar(a.type())))
    return Fail("reduce init value must be a scalar of the operand's type, got " + init.ToString());
  DETRAIN_RETURN_IF_ERROR(CheckCombiner(instr.ComputationAttr(Attr::kToApply), a.type(), "reduce"));
  const auto& dims = instr.IntsAttr(Attr::kDimensions);
  DETRAIN_RETURN_IF_ERROR(CheckDimList(dims, a.rank(), "reduce dimensions"));
  std::vector<int64_t> out;
  for (int d = 0; d < a.rank(); ++d) {
    if (!Contains(dims, d)) out.push_back(a.dim(d));
  }
  return Shape(a.type(), out);
}

Result<Shape> InferReduceWindow(const Instruction& instr) {
  DETRAIN_ASSIGN_OR_RETURN(Shape a, ArrayOperand(instr, 0));
  DETRAIN_ASSIGN_OR_RETURN(Shape init, ArrayOperand(instr, 1));
  if (!(init == Shape::Scalar(a.type())))
    return Fail("reduce-window init value must be a scalar of the operand's type");
  DETRAIN_RETURN_IF_ERROR(
      CheckCombiner(instr.ComputationAttr(Attr::kToApply), a.type(), "reduce-window"));
  const AttrValue* w = instr.FindAttr(Attr::kWindow);
  if (!w || static_cast<int>(w->window.size()) != a.rank())
    return Fail("reduce-window needs a window with one entry per operand dimension");
  std::vector<int64_t> out;
  for (int d = 0; d < a.rank(); ++d) {
    const WindowDim& wd = w->window[static_cast<size_t>(d)];
    if (wd.size < 1 || wd.stride < 1 || wd.lhs_dilate < 1 || wd.rhs_dilate < 1)
      return Fail("window sizes, strides and dilations must be >= 1");
    DETRAIN_ASSIGN_OR_RETURN(int64_t size, WindowedSize(a.dim(d), wd));
    out.push_back(size);
  }
  return Shape(a.type(), out);
}

Result<Shape> InferDot(const Instruction& instr) {
  DETRAIN_ASSIGN_OR_RETURN(Shape l, ArrayOperand(instr, 0));
  DETRAIN_ASSIGN_OR_RETURN(Shape r, ArrayOperand(instr, 1));
  if (l.type() != r.type() || !OpcodeAcceptsType(Opcode::kDot, l.type()))
    return Fail("dot needs numeric operands of one element type, got " + l.ToString() + " and " +
                r.ToString());
  const auto& lb = instr.IntsAttr(Attr::kLhsBatchDims);
  const auto& rb = instr.IntsAttr(Attr::kRhsBatchDims);
  const auto& lc = instr.IntsAttr(Attr::kLhsContractingDims);
  const auto& rc = instr.IntsAttr(Attr::kRhsContractingDims);
  std::vector<int64_t> lall = lb, rall = rb;
  lall.insert(lall.end(), lc.begin(), lc.end());
  rall.insert(rall.end(), rc.begin(), rc.end());
  DETRAIN_RETURN_IF_ERROR(CheckDimList(lall, l.rank(), "dot lhs batch and contracting dimensions"));
  DETRAIN_RETURN_IF_ERROR(CheckDimList(rall, r.rank(), "dot rhs batch and contracting dimensions"));
  if (lb.size() != rb.size() || lc.size() != rc.size())
    return Fail("dot needs as many lhs as rhs batch (and contracting) dimensions");
  for (size_t i = 0; i < lall.size(); ++i) {
    if (l.dim(static_cast<int>(lall[i])) != r.dim(static_cast<int>(rall[i]))) {
      return Fail("dot lhs dimension " + std::to_string(lall[i]) + " and rhs dimension " +
                  std::to_string(rall[i]) + " must have the same size");
    }
  }
  std::vector<int64_t> out;
  for (int64_t d : lb) out.push_back(l.dim(static_cast<int>(d)));
  for (int d = 0; d < l.rank(); ++d) {
    if (!Contains(lall, d)) out.push_back(l.dim(d));
  }
  for (int d = 0; d < r.rank(); ++d) {
    if (!Contains(rall, d)) out.push_back(r.dim(d));
  }
  return Shape(l.type(), out);
}

Result<Shape> InferConvolution(const Instruction& instr) {
  DETRAIN_ASSIGN_OR_RETURN(Shape in, ArrayOperand(instr, 0));
  DETRAIN_ASSIGN_OR_RETURN(Shape k, ArrayOperand(instr, 1));
  if (!OpcodeAcceptsType(Opcode::kConvolution, in.type()) || k.type() != in.type()) {
    return Fail("convolution needs f32 operands");
  }
  const AttrValue* labels = instr.FindAttr(Attr::kDimLabels);
  if (!labels) return Fail("convolution needs dim_labels");
  DETRAIN_ASSIGN_OR_RETURN(ConvDims cd, ParseDimLabels(labels->s));
  size_t ns = cd.in_spatial.size();
  if (in.rank() != static_cast<int>(ns + 2) || k.rank() != in.rank())
    return Fail("convolution operand ranks must match dim_labels");
  const AttrValue* w = instr.FindAttr(Attr::kWindow);
  if (!w || w->window.size() != ns)
    return Fail("convolution needs a window with one entry per spatial dimension");
  if (in.dim(static_cast<int>(cd.in_feature)) != k.dim(static_cast<int>(cd.k_in))) {
    return Fail("convolution input features (" +
                std::to_string(in.dim(static_cast<int>(cd.in_feature))) +
                ") must equal the kernel's input features (" +
                std::to_string(k.dim(static_cast<int>(cd.k_in))) + ")");
  }
  std::vector<int64_t> out(ns + 2);
  out[static_cast<size_t>(cd.out_batch)] = in.dim(static_cast<int>(cd.in_batch));
  out[static_cast<size_t>(cd.out_feature)] = k.dim(static_cast<int>(cd.k_out));
  for (size_t s = 0; s < ns; ++s) {
    const WindowDim& wd = w->window[s];
    if (wd.size != k.dim(static_cast<int>(cd.k_spatial[s])))
      return Fail("convolution window size must equal the kernel's spatial size");
    if (wd.stride < 1 || wd.lhs_dilate < 1 || wd.rhs_dilate < 1)
      return Fail("window strides and dilations must be >= 1");
    DETRAIN_ASSIGN_OR_RETURN(out[static_cast<size_t>(cd.out_spatial[s])],
                             WindowedSize(in.dim(static_cast<int>(cd.in_spatial[s])), wd));
  }
  return Shape(in.type(), out);
}

Result<Shape> InferAllReduce(const Instruction& instr) {
  DETRAIN_ASSIGN_OR_RETURN(Shape a, ArrayOperand(instr, 0));
  DETRAIN_RETURN_IF_ERROR(
      CheckCombiner(instr.ComputationAttr(Attr::kToApply), a.type(), "all-reduce"));
  const AttrValue* groups = instr.FindAttr(Attr::kReplicaGroups);
  std::vector<int64_t> all;
  if (groups) {
    for (const auto& g : groups->lists) {
      if (g.empty()) return Fail("all-reduce replica groups must not be empty");
      all.insert(all.end(), g.begin(), g.end());
    }
  }
  std::sort(all.begin(), all.end());  // O(n log n): a hostile list can hold 10^6 ids
  for (size_t i = 0; i < all.size(); ++i) {
    if (all[i] < 0 || (i > 0 && all[i] == all[i - 1]))
      return Fail("all-reduce replica ids must be non-negative and appear once");
  }
  return a;
}

}  // namespace detrain::ir::shape_internal
