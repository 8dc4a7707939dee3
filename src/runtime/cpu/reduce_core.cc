// See reduce_core.h.
#include "runtime/cpu/reduce_core.h"

#include <algorithm>
#include <cstring>
#include <type_traits>
#include <vector>

#include "compiler/semantics/semantics.h"
#include "runtime/cpu/isa_kernels.h"

namespace detrain::runtime::cpu {
namespace {

using ir::BinaryOp;

// Per-thread space for leaf values, grown once and reused (no allocation in the steady state).
template <typename T>
std::vector<T>& LeafValues(size_t n) {
  thread_local std::vector<T> values;
  if (values.size() < n) values.resize(n);
  return values;
}

template <typename T>
T Load(const uint8_t* p, int64_t i) {
  T v;
  std::memcpy(&v, p + i * static_cast<int64_t>(sizeof(T)), sizeof(T));
  return v;
}

}  // namespace

ReduceCore ReduceCore::Make(const plan::v2::ReduceSpec& spec, ir::ElementType type,
                            DecodedProgram combiner) {
  ReduceCore r;
  r.type_ = type;
  r.combiner_ = std::move(combiner);
  if (type == ir::ElementType::kF32 && r.combiner_.direct && !r.combiner_.swapped) {
    if (r.combiner_.direct_op == BinaryOp::kAdd) r.lanes_op_ = kReduceAdd;
    if (r.combiner_.direct_op == BinaryOp::kMaximum) r.lanes_op_ = kReduceMax;
    if (r.combiner_.direct_op == BinaryOp::kMinimum) r.lanes_op_ = kReduceMin;
  }
  // The reader checked the dims (ascending, inside the rank) and both element counts.
  std::vector<int64_t> dims(spec.operand_dims().begin(), spec.operand_dims().end());
  r.operand_elements_ = 1;
  for (int64_t d : dims) r.operand_elements_ *= d;
  std::vector<bool> reduced(dims.size(), false);
  for (int64_t d : spec.dimensions()) reduced[static_cast<size_t>(d)] = true;
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

// The canonical reduce (semantics::CanonicalReduce: leaves of 64 elements, each from init and
// left to right, then the pairwise tree over leaves) computed in an order that keeps more work in
// flight, with every leaf and every tree step the same operations on the same values:
//  - many outputs: up to kLanes outputs at a time, their leaves' chains interleaved element by
//    element (independent chains, so the core overlaps them), then each output's tree;
//  - few outputs with long rows: the leaves of one output spread over the threads, kLanes leaves
//    interleaved, then its tree.
void ReduceCore::Run(const uint8_t* in, uint64_t init_bits, uint8_t* out,
                     const ExecContext& ctx) const {
  ir::DispatchElementType(type_, [&](auto tag) {
    using T = typename decltype(tag)::type;
    T init;
    std::memcpy(&init, &init_bits, sizeof(T));
    auto store = [&](int64_t o, T v) {
      std::memcpy(out + o * static_cast<int64_t>(sizeof(T)), &v, sizeof(T));
    };
    if (per_output_ <= 0) {
      for (int64_t o = 0; o < output_elements_; ++o) store(o, init);
      return;
    }
    auto offset = [&](int64_t i) {
      return reduced_offsets_.empty() ? i : reduced_offsets_[static_cast<size_t>(i)];
    };
    auto base_of = [&](int64_t o) {
      int64_t base = 0, rest = o;
      for (size_t k = kept_dims_.size(); k-- > 0;) {
        base += (rest % kept_dims_[k]) * kept_strides_[k];
        rest /= kept_dims_[k];
      }
      return base;
    };
    const int64_t leaves = semantics::ReduceLeafCount(per_output_);
    auto leaf_end = [&](int64_t l) {
      return std::min(per_output_, (l + 1) * semantics::kReduceLeafSize);
    };
    constexpr int64_t kLanes = 16;
    const IsaKernels& kern = KernelsFor(ctx.isa);
    WithCombiner<T>(combiner_, [&](auto combine) {
      const int64_t threads = ctx.pool == nullptr ? 1 : static_cast<int64_t>(ctx.pool->size());
      if (output_elements_ < 4 * threads && leaves >= 2 * kLanes) {
        std::vector<T>& values = LeafValues<T>(static_cast<size_t>(leaves));
        for (int64_t o = 0; o < output_elements_; ++o) {
          const int64_t base = base_of(o);
          const int64_t groups = (leaves + kLanes - 1) / kLanes;
          ForBlocks(ctx, groups, [&](int64_t g) {
            const int64_t l0 = g * kLanes, l1 = std::min(leaves, l0 + kLanes);
            T acc[kLanes];
            if (l1 - l0 == kLanes && leaf_end(l1 - 1) - (l1 - 1) * semantics::kReduceLeafSize ==
                                         semantics::kReduceLeafSize) {
              uint32_t redo = kReduceLanesUnhandled;
              if constexpr (std::is_same_v<T, float>) {
                if (lanes_op_ >= 0 && reduced_offsets_.empty()) {
                  int64_t bases[kLanes];
                  for (int64_t q = 0; q < kLanes; ++q)
                    bases[q] = base + (l0 + q) * semantics::kReduceLeafSize;
                  redo =
                      kern.reduce_lanes(lanes_op_, reinterpret_cast<const float*>(in), bases,
                                        kLanes, nullptr, 0, semantics::kReduceLeafSize, init, acc);
                }
              }
              if (redo != kReduceLanesUnhandled) {
                for (int64_t q = 0; q < kLanes; ++q) {
                  const int64_t l = l0 + q;
                  values[static_cast<size_t>(l)] =
                      (redo >> q) & 1u
                          ? semantics::ReduceLeaf<T>(
                                l * semantics::kReduceLeafSize, leaf_end(l), init,
                                [&](int64_t i) { return Load<T>(in, base + offset(i)); }, combine)
                          : acc[q];
                }
                return;
              }
              for (int64_t q = 0; q < kLanes; ++q) acc[q] = init;
              for (int64_t j = 0; j < semantics::kReduceLeafSize; ++j) {
                for (int64_t q = 0; q < kLanes; ++q) {
                  const int64_t i = (l0 + q) * semantics::kReduceLeafSize + j;
                  acc[q] = combine(acc[q], Load<T>(in, base + offset(i)));
                }
              }
              for (int64_t q = 0; q < kLanes; ++q) values[static_cast<size_t>(l0 + q)] = acc[q];
              return;
            }
            for (int64_t l = l0; l < l1; ++l) {
              values[static_cast<size_t>(l)] = semantics::ReduceLeaf<T>(
                  l * semantics::kReduceLeafSize, leaf_end(l), init,
                  [&](int64_t i) { return Load<T>(in, base + offset(i)); }, combine);
            }
          });
          store(o, semantics::PairwiseTreeInPlace(values.data(), leaves, combine));
        }
        return;
      }
      // Outputs in blocks of 64 per task, kLanes (fewer where the leaves are many) at a time.
      const int64_t lanes = std::max<int64_t>(1, std::min<int64_t>(kLanes, 65536 / leaves));
      constexpr int64_t kOutputsPerBlock = 64;
      const int64_t blocks = (output_elements_ + kOutputsPerBlock - 1) / kOutputsPerBlock;
      ForBlocks(ctx, blocks, [&](int64_t block) {
        std::vector<T>& values = LeafValues<T>(static_cast<size_t>(leaves * (lanes + 1)));
        T* tree = values.data() + leaves * lanes;
        const int64_t o0 = block * kOutputsPerBlock,
                      o1 = std::min(output_elements_, o0 + kOutputsPerBlock);
        for (int64_t w0 = o0; w0 < o1; w0 += lanes) {
          const int64_t nw = std::min(lanes, o1 - w0);
          int64_t bases[kLanes];
          for (int64_t w = 0; w < nw; ++w) bases[w] = base_of(w0 + w);
          T acc[kLanes];
          for (int64_t l = 0; l < leaves; ++l) {
            const int64_t begin = l * semantics::kReduceLeafSize, end = leaf_end(l);
            uint32_t redo = kReduceLanesUnhandled;
            if constexpr (std::is_same_v<T, float>) {
              if (lanes_op_ >= 0) {
                redo =
                    kern.reduce_lanes(lanes_op_, reinterpret_cast<const float*>(in), bases, nw,
                                      reduced_offsets_.empty() ? nullptr : reduced_offsets_.data(),
                                      begin, end, init, acc);
              }
            }
            if (redo == kReduceLanesUnhandled) {
              for (int64_t w = 0; w < nw; ++w) acc[w] = init;
              for (int64_t i = begin; i < end; ++i) {
                const int64_t off = offset(i);
                for (int64_t w = 0; w < nw; ++w)
                  acc[w] = combine(acc[w], Load<T>(in, bases[w] + off));
              }
            } else {
              for (int64_t w = 0; w < nw; ++w) {
                if (((redo >> w) & 1u) == 0) continue;
                acc[w] = semantics::ReduceLeaf<T>(
                    begin, end, init, [&](int64_t i) { return Load<T>(in, bases[w] + offset(i)); },
                    combine);
              }
            }
            for (int64_t w = 0; w < nw; ++w) values[static_cast<size_t>(l * lanes + w)] = acc[w];
          }
          for (int64_t w = 0; w < nw; ++w) {
            for (int64_t l = 0; l < leaves; ++l)
              tree[l] = values[static_cast<size_t>(l * lanes + w)];
            store(w0 + w, semantics::PairwiseTreeInPlace(tree, leaves, combine));
          }
        }
      });
    });
  });
}

}  // namespace detrain::runtime::cpu
