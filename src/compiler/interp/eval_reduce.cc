// Reductions with the canonical order (DESIGN.md §2, docs/ir.md): reduce, reduce-window and
// all-reduce; plus the Combiner that applies a `to_apply` computation to two scalars.
#include <algorithm>

#include "compiler/interp/interp_internal.h"

namespace detrain::interp::internal {

Combiner::Combiner(const ir::Computation* computation, ComputationFn eval)
    : computation_(computation), eval_(std::move(eval)) {
  const Instruction* root = computation->root();
  auto params = computation->Parameters();
  auto op = ir::AsBinaryOp(root->opcode);
  if (op && params.size() == 2 && root->operands.size() == 2) {
    if (root->operands[0] == params[0] && root->operands[1] == params[1]) {
      direct_ = op;
    } else if (root->operands[0] == params[1] && root->operands[1] == params[0]) {
      direct_ = op;
      lhs_is_p0_ = false;
    }
  }
}

Result<Literal> EvalReduce(const Instruction& instr, const Operands& ops,
                           const ComputationFn& eval) {
  const Literal& in = *ops[0];
  const auto& in_dims = in.shape().dims();
  std::vector<int64_t> reduced = instr.IntsAttr(ir::Attr::kDimensions);
  std::sort(reduced.begin(), reduced.end());  // elements are visited row-major over these
  std::vector<int64_t> kept, reduced_sizes;
  for (int64_t d = 0; d < static_cast<int64_t>(in_dims.size()); ++d) {
    if (!std::binary_search(reduced.begin(), reduced.end(), d)) kept.push_back(d);
  }
  for (int64_t d : reduced) reduced_sizes.push_back(in_dims[static_cast<size_t>(d)]);
  int64_t per_output = 1;
  for (int64_t s : reduced_sizes) per_output *= s;
  auto strides = ir::RowMajorStrides(in_dims);
  Literal out(instr.shape);
  Combiner combine(instr.ComputationAttr(ir::Attr::kToApply), eval);
  DispatchElementType(in.shape().type(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    T init = ops[1]->Get<T>(0);
    std::vector<T> values(static_cast<size_t>(per_output));
    for (int64_t o = 0; o < out.element_count(); ++o) {
      auto out_idx = Unravel(o, instr.shape.dims());
      std::vector<int64_t> idx(in_dims.size());
      for (size_t k = 0; k < kept.size(); ++k) idx[static_cast<size_t>(kept[k])] = out_idx[k];
      for (int64_t r = 0; r < per_output; ++r) {
        auto r_idx = Unravel(r, reduced_sizes);
        for (size_t k = 0; k < reduced.size(); ++k) idx[static_cast<size_t>(reduced[k])] = r_idx[k];
        values[static_cast<size_t>(r)] = in.Get<T>(Ravel(idx, strides));
      }
      out.Set<T>(o, CanonicalReduce<T>(values, init, combine));
    }
  });
  if (!combine.status().ok()) return combine.status();
  return out;
}

Result<Literal> EvalReduceWindow(const Instruction& instr, const Operands& ops,
                                 const ComputationFn& eval) {
  const Literal& in = *ops[0];
  const auto& in_dims = in.shape().dims();
  const auto& window = instr.FindAttr(ir::Attr::kWindow)->window;
  std::vector<int64_t> window_sizes;
  for (const ir::WindowDim& w : window) window_sizes.push_back(w.size);
  int64_t taps = 1;
  for (int64_t s : window_sizes) taps *= s;
  auto strides = ir::RowMajorStrides(in_dims);
  Literal out(instr.shape);
  Combiner combine(instr.ComputationAttr(ir::Attr::kToApply), eval);
  DispatchElementType(in.shape().type(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    T init = ops[1]->Get<T>(0);
    std::vector<T> values;
    for (int64_t o = 0; o < out.element_count(); ++o) {
      auto out_idx = Unravel(o, instr.shape.dims());
      values.clear();
      for (int64_t t = 0; t < taps; ++t) {
        auto w_idx = Unravel(t, window_sizes);
        std::vector<int64_t> idx(in_dims.size());
        bool inside = true;
        for (size_t d = 0; d < in_dims.size() && inside; ++d) {
          const ir::WindowDim& w = window[d];
          int64_t pos = out_idx[d] * w.stride + w_idx[d] * w.rhs_dilate - w.pad_lo;
          inside = pos >= 0 && pos % w.lhs_dilate == 0 && pos / w.lhs_dilate < in_dims[d];
          idx[d] = pos / w.lhs_dilate;
        }
        if (inside) values.push_back(in.Get<T>(Ravel(idx, strides)));  // padding is skipped
      }
      out.Set<T>(o, CanonicalReduce<T>(values, init, combine));
    }
  });
  if (!combine.status().ok()) return combine.status();
  return out;
}

Result<std::vector<Literal>> EvalAllReduce(const Instruction& instr,
                                           const std::vector<const Literal*>& values,
                                           const ComputationFn& eval) {
  int64_t replicas = static_cast<int64_t>(values.size());
  std::vector<std::vector<int64_t>> groups;
  if (const ir::AttrValue* g = instr.FindAttr(ir::Attr::kReplicaGroups)) groups = g->lists;
  if (groups.empty()) {
    groups.emplace_back();
    for (int64_t r = 0; r < replicas; ++r) groups.back().push_back(r);
  }
  std::vector<int> covered(static_cast<size_t>(replicas), 0);
  for (const auto& group : groups) {
    for (int64_t r : group) {
      if (r >= replicas)
        return InvalidArgument("all-reduce replica group names replica " + std::to_string(r) +
                               " of " + std::to_string(replicas));
      covered[static_cast<size_t>(r)] = 1;
    }
  }
  if (std::count(covered.begin(), covered.end(), 0) != 0)
    return InvalidArgument("all-reduce replica groups must cover every replica");
  std::vector<Literal> results(static_cast<size_t>(replicas), Literal(instr.shape));
  Combiner combine(instr.ComputationAttr(ir::Attr::kToApply), eval);
  DispatchElementType(instr.shape.type(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    for (const auto& group : groups) {
      for (int64_t i = 0; i < results[0].element_count(); ++i) {
        std::vector<T> per_replica;
        for (int64_t r : group) per_replica.push_back(values[static_cast<size_t>(r)]->Get<T>(i));
        T sum = PairwiseTree<T>(std::move(per_replica), combine);  // in group order
        for (int64_t r : group) results[static_cast<size_t>(r)].Set<T>(i, sum);
      }
    }
  });
  if (!combine.status().ok()) return combine.status();
  return results;
}

}  // namespace detrain::interp::internal
