// dot and convolution. dot packs its operands into [batch, m, k] and [batch, k, n] (a copy:
// no value changes) and runs the ISA path's GEMM, whose every output is one fmaf chain over k
// ascending from +0 (DESIGN.md §2); threads split row blocks. convolution is im2col (+0 at
// padding and dilation holes, k = tap * features + feature) followed by the same GEMM: exactly
// the interpreter's chain. Integer dots accumulate with wrap-around (semantics::DotChain).
#include <array>
#include <cstring>
#include <memory>
#include <optional>

#include "compiler/codegen/common/dot_view.h"
#include "compiler/semantics/semantics.h"
#include "runtime/cpu/checked.h"
#include "runtime/cpu/copy.h"
#include "runtime/cpu/gemm.h"
#include "runtime/cpu/isa_kernels.h"
#include "runtime/cpu/kernels.h"

namespace detrain::runtime::cpu {
namespace {

class DotKernel : public CpuKernel {
 public:
  Status Run(uint8_t* arena, const ExecContext& ctx) const override {
    const int size = ir::ElementTypeByteSize(out_.type);
    const uint8_t* a = arena + lhs_.offset;
    const uint8_t* b = arena + rhs_.offset;
    uint8_t* c = arena + out_.offset;
    if (transposed_out_) {
      // out = transpose(A B) = B^T A^T: A' = B^T (rows n, k), B' = A^T (k, columns m).
      MatrixView va{reinterpret_cast<const float*>(b), (*rhs_view_)[2], (*rhs_view_)[1], 0};
      MatrixView vb{reinterpret_cast<const float*>(a), (*lhs_view_)[2], (*lhs_view_)[1], 0};
      BatchedGemm(va, vb, reinterpret_cast<float*>(arena + transposed_out_->offset), 1, n_, m_, k_,
                  ctx, /*swapped=*/true);
      return Status::Ok();
    }
    if (out_.type == ir::ElementType::kF32 && lhs_view_ && rhs_view_) {
      MatrixView va{reinterpret_cast<const float*>(a), (*lhs_view_)[1], (*lhs_view_)[2],
                    (*lhs_view_)[0]};
      MatrixView vb{reinterpret_cast<const float*>(b), (*rhs_view_)[1], (*rhs_view_)[2],
                    (*rhs_view_)[0]};
      BatchedGemm(va, vb, reinterpret_cast<float*>(c), batch_, m_, n_, k_, ctx);
      return Status::Ok();
    }
    std::vector<uint8_t> pa, pb;
    if (!IsIdentity(lhs_perm_)) {
      pa.resize(static_cast<size_t>(lhs_.bytes));
      PermuteCopy(a, lhs_.dims, lhs_perm_, size, pa.data());
      a = pa.data();
    }
    if (!IsIdentity(rhs_perm_)) {
      pb.resize(static_cast<size_t>(rhs_.bytes));
      PermuteCopy(b, rhs_.dims, rhs_perm_, size, pb.data());
      b = pb.data();
    }
    if (out_.type == ir::ElementType::kF32) {
      MatrixView va{reinterpret_cast<const float*>(a), k_, 1, m_ * k_};
      MatrixView vb{reinterpret_cast<const float*>(b), n_, 1, k_ * n_};
      BatchedGemm(va, vb, reinterpret_cast<float*>(c), batch_, m_, n_, k_, ctx);
      return Status::Ok();
    }
    ir::DispatchElementType(out_.type, [&](auto tag) {
      using T = typename decltype(tag)::type;
      const T* ta = reinterpret_cast<const T*>(a);
      const T* tb = reinterpret_cast<const T*>(b);
      T* tc = reinterpret_cast<T*>(c);
      for (int64_t bi = 0; bi < batch_; ++bi) {
        for (int64_t i = 0; i < m_; ++i) {
          for (int64_t j = 0; j < n_; ++j) {
            const T* row = ta + (bi * m_ + i) * k_;
            const T* col = tb + bi * k_ * n_ + j;
            tc[(bi * m_ + i) * n_ + j] = semantics::DotChain<T>(
                k_, [&](int64_t p) { return row[p]; }, [&](int64_t p) { return col[p * n_]; });
          }
        }
      }
    });
    return Status::Ok();
  }

  ArrayRef lhs_, rhs_, out_;
  std::vector<int64_t> lhs_perm_, rhs_perm_;
  // Strides (batch, rows, columns) of A = lhs as [b, m, k] and B = rhs as [b, k, n], read in
  // place; nullopt where a copy is needed.
  std::optional<std::array<int64_t, 3>> lhs_view_, rhs_view_;
  // Set by FoldDotTranspose: the transpose's result, written instead of out_.
  std::optional<ArrayRef> transposed_out_;
  int64_t batch_ = 0, m_ = 0, n_ = 0, k_ = 0;
};

class ConvolutionKernel : public CpuKernel {
 public:
  static constexpr size_t kMaxSpatial = 64;  // the IR's rank limit

  Status Run(uint8_t* arena, const ExecContext& ctx) const override {
    const float* in = reinterpret_cast<const float*>(arena + in_.offset);
    const float* w = reinterpret_cast<const float*>(arena + kernel_.offset);
    float* out = reinterpret_cast<float*>(arena + out_.offset);
    const size_t ns = window_.size();
    const auto in_strides = RowMajorStrides(in_.dims), k_strides = RowMajorStrides(kernel_.dims),
               out_strides = RowMajorStrides(out_.dims);
    const int64_t features = in_.dims[static_cast<size_t>(s_.in_feature())];
    const int64_t out_features = out_.dims[static_cast<size_t>(s_.out_feature())];
    std::vector<int64_t> taps_dims, pos_dims{out_.dims[static_cast<size_t>(s_.out_batch())]};
    for (const auto& wd : window_) taps_dims.push_back(wd.size());
    for (size_t s = 0; s < ns; ++s)
      pos_dims.push_back(out_.dims[static_cast<size_t>(s_.out_spatial(static_cast<int>(s)))]);
    int64_t taps = 1, positions = 1;
    for (int64_t t : taps_dims) taps *= t;
    for (int64_t p : pos_dims) positions *= p;
    const int64_t kk = taps * features;
    // im2col: A[p][t * features + z]. Scratch is the kernel's own, sized once: no allocation
    // in the step loop after the first run.
    std::vector<float>& a = im2col_;
    a.resize(static_cast<size_t>(positions * kk));
    // Blocks of positions (not one task each); a feature run is copied with memcpy when the
    // feature dimension is innermost.
    const int64_t fstride = in_strides[static_cast<size_t>(s_.in_feature())];
    constexpr int64_t kPositionsPerBlock = 64;
    // Per spatial dimension: the input's extent and stride; without input dilation a tap's
    // position needs no division.
    int64_t limit[kMaxSpatial], stride_in[kMaxSpatial];
    bool lhs_dilated = false;
    for (size_t s = 0; s < ns; ++s) {
      const size_t dim = static_cast<size_t>(s_.in_spatial(static_cast<int>(s)));
      limit[s] = in_.dims[dim];
      stride_in[s] = in_strides[dim];
      lhs_dilated = lhs_dilated || window_[s].lhs_dilate() != 1;
    }
    const int64_t batch_stride = in_strides[static_cast<size_t>(s_.in_batch())];
    ForBlocks(ctx, (positions + kPositionsPerBlock - 1) / kPositionsPerBlock, [&](int64_t blk) {
      int64_t pidx[kMaxSpatial + 1], tidx[kMaxSpatial];
      const int64_t p0 = blk * kPositionsPerBlock;
      const int64_t p1 = std::min(positions, p0 + kPositionsPerBlock);
      for (int64_t rest = p0, d = static_cast<int64_t>(pos_dims.size()); d-- > 0;) {
        pidx[d] = rest % pos_dims[static_cast<size_t>(d)];
        rest /= pos_dims[static_cast<size_t>(d)];
      }
      for (int64_t p = p0; p < p1; ++p) {
        std::fill(tidx, tidx + ns, 0);
        for (int64_t t = 0; t < taps; ++t) {
          bool inside = true;
          int64_t base = pidx[0] * batch_stride;
          for (size_t s = 0; s < ns; ++s) {
            const auto& wd = window_[s];
            int64_t pos = pidx[s + 1] * wd.stride() + tidx[s] * wd.rhs_dilate() - wd.pad_lo();
            if (lhs_dilated) {
              inside = inside && pos >= 0 && pos % wd.lhs_dilate() == 0 &&
                       pos / wd.lhs_dilate() < limit[s];
              pos = inside ? pos / wd.lhs_dilate() : 0;
            } else {
              inside = inside && pos >= 0 && pos < limit[s];
            }
            base += pos * stride_in[s];
          }
          float* row = a.data() + p * kk + t * features;
          if (!inside) {
            std::fill(row, row + features, 0.0f);
          } else if (features == 1) {
            row[0] = in[base];
          } else if (fstride == 1) {
            std::memcpy(row, in + base, static_cast<size_t>(features) * 4);
          } else {
            for (int64_t z = 0; z < features; ++z) row[z] = in[base + z * fstride];
          }
          NextIndex(tidx, taps_dims.data(), ns);  // the next tap, row-major over the window
        }
        NextIndex(pidx, pos_dims.data(), pos_dims.size());  // the next position
      }
    });
    // W[t * features + z][f].
    std::vector<float>& wm = weights_;
    wm.resize(static_cast<size_t>(kk * out_features));
    std::vector<int64_t> tidx(ns, 0);
    for (int64_t t = 0; t < taps; ++t) {
      int64_t base = 0;
      for (size_t s = 0; s < ns; ++s)
        base += tidx[s] * k_strides[static_cast<size_t>(s_.k_spatial(static_cast<int>(s)))];
      for (int64_t z = 0; z < features; ++z) {
        for (int64_t f = 0; f < out_features; ++f) {
          wm[static_cast<size_t>((t * features + z) * out_features + f)] =
              w[base + z * k_strides[static_cast<size_t>(s_.k_in())] +
                f * k_strides[static_cast<size_t>(s_.k_out())]];
        }
      }
      NextIndex(tidx, taps_dims);
    }
    // The result is [positions, features] row-major when the batch and spatial dimensions are
    // in order with the feature innermost (b01f): the GEMM writes it in place.
    bool direct = out_strides[static_cast<size_t>(s_.out_feature())] == 1;
    for (size_t d = pos_dims.size(), stride = static_cast<size_t>(out_features);
         direct && d-- > 0;) {
      size_t od = d == 0 ? static_cast<size_t>(s_.out_batch())
                         : static_cast<size_t>(s_.out_spatial(static_cast<int>(d - 1)));
      direct = out_strides[od] == static_cast<int64_t>(stride);
      stride *= static_cast<size_t>(pos_dims[d]);
    }
    if (direct) {
      BatchedGemm(MatrixView{a.data(), kk, 1, 0}, MatrixView{wm.data(), out_features, 1, 0}, out, 1,
                  positions, out_features, kk, ctx);
      return Status::Ok();
    }
    std::vector<float>& c = result_;
    c.resize(static_cast<size_t>(positions * out_features));
    BatchedGemm(MatrixView{a.data(), kk, 1, 0}, MatrixView{wm.data(), out_features, 1, 0}, c.data(),
                1, positions, out_features, kk, ctx);
    for (int64_t p = 0; p < positions; ++p) {
      int64_t rest = p, off = 0;
      for (size_t d = pos_dims.size(); d-- > 0;) {
        int64_t i = rest % pos_dims[d];
        rest /= pos_dims[d];
        size_t od = d == 0 ? static_cast<size_t>(s_.out_batch())
                           : static_cast<size_t>(s_.out_spatial(static_cast<int>(d - 1)));
        off += i * out_strides[od];
      }
      for (int64_t f = 0; f < out_features; ++f)
        out[off + f * out_strides[static_cast<size_t>(s_.out_feature())]] =
            c[static_cast<size_t>(p * out_features + f)];
    }
    return Status::Ok();
  }

  ArrayRef in_, kernel_, out_;
  mutable std::vector<float> im2col_, weights_, result_;  // scratch (Run is one at a time)
  plan::v2::ConvolutionSpec s_;
  std::vector<plan::v2::WindowDim> window_;
};

// The sum of per-shard dots by their tree, one output tile at a time (GemmTree): made by
// FoldDotTree from an elementwise kernel that is an add tree over dot results. An operand that
// the schedule would overwrite before the tree runs is copied, where its dot would have run, into
// the tree's own stash (StashKernel).
struct DotTreeStash {
  std::vector<float> data;  // sized once when the plan is loaded
};

class DotTreeKernel : public CpuKernel {
 public:
  struct Operand {
    int64_t offset = 0;  // bytes: into the arena, or into the stash
    bool stashed = false;
    int64_t rows = 0, cols = 0;  // strides in elements
  };
  struct Leaf {
    Operand a, b;
    int64_t k = 0;
    bool swapped = false;
  };

  Status Run(uint8_t* arena, const ExecContext& ctx) const override {
    auto* stash = reinterpret_cast<uint8_t*>(stash_->data.data());
    auto view = [&](const Operand& o) {
      return MatrixView{reinterpret_cast<const float*>((o.stashed ? stash : arena) + o.offset),
                        o.rows, o.cols, 0};
    };
    for (size_t s = 0; s < leaves_.size(); ++s) {
      GemmLeaf& g = gemm_[s];
      g.a = view(leaves_[s].a);
      g.b = view(leaves_[s].b);
      g.k = leaves_[s].k;
      g.swapped = leaves_[s].swapped;
    }
    GemmTree(gemm_.data(), static_cast<int64_t>(gemm_.size()), steps_.data(),
             static_cast<int64_t>(steps_.size()), result_,
             reinterpret_cast<float*>(arena + out_.offset), m_, n_, ctx);
    return Status::Ok();
  }

  std::vector<Leaf> leaves_;
  mutable std::vector<GemmLeaf> gemm_;  // leaves_ with addresses (Run is one at a time)
  std::vector<TreeStep> steps_;
  int32_t result_ = 0;
  ArrayRef out_;
  int64_t m_ = 0, n_ = 0;
  std::shared_ptr<DotTreeStash> stash_;
};

// Runs where a folded dot would have: copies the dot's operands the tree cannot read in place.
class StashKernel : public CpuKernel {
 public:
  struct Copy {
    int64_t from = 0, to = 0, bytes = 0;  // arena offset, stash offset
  };
  Status Run(uint8_t* arena, const ExecContext&) const override {
    auto* stash = reinterpret_cast<uint8_t*>(stash_->data.data());
    for (const Copy& c : copies_)
      std::memcpy(stash + c.to, arena + c.from, static_cast<size_t>(c.bytes));
    return Status::Ok();
  }
  std::vector<Copy> copies_;
  std::shared_ptr<DotTreeStash> stash_;
};

bool Overlap(const ArrayRef& x, const ArrayRef& y) {
  return x.bytes > 0 && y.bytes > 0 && x.offset < y.offset + y.bytes &&
         y.offset < x.offset + x.bytes;
}

bool InRange(int64_t d, size_t rank) { return d >= 0 && d < static_cast<int64_t>(rank); }

}  // namespace

Result<std::unique_ptr<CpuKernel>> MakeDot(const plan::v2::Kernel& k, ArrayRef lhs, ArrayRef rhs,
                                           ArrayRef out) {
  const plan::v2::DotSpec& s = k.dot();
  auto kernel = std::make_unique<DotKernel>();
  kernel->lhs_perm_.assign(s.lhs_permutation().begin(), s.lhs_permutation().end());
  kernel->rhs_perm_.assign(s.rhs_permutation().begin(), s.rhs_permutation().end());
  if (!IsPermutation(kernel->lhs_perm_, lhs.dims.size()) ||
      !IsPermutation(kernel->rhs_perm_, rhs.dims.size())) {
    return InvalidArgument("plan: kernel " + k.name() + ": bad dot permutations");
  }
  if (lhs.type != out.type || rhs.type != out.type || out.type == ir::ElementType::kPred) {
    return InvalidArgument("plan: kernel " + k.name() + ": dot element types");
  }
  DETRAIN_ASSIGN_OR_RETURN(int64_t lhs_n, CheckedElementCount({s.batch(), s.m(), s.k()}));
  DETRAIN_ASSIGN_OR_RETURN(int64_t rhs_n, CheckedElementCount({s.batch(), s.k(), s.n()}));
  DETRAIN_ASSIGN_OR_RETURN(int64_t out_n, CheckedElementCount({s.batch(), s.m(), s.n()}));
  if (lhs_n != lhs.elements || rhs_n != rhs.elements || out_n != out.elements) {
    return InvalidArgument("plan: kernel " + k.name() + ": dot sizes do not match its buffers");
  }
  kernel->batch_ = s.batch();
  kernel->m_ = s.m();
  kernel->n_ = s.n();
  kernel->k_ = s.k();
  kernel->lhs_view_ =
      codegen::DotGroupStrides(lhs.dims, kernel->lhs_perm_, {s.batch(), s.m(), s.k()});
  kernel->rhs_view_ =
      codegen::DotGroupStrides(rhs.dims, kernel->rhs_perm_, {s.batch(), s.k(), s.n()});
  kernel->lhs_ = std::move(lhs);
  kernel->rhs_ = std::move(rhs);
  kernel->out_ = std::move(out);
  return std::unique_ptr<CpuKernel>(std::move(kernel));
}

Result<std::unique_ptr<CpuKernel>> MakeConvolution(const plan::v2::Kernel& k, ArrayRef in,
                                                   ArrayRef w, ArrayRef out) {
  const plan::v2::ConvolutionSpec& s = k.convolution();
  const size_t rank = in.dims.size();
  size_t ns = static_cast<size_t>(s.window_size());
  bool ok = in.type == ir::ElementType::kF32 && w.type == in.type && out.type == in.type &&
            w.dims.size() == rank && out.dims.size() == rank && rank == ns + 2 &&
            ns <= ConvolutionKernel::kMaxSpatial && s.in_spatial_size() == static_cast<int>(ns) &&
            s.k_spatial_size() == static_cast<int>(ns) &&
            s.out_spatial_size() == static_cast<int>(ns);
  for (int64_t d :
       {s.in_batch(), s.in_feature(), s.k_in(), s.k_out(), s.out_batch(), s.out_feature()})
    ok = ok && InRange(d, rank);
  for (size_t i = 0; ok && i < ns; ++i) {
    ok = InRange(s.in_spatial(static_cast<int>(i)), rank) &&
         InRange(s.k_spatial(static_cast<int>(i)), rank) &&
         InRange(s.out_spatial(static_cast<int>(i)), rank);
    const auto& wd = s.window(static_cast<int>(i));
    ok = ok && wd.size() >= 1 && wd.stride() >= 1 && wd.lhs_dilate() >= 1 && wd.rhs_dilate() >= 1 &&
         wd.size() == w.dims[static_cast<size_t>(s.k_spatial(static_cast<int>(i)))];
  }
  ok = ok &&
       in.dims[static_cast<size_t>(s.in_feature())] == w.dims[static_cast<size_t>(s.k_in())] &&
       out.dims[static_cast<size_t>(s.out_feature())] == w.dims[static_cast<size_t>(s.k_out())] &&
       out.dims[static_cast<size_t>(s.out_batch())] == in.dims[static_cast<size_t>(s.in_batch())];
  if (!ok) return InvalidArgument("plan: kernel " + k.name() + ": inconsistent convolution spec");
  auto kernel = std::make_unique<ConvolutionKernel>();
  kernel->s_ = s;
  kernel->window_.assign(s.window().begin(), s.window().end());
  kernel->in_ = std::move(in);
  kernel->kernel_ = std::move(w);
  kernel->out_ = std::move(out);
  return std::unique_ptr<CpuKernel>(std::move(kernel));
}

bool FoldDotTranspose(const plan::v2::Plan& plan, const std::vector<ArrayRef>& buffers,
                      const std::vector<std::unique_ptr<CpuKernel>>& kernels, int32_t t) {
  const plan::v2::Kernel& tk = plan.kernels(t);
  if (!tk.has_transpose() || tk.operands_size() != 1 || tk.operands(0).buffers_size() != 1 ||
      tk.outputs_size() != 1)
    return false;
  const std::vector<int64_t> perm(tk.transpose().permutation().begin(),
                                  tk.transpose().permutation().end());
  if (perm != std::vector<int64_t>{1, 0}) return false;
  const int32_t b = tk.operands(0).buffers(0);
  const int32_t d = plan.buffers(b).defined_by();
  if (d < 0 || d >= t) return false;
  const plan::v2::Kernel& dk = plan.kernels(d);
  auto* dot = dynamic_cast<DotKernel*>(kernels[static_cast<size_t>(d)].get());
  if (dot == nullptr || dot->out_.type != ir::ElementType::kF32 || dot->batch_ != 1 ||
      !dot->lhs_view_ || !dot->rhs_view_ || dot->transposed_out_ || dot->out_.dims.size() != 2 ||
      dk.shard_lo() != tk.shard_lo() || dk.shard_hi() != tk.shard_hi())
    return false;
  // The dot's result must be read by the transpose alone and be no result of the plan.
  for (int32_t o : plan.outputs()) {
    if (o == b) return false;
  }
  for (const plan::v2::Kernel& k : plan.kernels()) {
    if (k.id() == t) continue;
    for (const auto& op : k.operands()) {
      for (int32_t x : op.buffers()) {
        if (x == b) return false;
      }
    }
  }
  // Writing the transpose's buffer at the dot's time must not disturb the dot's operands or any
  // buffer a kernel between the two reads or writes (buffer assignment may share memory between
  // values whose lifetimes do not meet).
  const ArrayRef& out = buffers[static_cast<size_t>(tk.outputs(0))];
  if (Overlap(out, dot->lhs_) || Overlap(out, dot->rhs_)) return false;
  for (int32_t i = d + 1; i < t; ++i) {
    const plan::v2::Kernel& k = plan.kernels(i);
    for (const auto& op : k.operands()) {
      for (int32_t x : op.buffers()) {
        if (Overlap(out, buffers[static_cast<size_t>(x)])) return false;
      }
    }
    for (int32_t x : k.outputs()) {
      if (Overlap(out, buffers[static_cast<size_t>(x)])) return false;
    }
  }
  dot->transposed_out_ = out;
  return true;
}

namespace {

// A tree whose stash would exceed this runs as its dots instead (memory over speed).
constexpr int64_t kMaxTreeStashBytes = int64_t{256} << 20;

struct Range {
  int64_t lo = 0, hi = 0;
  bool Meets(const ArrayRef& a) const {
    return a.bytes > 0 && hi > lo && lo < a.offset + a.bytes && a.offset < hi;
  }
};

// Whether buffer b is no result of the plan and is read exactly once, as an operand of kernel k.
bool ReadOnceBy(const plan::v2::Plan& plan, int32_t b, int32_t k) {
  for (int32_t o : plan.outputs()) {
    if (o == b) return false;
  }
  int reads = 0;
  for (const plan::v2::Kernel& kernel : plan.kernels()) {
    for (const auto& op : kernel.operands()) {
      for (int32_t x : op.buffers()) {
        if (x != b) continue;
        if (kernel.id() != k) return false;
        ++reads;
      }
    }
  }
  return reads == 1;
}

// What kernel i writes when it runs: its result buffers and, for a dot with a folded transpose,
// the transpose's buffer.
bool Writes(const plan::v2::Plan& plan, const std::vector<ArrayRef>& buffers,
            const std::vector<std::unique_ptr<CpuKernel>>& kernels, int32_t i, const Range& r) {
  for (int32_t x : plan.kernels(i).outputs()) {
    if (r.Meets(buffers[static_cast<size_t>(x)])) return true;
  }
  auto* dot = dynamic_cast<const DotKernel*>(kernels[static_cast<size_t>(i)].get());
  return dot != nullptr && dot->transposed_out_ && r.Meets(*dot->transposed_out_);
}

// The bytes an operand of a dot is read from: its own buffer, or, when a slice kernel made it
// from a contiguous run of rows of an f32 array, that run in the array (read in place).
// `read_at` is where those bytes were last read in the schedule.
struct Source {
  int64_t offset = 0;
  Range range;
  int32_t read_at = 0;
};

Source SourceOf(const plan::v2::Plan& plan, const std::vector<ArrayRef>& buffers,
                const ArrayRef& operand, int32_t dot) {
  Source src{operand.offset, {operand.offset, operand.offset + operand.bytes}, dot};
  const int32_t d = plan.buffers(operand.id).defined_by();
  if (d < 0 || d >= dot) return src;
  const plan::v2::Kernel& k = plan.kernels(d);
  if (!k.has_slice() || k.operands_size() != 1 || k.operands(0).buffers_size() != 1) return src;
  const ArrayRef& x = buffers[static_cast<size_t>(k.operands(0).buffers(0))];
  const plan::v2::SliceSpec& sl = k.slice();
  const size_t rank = x.dims.size();
  if (x.type != ir::ElementType::kF32 || rank == 0 || operand.dims.size() != rank ||
      sl.starts_size() != static_cast<int>(rank) || sl.strides_size() != static_cast<int>(rank))
    return src;
  int64_t row = 1;
  for (size_t i = 0; i < rank; ++i) {
    if (sl.strides(static_cast<int>(i)) != 1) return src;
    if (i > 0) {
      if (sl.starts(static_cast<int>(i)) != 0 || operand.dims[i] != x.dims[i]) return src;
      row *= x.dims[i];
    }
  }
  const int64_t start = sl.starts(0);
  if (start < 0 || start + operand.dims[0] > x.dims[0]) return src;
  const int64_t offset = x.offset + start * row * 4;
  return {offset, {offset, offset + operand.bytes}, d};
}

}  // namespace

bool FoldDotTree(const plan::v2::Plan& plan, const std::vector<ArrayRef>& buffers,
                 std::vector<std::unique_ptr<CpuKernel>>& kernels, int32_t t) {
  using Op = plan::v2::ScalarOp;
  const plan::v2::Kernel& ek = plan.kernels(t);
  if (!ek.has_elementwise() || ek.elementwise().has_reduce() || ek.outputs_size() != 1 ||
      kernels[static_cast<size_t>(t)] == nullptr)
    return false;
  const ArrayRef& out = buffers[static_cast<size_t>(ek.outputs(0))];
  const int64_t count = ek.operands_size();
  if (out.type != ir::ElementType::kF32 || out.dims.size() != 2 || count < 2 ||
      count > kMaxGemmTreeLeaves)
    return false;
  // The program must be an add tree over its inputs, each input and each value used once, with
  // f32 constants as the second operand of arithmetic anywhere (e.g. the sum divided by S).
  const plan::v2::ScalarProgram& prog = ek.elementwise().program();
  const int n_ops = prog.ops_size();
  if (prog.result() < 0 || prog.result() >= n_ops) return false;
  std::vector<int32_t> slot(static_cast<size_t>(n_ops), -1);  // -1: a constant
  std::vector<float> constant(static_cast<size_t>(n_ops), 0.0f);
  std::vector<int> uses(static_cast<size_t>(n_ops), 0);
  std::vector<char> input_seen(static_cast<size_t>(count), 0);
  auto node = std::make_unique<DotTreeKernel>();
  for (int i = 0; i < n_ops; ++i) {
    const Op& op = prog.ops(i);
    if (op.type() != plan::v2::F32) return false;
    if (op.kind() == Op::INPUT) {
      if (op.input() < 0 || op.input() >= count || input_seen[static_cast<size_t>(op.input())])
        return false;
      input_seen[static_cast<size_t>(op.input())] = 1;
      slot[static_cast<size_t>(i)] = op.input();
      continue;
    }
    if (op.kind() == Op::CONSTANT) {
      if (op.constant().size() != 4) return false;
      std::memcpy(&constant[static_cast<size_t>(i)], op.constant().data(), 4);
      continue;
    }
    static const std::pair<const char*, int> kKinds[] = {{"add", kTileAdd},
                                                         {"subtract", kTileSubtract},
                                                         {"multiply", kTileMultiply},
                                                         {"divide", kTileDivide}};
    int kind = -1;
    for (const auto& [name, k] : kKinds) {
      if (op.op() == name) kind = k;
    }
    if (op.kind() != Op::BINARY || kind < 0 || op.args_size() != 2) return false;
    const int32_t l = op.args(0), r = op.args(1);
    if (l < 0 || l >= i || r < 0 || r >= i) return false;
    const int32_t ls = slot[static_cast<size_t>(l)], rs = slot[static_cast<size_t>(r)];
    TreeStep step;
    step.kind = kind;
    if (ls >= 0 && rs >= 0) {  // a sum of two values
      if (kind != kTileAdd || l == r) return false;
      step.dst = ls;
      step.src = rs;
      ++uses[static_cast<size_t>(l)];
      ++uses[static_cast<size_t>(r)];
    } else if (ls >= 0 || rs >= 0) {  // a value and a constant
      step.constant_first = ls < 0;
      step.dst = ls >= 0 ? ls : rs;
      step.constant = constant[static_cast<size_t>(ls >= 0 ? r : l)];
      ++uses[static_cast<size_t>(ls >= 0 ? l : r)];
    } else {
      return false;
    }
    slot[static_cast<size_t>(i)] = step.dst;
    node->steps_.push_back(step);
  }
  for (int i = 0; i < n_ops; ++i) {
    if (slot[static_cast<size_t>(i)] < 0) continue;
    if (uses[static_cast<size_t>(i)] != (i == prog.result() ? 0 : 1)) return false;
  }
  if (slot[static_cast<size_t>(prog.result())] < 0) return false;
  for (char seen : input_seen) {
    if (!seen) return false;
  }
  // Each input is an f32 dot's result (or its folded transpose's) that only this kernel reads.
  // Each input is an f32 dot's result (or its folded transpose's) that only this kernel reads.
  // Those dots (and transposes) will not run.
  std::vector<const DotKernel*> dots(static_cast<size_t>(count), nullptr);
  std::vector<int32_t> dot_at(static_cast<size_t>(count), -1);
  std::vector<int32_t> transpose_at(static_cast<size_t>(count), -1);
  std::vector<char> swapped(static_cast<size_t>(count), 0);
  std::vector<char> folded(static_cast<size_t>(t), 0);
  int64_t total_k = 0;
  for (int64_t s = 0; s < count; ++s) {
    const auto& operand = ek.operands(static_cast<int>(s));
    if (operand.buffers_size() != 1) return false;
    const int32_t b = operand.buffers(0);
    if (!ReadOnceBy(plan, b, t)) return false;
    int32_t d = plan.buffers(b).defined_by();
    if (d < 0 || d >= t) return false;
    const plan::v2::Kernel& dk = plan.kernels(d);
    const DotKernel* dot = nullptr;
    if (dk.has_transpose()) {  // a transpose of a dot: the leaf is the swapped product
      const std::vector<int64_t> perm(dk.transpose().permutation().begin(),
                                      dk.transpose().permutation().end());
      if (perm != std::vector<int64_t>{1, 0} || dk.operands_size() != 1 ||
          dk.operands(0).buffers_size() != 1)
        return false;
      const int32_t inner_buffer = dk.operands(0).buffers(0);
      const int32_t inner = plan.buffers(inner_buffer).defined_by();
      if (inner < 0 || inner >= d) return false;
      dot = dynamic_cast<const DotKernel*>(kernels[static_cast<size_t>(inner)].get());
      if (dot == nullptr) return false;
      if (kernels[static_cast<size_t>(d)] == nullptr) {  // already computed by the dot
        if (!dot->transposed_out_ || dot->transposed_out_->id != b) return false;
      } else if (dot->transposed_out_ || !ReadOnceBy(plan, inner_buffer, d)) {
        return false;
      }
      swapped[static_cast<size_t>(s)] = 1;
      folded[static_cast<size_t>(d)] = 1;
      transpose_at[static_cast<size_t>(s)] = d;
      d = inner;
    } else {
      dot = dynamic_cast<const DotKernel*>(kernels[static_cast<size_t>(d)].get());
      if (dot == nullptr || dot->transposed_out_) return false;
    }
    if (dot->out_.type != ir::ElementType::kF32 || dot->batch_ != 1 || !dot->lhs_view_ ||
        !dot->rhs_view_)
      return false;
    const int64_t m = swapped[static_cast<size_t>(s)] ? dot->n_ : dot->m_;
    const int64_t n = swapped[static_cast<size_t>(s)] ? dot->m_ : dot->n_;
    if (m != out.dims[0] || n != out.dims[1]) return false;
    dots[static_cast<size_t>(s)] = dot;
    dot_at[static_cast<size_t>(s)] = d;
    folded[static_cast<size_t>(d)] = 1;
    total_k += dot->k_;
  }
  // Scratch bounds: GemmTree packs every leaf's B for its block.
  if (total_k > 4096 || total_k * out.dims[1] > (int64_t{1} << 22)) return false;
  // The tree reads the dots' operands at t: nothing that still runs may write those bytes in
  // between, and the result may not overlap them. A slice's source is read in place when it
  // qualifies, else the slice's own copy.
  auto usable = [&](const Source& r) {
    if (r.range.Meets(out)) return false;
    for (int32_t i = r.read_at + 1; i < t; ++i) {
      if (!folded[static_cast<size_t>(i)] && Writes(plan, buffers, kernels, i, r.range))
        return false;
    }
    return true;
  };
  // Else the operand is copied into the stash where its dot would have read it.
  std::vector<std::unique_ptr<StashKernel>> stashes(static_cast<size_t>(count));
  auto stash = std::make_shared<DotTreeStash>();
  int64_t stash_bytes = 0;
  auto pick = [&](const ArrayRef& operand, int64_t s, int64_t rows,
                  int64_t cols) -> DotTreeKernel::Operand {
    const int32_t d = dot_at[static_cast<size_t>(s)];
    const Source in_place = SourceOf(plan, buffers, operand, d);
    if (usable(in_place)) return {in_place.offset, false, rows, cols};
    if (usable(Source{operand.offset, {operand.offset, operand.offset + operand.bytes}, d}))
      return {operand.offset, false, rows, cols};
    auto& k = stashes[static_cast<size_t>(s)];
    if (!k) k = std::make_unique<StashKernel>();
    k->copies_.push_back({operand.offset, stash_bytes, operand.bytes});
    const int64_t at = stash_bytes;
    stash_bytes += (operand.bytes + 63) / 64 * 64;
    return {at, true, rows, cols};
  };
  for (int64_t s = 0; s < count; ++s) {
    const DotKernel* dot = dots[static_cast<size_t>(s)];
    const auto& lv = *dot->lhs_view_;
    const auto& rv = *dot->rhs_view_;
    DotTreeKernel::Leaf leaf;
    leaf.k = dot->k_;
    if (swapped[static_cast<size_t>(s)]) {  // the transpose of A B is B^T A^T
      leaf.a = pick(dot->rhs_, s, rv[2], rv[1]);
      leaf.b = pick(dot->lhs_, s, lv[2], lv[1]);
      leaf.swapped = true;
    } else {
      leaf.a = pick(dot->lhs_, s, lv[1], lv[2]);
      leaf.b = pick(dot->rhs_, s, rv[1], rv[2]);
    }
    node->leaves_.push_back(leaf);
  }
  if (stash_bytes > kMaxTreeStashBytes) return false;
  stash->data.resize(static_cast<size_t>(stash_bytes / 4 + 16));
  node->stash_ = stash;
  node->gemm_.resize(node->leaves_.size());
  node->result_ = slot[static_cast<size_t>(prog.result())];
  node->out_ = out;
  node->m_ = out.dims[0];
  node->n_ = out.dims[1];
  for (int64_t s = 0; s < count; ++s) {
    const int32_t d = dot_at[static_cast<size_t>(s)];
    if (stashes[static_cast<size_t>(s)]) {
      stashes[static_cast<size_t>(s)]->stash_ = stash;
      kernels[static_cast<size_t>(d)] = std::move(stashes[static_cast<size_t>(s)]);
    } else {
      kernels[static_cast<size_t>(d)].reset();
    }
    if (transpose_at[static_cast<size_t>(s)] >= 0)
      kernels[static_cast<size_t>(transpose_at[static_cast<size_t>(s)])].reset();
  }
  kernels[static_cast<size_t>(t)] = std::move(node);
  return true;
}

}  // namespace detrain::runtime::cpu
