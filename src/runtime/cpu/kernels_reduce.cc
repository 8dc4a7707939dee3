// reduce and reduce-window: the canonical pairwise-64 order (semantics/orders.h); reduce-window
// skips padding and holes and reduces the window's remaining elements in row-major tap order,
// as the interpreter does.
#include <cstring>

#include "compiler/semantics/semantics.h"
#include "runtime/cpu/checked.h"
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

class ReduceWindowKernel : public CpuKernel {
 public:
  Status Run(uint8_t* arena, const ExecContext& ctx) const override {
    const uint8_t* in = arena + in_.offset;
    uint8_t* out = arena + out_.offset;
    uint64_t init_bits = ReadScalar(arena + init_.offset, ir::ElementTypeByteSize(init_.type));
    const auto strides = RowMajorStrides(in_.dims);
    ir::DispatchElementType(in_.type, [&](auto tag) {
      using T = typename decltype(tag)::type;
      T init;
      std::memcpy(&init, &init_bits, sizeof(T));
      auto combine = [&](T a, T b) { return Combine<T>(combiner_, a, b); };
      constexpr int64_t kPerBlock = 64;
      ForBlocks(ctx, (out_.elements + kPerBlock - 1) / kPerBlock, [&](int64_t block) {
        std::vector<T> values, scratch;
        std::vector<int64_t> oidx(out_.dims.size()), tidx(taps_dims_.size());
        for (int64_t o = block * kPerBlock; o < std::min(out_.elements, (block + 1) * kPerBlock);
             ++o) {
          int64_t rest = o;
          for (size_t d = oidx.size(); d-- > 0;)
            oidx[d] = rest % out_.dims[d], rest /= out_.dims[d];
          values.clear();
          std::fill(tidx.begin(), tidx.end(), 0);
          for (int64_t t = 0; t < taps_; ++t) {
            bool inside = true;
            int64_t off = 0;
            for (size_t d = 0; d < oidx.size() && inside; ++d) {
              const auto& w = window_[d];
              int64_t pos = oidx[d] * w.stride() + tidx[d] * w.rhs_dilate() - w.pad_lo();
              inside = pos >= 0 && pos % w.lhs_dilate() == 0 && pos / w.lhs_dilate() < in_.dims[d];
              off += (pos / w.lhs_dilate()) * strides[d];
            }
            if (inside) {
              T v;
              std::memcpy(&v, in + off * static_cast<int64_t>(sizeof(T)), sizeof(T));
              values.push_back(v);
            }
            NextIndex(tidx, taps_dims_);
          }
          scratch.resize(
              static_cast<size_t>(semantics::ReduceLeafCount(static_cast<int64_t>(values.size()))) +
              1);
          T r = semantics::CanonicalReduce<T>(
              static_cast<int64_t>(values.size()), init,
              [&](int64_t i) { return values[static_cast<size_t>(i)]; }, combine, scratch.data());
          std::memcpy(out + o * static_cast<int64_t>(sizeof(T)), &r, sizeof(T));
        }
      });
    });
    return Status::Ok();
  }

  ArrayRef in_, init_, out_;
  std::vector<plan::v2::WindowDim> window_;
  std::vector<int64_t> taps_dims_;
  int64_t taps_ = 1;
  DecodedProgram combiner_;
};

}  // namespace

Result<std::unique_ptr<CpuKernel>> MakeReduce(const plan::v2::Kernel& k, ArrayRef in, ArrayRef init,
                                              ArrayRef out) {
  if (in.type != init.type || in.type != out.type || init.elements != 1) {
    return InvalidArgument("plan: kernel " + k.name() + ": reduce operand types");
  }
  DETRAIN_ASSIGN_OR_RETURN(ReduceCore core, ReduceCore::Make(k.reduce(), in.type));
  if (core.operand_elements() != in.elements || core.output_elements() != out.elements) {
    return InvalidArgument("plan: kernel " + k.name() + ": reduce sizes do not match its buffers");
  }
  auto kernel = std::make_unique<ReduceKernel>(std::move(core));
  kernel->in_ = std::move(in);
  kernel->init_ = std::move(init);
  kernel->out_ = std::move(out);
  return std::unique_ptr<CpuKernel>(std::move(kernel));
}

Result<std::unique_ptr<CpuKernel>> MakeReduceWindow(const plan::v2::Kernel& k, ArrayRef in,
                                                    ArrayRef init, ArrayRef out) {
  const auto& s = k.reduce_window();
  bool ok = in.type == init.type && in.type == out.type && init.elements == 1 &&
            s.window_size() == static_cast<int>(in.dims.size()) &&
            out.dims.size() == in.dims.size();
  auto kernel = std::make_unique<ReduceWindowKernel>();
  for (int d = 0; ok && d < s.window_size(); ++d) {
    const auto& w = s.window(d);
    ok = w.size() >= 1 && w.stride() >= 1 && w.lhs_dilate() >= 1 && w.rhs_dilate() >= 1 &&
         w.size() <= (int64_t{1} << 20);
    kernel->taps_dims_.push_back(w.size());
  }
  if (!ok) return InvalidArgument("plan: kernel " + k.name() + ": inconsistent reduce-window spec");
  DETRAIN_ASSIGN_OR_RETURN(kernel->taps_, CheckedElementCount(kernel->taps_dims_));
  DETRAIN_ASSIGN_OR_RETURN(kernel->combiner_,
                           DecodeProgram(s.combiner().program(), {in.type, in.type}));
  kernel->window_.assign(s.window().begin(), s.window().end());
  kernel->in_ = std::move(in);
  kernel->init_ = std::move(init);
  kernel->out_ = std::move(out);
  return std::unique_ptr<CpuKernel>(std::move(kernel));
}

}  // namespace detrain::runtime::cpu
