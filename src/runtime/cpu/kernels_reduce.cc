// reduce and reduce-window: the canonical pairwise-64 order (semantics/orders.h); reduce-window
// skips padding and holes and reduces the window's remaining elements in row-major tap order,
// as the interpreter does.
#include <algorithm>
#include <cstring>

#include "compiler/semantics/semantics.h"
#include "runtime/cpu/copy.h"
#include "runtime/cpu/kernels.h"
#include "runtime/cpu/reduce_core.h"

namespace detrain::runtime::cpu {
namespace {

uint64_t ReadScalar(const uint8_t* p, int size) {
  uint64_t bits = 0;
  std::memcpy(&bits, p, static_cast<size_t>(size));
  return bits;
}

class ReduceKernel : public CpuKernel {
 public:
  explicit ReduceKernel(ReduceCore core) : core_(std::move(core)) {}
  Status Run(uint8_t* arena, const ExecContext& ctx) const override {
    core_.Run(arena + in_.offset,
              ReadScalar(arena + init_.offset, ir::ElementTypeByteSize(init_.type)),
              arena + out_.offset, ctx);
    return Status::Ok();
  }
  ReduceCore core_;
  ArrayRef in_, init_, out_;
};

// reduce-window. The taps of a window that fall inside the operand are, per dim, a list of
// input positions depending only on that dim's output index (validity is separable: padding and
// dilation holes are per dim), so a window's values in row-major tap order are the row-major
// product of the per-dim lists, precomputed at load (offsets_[d] for output index o of dim d are
// offsets_[d][begin_[d][o] .. begin_[d][o + 1])).
class ReduceWindowKernel : public CpuKernel {
 public:
  Status Run(uint8_t* arena, const ExecContext& ctx) const override {
    const uint8_t* in = arena + in_.offset;
    uint8_t* out = arena + out_.offset;
    uint64_t init_bits = ReadScalar(arena + init_.offset, ir::ElementTypeByteSize(init_.type));
    ir::DispatchElementType(in_.type, [&](auto tag) {
      using T = typename decltype(tag)::type;
      T init;
      std::memcpy(&init, &init_bits, sizeof(T));
      WithCombiner<T>(combiner_, [&](auto combine) { RunTyped<T>(in, out, init, combine, ctx); });
    });
    return Status::Ok();
  }

  // Builds the per-dim tap lists from the spec (window_, taps_dims_, in_, out_ set).
  Status Prepare() {
    const size_t rank = out_.dims.size();
    if (rank > kMaxRank)
      return InvalidArgument("plan: a reduce-window of rank " + std::to_string(rank));
    const auto strides = RowMajorStrides(in_.dims);
    offsets_.assign(rank, {});
    begin_.assign(rank, {});
    int64_t table = 0;
    for (size_t d = 0; d < rank; ++d) table += out_.dims[d] * taps_dims_[d];
    if (table > (int64_t{1} << 26))
      return InvalidArgument("plan: a reduce-window of " + std::to_string(table) + " taps per dim");
    for (size_t d = 0; d < rank; ++d) {
      const auto& w = window_[d];
      for (int64_t o = 0; o < out_.dims[d]; ++o) {
        begin_[d].push_back(static_cast<int64_t>(offsets_[d].size()));
        for (int64_t t = 0; t < taps_dims_[d]; ++t) {
          int64_t pos = o * w.stride() + t * w.rhs_dilate() - w.pad_lo();
          if (pos >= 0 && pos % w.lhs_dilate() == 0 && pos / w.lhs_dilate() < in_.dims[d])
            offsets_[d].push_back(pos / w.lhs_dilate() * strides[d]);
        }
      }
      begin_[d].push_back(static_cast<int64_t>(offsets_[d].size()));
    }
    // Rows: the last dimension is not windowed (size 1, stride 1, no padding or dilation), so
    // output element j of a row reads the row's taps at + j.
    if (rank >= 1) {
      const auto& w = window_[rank - 1];
      const bool plain = w.size() == 1 && w.stride() == 1 && w.pad_lo() == 0 && w.pad_hi() == 0 &&
                         w.lhs_dilate() == 1 && w.rhs_dilate() == 1 &&
                         in_.dims[rank - 1] == out_.dims[rank - 1];
      int64_t most = 1;  // a bound on any window's taps: the product of the dims' largest
      for (size_t d = 0; plain && d + 1 < rank; ++d) {
        int64_t largest = 0;
        for (size_t o = 0; o + 1 < begin_[d].size(); ++o)
          largest = std::max(largest, begin_[d][o + 1] - begin_[d][o]);
        most = std::min(most * largest, semantics::kReduceLeafSize + 1);
      }
      row_ = plain && out_.dims[rank - 1] > 1 && most <= semantics::kReduceLeafSize
                 ? out_.dims[rank - 1]
                 : 0;
    }
    return Status::Ok();
  }

  ArrayRef in_, init_, out_;
  std::vector<plan::v2::WindowDim> window_;
  std::vector<int64_t> taps_dims_;
  int64_t taps_ = 1;
  DecodedProgram combiner_;
  int64_t row_ = 0;  // the row length when the last dimension is not windowed, else 0

 private:
  static constexpr size_t kMaxRank = 16;

  template <typename T, typename Combine>
  void RunTyped(const uint8_t* in, uint8_t* out, T init, Combine combine,
                const ExecContext& ctx) const {
    const size_t rank = out_.dims.size();
    constexpr int64_t kPerBlock = 256;
    if (row_ > 0) return RunRows<T>(in, out, init, combine, ctx);
    ForBlocks(ctx, (out_.elements + kPerBlock - 1) / kPerBlock, [&](int64_t block) {
      // Per thread, grown once: never reallocated in the step loop.
      thread_local std::vector<T> values, scratch;
      const int64_t o0 = block * kPerBlock;
      const int64_t o1 = std::min(out_.elements, o0 + kPerBlock);
      int64_t od[kMaxRank];  // the output index of o, advanced in row-major order
      for (int64_t rest = o0, d = static_cast<int64_t>(rank); d-- > 0;) {
        od[d] = rest % out_.dims[static_cast<size_t>(d)];
        rest /= out_.dims[static_cast<size_t>(d)];
      }
      for (int64_t o = o0; o < o1; ++o) {
        const int64_t* list[kMaxRank];
        int64_t count[kMaxRank], at[kMaxRank];
        int64_t n = 1;
        for (size_t d = 0; d < rank; ++d) {
          const auto& begin = begin_[d];
          list[d] = offsets_[d].data() + begin[static_cast<size_t>(od[d])];
          count[d] = begin[static_cast<size_t>(od[d]) + 1] - begin[static_cast<size_t>(od[d])];
          n *= count[d];
          at[d] = 0;
        }
        // Visits the window's elements in row-major order of the tap lists.
        auto for_each_tap = [&](auto&& visit) {
          for (int64_t i = 0; i < n; ++i) {
            int64_t off = 0;
            for (size_t d = 0; d < rank; ++d) off += list[d][at[d]];
            T v;
            std::memcpy(&v, in + off * static_cast<int64_t>(sizeof(T)), sizeof(T));
            visit(i, v);
            NextIndex(at, count, rank);
          }
        };
        T r = init;
        if (n <= semantics::kReduceLeafSize) {
          // One leaf: CanonicalReduce is the chain from init, left to right.
          for_each_tap([&](int64_t, T v) { r = combine(r, v); });
        } else {
          if (values.size() < static_cast<size_t>(n)) values.resize(static_cast<size_t>(n));
          const size_t leaves = static_cast<size_t>(semantics::ReduceLeafCount(n)) + 1;
          if (scratch.size() < leaves) scratch.resize(leaves);
          for_each_tap([&](int64_t i, T v) { values[static_cast<size_t>(i)] = v; });
          r = semantics::CanonicalReduce<T>(
              n, init, [&](int64_t i) { return values[static_cast<size_t>(i)]; }, combine,
              scratch.data());
        }
        std::memcpy(out + o * static_cast<int64_t>(sizeof(T)), &r, sizeof(T));
        NextIndex(od, out_.dims.data(), rank);
      }
    });
  }

  // The outputs one row at a time (Prepare set row_: every window has at most one leaf of taps):
  // the row's tap offsets are walked once and each element's chain (init, then the taps in
  // row-major order) runs across the row, so every element sees its values in the same order as
  // alone.
  template <typename T, typename Combine>
  void RunRows(const uint8_t* in, uint8_t* out, T init, Combine combine,
               const ExecContext& ctx) const {
    const size_t rank = out_.dims.size();
    const int64_t rows = out_.elements / row_;
    const int64_t rows_per_block = std::max<int64_t>(1, 256 / row_);
    const T* src = reinterpret_cast<const T*>(in);
    ForBlocks(ctx, (rows + rows_per_block - 1) / rows_per_block, [&](int64_t block) {
      // Per thread, grown once: never reallocated in the step loop.
      thread_local std::vector<T> acc;
      if (acc.size() < static_cast<size_t>(row_)) acc.resize(static_cast<size_t>(row_));
      const int64_t r0 = block * rows_per_block, r1 = std::min(rows, r0 + rows_per_block);
      for (int64_t r = r0; r < r1; ++r) {
        const int64_t* list[kMaxRank];
        int64_t count[kMaxRank], at[kMaxRank];
        int64_t n = 1;
        for (int64_t rest = r, d = static_cast<int64_t>(rank) - 1; d-- > 0;) {
          const size_t dd = static_cast<size_t>(d);
          const int64_t od = rest % out_.dims[dd];
          rest /= out_.dims[dd];
          list[dd] = offsets_[dd].data() + begin_[dd][static_cast<size_t>(od)];
          count[dd] = begin_[dd][static_cast<size_t>(od) + 1] - begin_[dd][static_cast<size_t>(od)];
          n *= count[dd];
          at[dd] = 0;
        }
        T* a = acc.data();
        std::fill(a, a + row_, init);
        for (int64_t i = 0; i < n; ++i) {
          int64_t off = 0;
          for (size_t d = 0; d + 1 < rank; ++d) off += list[d][at[d]];
          const T* x = src + off;
          for (int64_t j = 0; j < row_; ++j) a[j] = combine(a[j], x[j]);
          NextIndex(at, count, rank - 1);
        }
        std::memcpy(out + r * row_ * static_cast<int64_t>(sizeof(T)), a,
                    static_cast<size_t>(row_) * sizeof(T));
      }
    });
  }

  std::vector<std::vector<int64_t>> offsets_, begin_;
};

}  // namespace

Result<std::unique_ptr<CpuKernel>> MakeReduce(const plan::CheckedKernel& k) {
  auto kernel =
      std::make_unique<ReduceKernel>(ReduceCore::Make(k.spec->reduce(), k.in[0].type, k.combiner));
  kernel->in_ = k.in[0];
  kernel->init_ = k.in[1];
  kernel->out_ = k.out[0];
  return std::unique_ptr<CpuKernel>(std::move(kernel));
}

Result<std::unique_ptr<CpuKernel>> MakeReduceWindow(const plan::CheckedKernel& k) {
  const plan::v2::ReduceWindowSpec& s = k.spec->reduce_window();
  auto kernel = std::make_unique<ReduceWindowKernel>();
  kernel->taps_ = 1;
  for (const plan::v2::WindowDim& w : s.window()) {
    kernel->taps_dims_.push_back(w.size());
    kernel->taps_ *= w.size();  // the reader checked the product
  }
  kernel->combiner_ = k.combiner;
  kernel->window_.assign(s.window().begin(), s.window().end());
  kernel->in_ = k.in[0];
  kernel->init_ = k.in[1];
  kernel->out_ = k.out[0];
  DETRAIN_RETURN_IF_ERROR(kernel->Prepare());
  return std::unique_ptr<CpuKernel>(std::move(kernel));
}

}  // namespace detrain::runtime::cpu
