// See reduce_core.h.
#include "runtime/cpu/reduce_core.h"

#include <cstring>

#include "compiler/semantics/semantics.h"
#include "runtime/cpu/checked.h"

namespace detrain::runtime::cpu {
namespace {

using ir::BinaryOp;

template <typename T>
T Load(const uint8_t* p, int64_t i) {
  T v;
  std::memcpy(&v, p + i * static_cast<int64_t>(sizeof(T)), sizeof(T));
  return v;
}

}  // namespace

Result<ReduceCore> ReduceCore::Make(const plan::v2::ReduceSpec& spec, ir::ElementType type) {
  ReduceCore r;
  r.type_ = type;
  DETRAIN_ASSIGN_OR_RETURN(r.combiner_, DecodeProgram(spec.combiner().program(), {type, type}));
  if (r.combiner_.ops[static_cast<size_t>(r.combiner_.result)].type != type) {
    return InvalidArgument("plan: reduce combiner of the wrong type");
  }
  std::vector<int64_t> dims(spec.operand_dims().begin(), spec.operand_dims().end());
  DETRAIN_ASSIGN_OR_RETURN(r.operand_elements_, CheckedElementCount(dims));
  std::vector<bool> reduced(dims.size(), false);
  int64_t last = -1;
  for (int64_t d : spec.dimensions()) {
    if (d <= last || d >= static_cast<int64_t>(dims.size()))
      return InvalidArgument("plan: bad reduce dimensions");
    reduced[static_cast<size_t>(d)] = true;
    last = d;
  }
  std::vector<int64_t> strides(dims.size(), 1);
  for (size_t d = dims.size(); d-- > 1;) strides[d - 1] = strides[d] * dims[d];
  std::vector<int64_t> red_dims, red_strides;
  r.output_elements_ = 1;
  r.per_output_ = 1;
  for (size_t d = 0; d < dims.size(); ++d) {
    if (reduced[d]) {
      red_dims.push_back(dims[d]);
      red_strides.push_back(strides[d]);
      r.per_output_ *= dims[d];
    } else {
      r.kept_dims_.push_back(dims[d]);
      r.kept_strides_.push_back(strides[d]);
      r.output_elements_ *= dims[d];
    }
  }
  // Contiguous when the reduced dims are exactly the trailing ones.
  bool trailing = true;
  for (size_t d = 0; d < dims.size(); ++d) {
    if (reduced[d] && d + red_dims.size() < dims.size()) trailing = false;
  }
  if (!trailing && r.per_output_ > 0) {
    r.reduced_offsets_.resize(static_cast<size_t>(r.per_output_));
    std::vector<int64_t> idx(red_dims.size(), 0);
    for (int64_t i = 0; i < r.per_output_; ++i) {
      int64_t off = 0;
      for (size_t k = 0; k < idx.size(); ++k) off += idx[k] * red_strides[k];
      r.reduced_offsets_[static_cast<size_t>(i)] = off;
      for (size_t k = idx.size(); k-- > 0;) {
        if (++idx[k] < red_dims[k]) break;
        idx[k] = 0;
      }
    }
  }
  return r;
}

void ReduceCore::Run(const uint8_t* in, uint64_t init_bits, uint8_t* out,
                     const ExecContext& ctx) const {
  ir::DispatchElementType(type_, [&](auto tag) {
    using T = typename decltype(tag)::type;
    T init;
    std::memcpy(&init, &init_bits, sizeof(T));
    WithCombiner<T>(combiner_, [&](auto combine) {
      constexpr int64_t kOutputsPerBlock = 64;
      const int64_t blocks = (output_elements_ + kOutputsPerBlock - 1) / kOutputsPerBlock;
      ForBlocks(ctx, blocks, [&](int64_t block) {
        std::vector<T> scratch(static_cast<size_t>(semantics::ReduceLeafCount(per_output_)) + 1);
        std::vector<int64_t> idx(kept_dims_.size());
        int64_t o0 = block * kOutputsPerBlock,
                o1 = std::min(output_elements_, o0 + kOutputsPerBlock);
        for (int64_t o = o0; o < o1; ++o) {
          int64_t base = 0, rest = o;
          for (size_t k = kept_dims_.size(); k-- > 0;) {
            base += (rest % kept_dims_[k]) * kept_strides_[k];
            rest /= kept_dims_[k];
          }
          T v;
          if (reduced_offsets_.empty()) {
            v = semantics::CanonicalReduce<T>(
                per_output_, init, [&](int64_t i) { return Load<T>(in, base + i); }, combine,
                scratch.data());
          } else {
            v = semantics::CanonicalReduce<T>(
                per_output_, init,
                [&](int64_t i) {
                  return Load<T>(in, base + reduced_offsets_[static_cast<size_t>(i)]);
                },
                combine, scratch.data());
          }
          std::memcpy(out + o * static_cast<int64_t>(sizeof(T)), &v, sizeof(T));
        }
      });
    });
  });
}

}  // namespace detrain::runtime::cpu
