// Data movement ops: broadcast, reshape, transpose, slice, concatenate, pad, reverse,
// dynamic-slice, dynamic-update-slice. They copy element bits and never round.
#include <algorithm>

#include "compiler/interp/interp_internal.h"

namespace detrain::interp::internal {

std::vector<int64_t> Unravel(int64_t linear, const std::vector<int64_t>& dims) {
  std::vector<int64_t> index(dims.size(), 0);
  for (size_t i = dims.size(); i-- > 0;) {
    if (dims[i] == 0) return index;
    index[i] = linear % dims[i];
    linear /= dims[i];
  }
  return index;
}

int64_t Ravel(const std::vector<int64_t>& index, const std::vector<int64_t>& strides) {
  int64_t linear = 0;
  for (size_t i = 0; i < index.size(); ++i) linear += index[i] * strides[i];
  return linear;
}

int64_t ReadIndex(const Literal& lit, int64_t i) {
  return DispatchElementType(lit.shape().type(), [&](auto tag) -> int64_t {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_same_v<T, uint64_t>) {
      uint64_t v = lit.Get<uint64_t>(i);
      return v > static_cast<uint64_t>(INT64_MAX) ? INT64_MAX : static_cast<int64_t>(v);
    } else {
      return static_cast<int64_t>(lit.Get<T>(i));
    }
  });
}

namespace {

// out[i] = in[source(index of i)] for every element of the result.
template <typename Fn>
Literal Gather1(const Shape& shape, const Literal& in, Fn source) {
  Literal out(shape);
  auto in_strides = ir::RowMajorStrides(in.shape().dims());
  for (int64_t i = 0; i < out.element_count(); ++i) {
    CopyElement(in, Ravel(source(Unravel(i, shape.dims())), in_strides), out, i);
  }
  return out;
}

}  // namespace

Result<Literal> EvalBroadcast(const Instruction& instr, const Operands& ops) {
  const auto& dims = instr.IntsAttr(ir::Attr::kDimensions);
  return Gather1(instr.shape, *ops[0], [&](const std::vector<int64_t>& idx) {
    std::vector<int64_t> src;
    for (int64_t d : dims) src.push_back(idx[static_cast<size_t>(d)]);
    return src;
  });
}

Result<Literal> EvalReshape(const Instruction& instr, const Operands& ops) {
  Literal out(instr.shape);
  out.mutable_bytes() = ops[0]->bytes();  // row-major order is unchanged
  return out;
}

Result<Literal> EvalTranspose(const Instruction& instr, const Operands& ops) {
  const auto& perm = instr.IntsAttr(ir::Attr::kDimensions);
  return Gather1(instr.shape, *ops[0], [&](const std::vector<int64_t>& idx) {
    std::vector<int64_t> src(idx.size());
    for (size_t i = 0; i < perm.size(); ++i) src[static_cast<size_t>(perm[i])] = idx[i];
    return src;
  });
}

Result<Literal> EvalSlice(const Instruction& instr, const Operands& ops) {
  const auto& slice = instr.FindAttr(ir::Attr::kSlice)->slice;
  return Gather1(instr.shape, *ops[0], [&](std::vector<int64_t> idx) {
    for (size_t i = 0; i < idx.size(); ++i) idx[i] = slice[i].start + idx[i] * slice[i].stride;
    return idx;
  });
}

Result<Literal> EvalConcatenate(const Instruction& instr, const Operands& ops) {
  size_t dim = static_cast<size_t>(instr.IntsAttr(ir::Attr::kDimensions)[0]);
  Literal out(instr.shape);
  auto out_strides = ir::RowMajorStrides(instr.shape.dims());
  int64_t offset = 0;
  for (const Literal* in : ops) {
    for (int64_t i = 0; i < in->element_count(); ++i) {
      auto idx = Unravel(i, in->shape().dims());
      idx[dim] += offset;
      CopyElement(*in, i, out, Ravel(idx, out_strides));
    }
    offset += in->shape().dims()[dim];
  }
  return out;
}

Result<Literal> EvalPad(const Instruction& instr, const Operands& ops) {
  const auto& pad = instr.FindAttr(ir::Attr::kPadding)->padding;
  Literal out(instr.shape);
  for (int64_t i = 0; i < out.element_count(); ++i) CopyElement(*ops[1], 0, out, i);
  auto out_strides = ir::RowMajorStrides(instr.shape.dims());
  const Literal& in = *ops[0];
  for (int64_t i = 0; i < in.element_count(); ++i) {
    auto idx = Unravel(i, in.shape().dims());
    bool inside = true;
    for (size_t d = 0; d < idx.size(); ++d) {
      idx[d] = pad[d].lo + idx[d] * (pad[d].interior + 1);  // negative lo/hi crop
      inside = inside && idx[d] >= 0 && idx[d] < instr.shape.dims()[d];
    }
    if (inside) CopyElement(in, i, out, Ravel(idx, out_strides));
  }
  return out;
}

Result<Literal> EvalReverse(const Instruction& instr, const Operands& ops) {
  const auto& dims = instr.IntsAttr(ir::Attr::kDimensions);
  return Gather1(instr.shape, *ops[0], [&](std::vector<int64_t> idx) {
    for (int64_t d : dims)
      idx[static_cast<size_t>(d)] =
          instr.shape.dims()[static_cast<size_t>(d)] - 1 - idx[static_cast<size_t>(d)];
    return idx;
  });
}

namespace {

// Start indices clamped so that a window of `sizes` fits in `dims` (XLA semantics).
std::vector<int64_t> ClampedStarts(const Operands& ops, size_t first,
                                   const std::vector<int64_t>& dims,
                                   const std::vector<int64_t>& sizes) {
  std::vector<int64_t> starts;
  for (size_t d = 0; d < dims.size(); ++d) {
    starts.push_back(std::clamp<int64_t>(ReadIndex(*ops[first + d], 0), 0, dims[d] - sizes[d]));
  }
  return starts;
}

}  // namespace

Result<Literal> EvalDynamicSlice(const Instruction& instr, const Operands& ops) {
  auto starts = ClampedStarts(ops, 1, ops[0]->shape().dims(), instr.shape.dims());
  return Gather1(instr.shape, *ops[0], [&](std::vector<int64_t> idx) {
    for (size_t d = 0; d < idx.size(); ++d) idx[d] += starts[d];
    return idx;
  });
}

Result<Literal> EvalDynamicUpdateSlice(const Instruction& instr, const Operands& ops) {
  Literal out = *ops[0];
  const Literal& update = *ops[1];
  auto starts = ClampedStarts(ops, 2, out.shape().dims(), update.shape().dims());
  auto strides = ir::RowMajorStrides(out.shape().dims());
  for (int64_t i = 0; i < update.element_count(); ++i) {
    auto idx = Unravel(i, update.shape().dims());
    for (size_t d = 0; d < idx.size(); ++d) idx[d] += starts[d];
    CopyElement(update, i, out, Ravel(idx, strides));
  }
  return out;
}

}  // namespace detrain::interp::internal
