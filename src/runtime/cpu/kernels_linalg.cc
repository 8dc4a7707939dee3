// dot and convolution. dot packs its operands into [batch, m, k] and [batch, k, n] (a copy:
// no value changes) and runs the ISA path's GEMM, whose every output is one fmaf chain over k
// ascending from +0 (DESIGN.md §2); threads split row blocks. convolution is im2col (+0 at
// padding and dilation holes, k = tap * features + feature) followed by the same GEMM: exactly
// the interpreter's chain. Integer dots accumulate with wrap-around (semantics::DotChain).
#include <array>
#include <cstring>
#include <memory>
#include <optional>

#include "compiler/plan/dot_view.h"
#include "compiler/semantics/semantics.h"
#include "runtime/cpu/copy.h"
#include "runtime/cpu/dot_kernel.h"
#include "runtime/cpu/gemm.h"
#include "runtime/cpu/isa_kernels.h"
#include "runtime/cpu/kernels.h"

namespace detrain::runtime::cpu {
namespace {

class ConvolutionKernel : public CpuKernel {
 public:
  static constexpr size_t kMaxSpatial = 64;  // the IR's rank limit, which the plan reader holds

  Status Run(uint8_t* arena, const ExecContext& ctx) const override {
    const float* in = reinterpret_cast<const float*>(arena + in_.offset);
    const float* w = reinterpret_cast<const float*>(arena + kernel_.offset);
    float* out = reinterpret_cast<float*>(arena + out_.offset);
    const size_t ns = window_.size();
    const auto in_strides = RowMajorStrides(in_.dims), k_strides = RowMajorStrides(kernel_.dims),
               out_strides = RowMajorStrides(out_.dims);
    const int64_t features = in_.dims[static_cast<size_t>(s_.in_feature())];
    const int64_t out_features = out_.dims[static_cast<size_t>(s_.out_feature())];
    // The output positions (batch and spatial dimensions) in the order the output lays them out
    // (row-major, outermost first): GEMM row p is the p-th position in that order, so that a
    // result with its feature dimension innermost is the GEMM's [positions, features] in place,
    // whatever the dimension labels (a weight gradient's 01bf as well as b01f). pos_axis[d] is -1
    // for the batch, s for spatial dimension s. Rows are independent outputs: their order changes
    // no chain.
    std::vector<int64_t> pos_dims, taps_dims;
    int pos_axis[kMaxSpatial + 1];
    for (size_t d = 0; d < out_.dims.size(); ++d) {
      if (static_cast<int64_t>(d) == s_.out_feature()) continue;
      int axis = -1;
      for (size_t s = 0; s < ns; ++s) {
        if (s_.out_spatial(static_cast<int>(s)) == static_cast<int64_t>(d))
          axis = static_cast<int>(s);
      }
      pos_axis[pos_dims.size()] = axis;
      pos_dims.push_back(out_.dims[d]);
    }
    for (const auto& wd : window_) taps_dims.push_back(wd.size());
    int64_t taps = 1, positions = 1;
    for (int64_t t : taps_dims) taps *= t;
    for (int64_t p : pos_dims) positions *= p;
    const int64_t kk = taps * features;
    // im2col: A[p][t * features + z], written in the GEMM's packed layout (gemm.h
    // MatrixView::packed: groups of mr positions, k-major within a group), so that the GEMM reads
    // it in place. Scratch is the kernel's own, sized once: no allocation in the step loop after
    // the first run. The rows past the last position are +0.
    const int64_t mr = GemmPackedRows(ctx.isa);
    const int64_t groups = (positions + mr - 1) / mr;
    std::vector<float>& a = im2col_;
    a.resize(static_cast<size_t>(groups * mr * kk));
    const int64_t fstride = in_strides[static_cast<size_t>(s_.in_feature())];
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
    // Blocks of positions, one task each, in the order that reads the input best (below).
    // Either way every element of A is written once, with the same value.
    constexpr int64_t kGroupsPerBlock = 8;
    constexpr int64_t kMaxRows = 16;  // GemmPackedRows on every ISA path
    if (fstride == 1 && !lhs_dilated) {
      // Features contiguous in the input (b01f): position by position, each tap's features one
      // read run, written down the position's row of the packed layout.
      for (int64_t p = positions; p < groups * mr; ++p) {  // rows past the last position: +0
        float* row = a.data() + PackedOffset(mr, kk, p, 0);
        for (int64_t x = 0; x < kk; ++x) row[x * mr] = 0.0f;
      }
      constexpr int64_t kPositionsPerBlock = 64;
      ForBlocks(ctx, (positions + kPositionsPerBlock - 1) / kPositionsPerBlock, [&](int64_t blk) {
        const int64_t p0 = blk * kPositionsPerBlock;
        const int64_t p1 = std::min(positions, p0 + kPositionsPerBlock);
        int64_t pidx[kMaxSpatial + 1];
        for (int64_t rest = p0, d = static_cast<int64_t>(pos_dims.size()); d-- > 0;) {
          pidx[d] = rest % pos_dims[static_cast<size_t>(d)];
          rest /= pos_dims[static_cast<size_t>(d)];
        }
        for (int64_t p = p0; p < p1; ++p) {
          int64_t origin[kMaxSpatial];
          int64_t at = 0;
          bool interior = taps > 0;
          for (size_t d = 0; d < pos_dims.size(); ++d) {
            const int s = pos_axis[d];
            if (s < 0) {
              at += pidx[d] * batch_stride;
              continue;
            }
            origin[s] = pidx[d] * window_[static_cast<size_t>(s)].stride() -
                        window_[static_cast<size_t>(s)].pad_lo();
            at += origin[s] * stride_in[s];
            // The last tap is the farthest along every dimension.
            interior =
                interior && origin[s] >= 0 &&
                origin[s] +
                        tap_shift_[static_cast<size_t>(taps - 1) * ns + static_cast<size_t>(s)] <
                    limit[s];
          }
          float* row = a.data() + PackedOffset(mr, kk, p, 0);  // element x at row[x * mr]
          for (int64_t t = 0; t < taps; ++t, row += features * mr) {
            bool inside = interior;
            for (size_t s = 0; !inside && s < ns; ++s) {
              const int64_t pos = origin[s] + tap_shift_[static_cast<size_t>(t) * ns + s];
              if (pos < 0 || pos >= limit[s]) break;
              inside = s + 1 == ns;
            }
            if (!inside) {
              for (int64_t z = 0; z < features; ++z) row[z * mr] = 0.0f;
              continue;
            }
            const float* from = in + (at + tap_offset_[static_cast<size_t>(t)]);
            for (int64_t z = 0; z < features; ++z) row[z * mr] = from[z];
          }
          NextIndex(pidx, pos_dims.data(), pos_dims.size());
        }
      });
    } else {
      // Otherwise (a weight gradient's f01b, whose batch is the features; input dilation): group
      // by group, tap by tap, the group's rows innermost, which read neighbouring elements when the
      // positions are neighbours along the input's innermost dimension.
      ForBlocks(ctx, (groups + kGroupsPerBlock - 1) / kGroupsPerBlock, [&](int64_t blk) {
        int64_t pidx[kMaxSpatial + 1];
        const int64_t g1 = std::min(groups, (blk + 1) * kGroupsPerBlock);
        int64_t rest = blk * kGroupsPerBlock * mr;
        for (size_t d = pos_dims.size(); d-- > 0;) {
          pidx[d] = rest % pos_dims[d];
          rest /= pos_dims[d];
        }
        int64_t origin[kMaxRows][kMaxSpatial], base[kMaxRows], spatial[kMaxRows][kMaxSpatial];
        bool interior[kMaxRows];
        const float* src[kMaxRows];
        for (int64_t g = blk * kGroupsPerBlock; g < g1; ++g) {
          const int64_t live = std::min(mr, positions - g * mr);
          for (int64_t r = 0; r < live; ++r) {
            base[r] = 0;
            for (size_t d = 0; d < pos_dims.size(); ++d) {
              if (pos_axis[d] < 0) {
                base[r] += pidx[d] * batch_stride;
              } else {
                spatial[r][pos_axis[d]] = pidx[d];
              }
            }
            interior[r] = taps > 0 && !lhs_dilated;
            for (size_t s = 0; s < ns; ++s) {
              origin[r][s] = spatial[r][s] * window_[s].stride() - window_[s].pad_lo();
              if (lhs_dilated) continue;
              base[r] += origin[r][s] * stride_in[s];
              // The last tap is the farthest along every dimension.
              interior[r] =
                  interior[r] && origin[r][s] >= 0 &&
                  origin[r][s] + tap_shift_[static_cast<size_t>(taps - 1) * ns + s] < limit[s];
            }
            NextIndex(pidx, pos_dims.data(), pos_dims.size());
          }
          float* out_group = a.data() + g * mr * kk;
          // Where row r's tap t reads its features, or null outside the input (padding, a hole).
          auto source = [&](int64_t r, int64_t t) -> const float* {
            const int64_t* shift = tap_shift_.data() + t * static_cast<int64_t>(ns);
            if (!lhs_dilated) {
              bool inside = interior[r];
              for (size_t s = 0; !inside && s < ns; ++s) {
                const int64_t pos = origin[r][s] + shift[s];
                if (pos < 0 || pos >= limit[s]) break;
                inside = s + 1 == ns;
              }
              return inside ? in + (base[r] + tap_offset_[static_cast<size_t>(t)]) : nullptr;
            }
            int64_t at = base[r];
            for (size_t s = 0; s < ns; ++s) {  // input dilation: a tap may fall in a hole
              const int64_t pos = origin[r][s] + shift[s], dilate = window_[s].lhs_dilate();
              if (pos < 0 || pos % dilate != 0 || pos / dilate >= limit[s]) return nullptr;
              at += pos / dilate * stride_in[s];
            }
            return in + at;
          };
          for (int64_t r = live; r < mr; ++r) {  // rows past the last position: +0
            for (int64_t x = 0; x < kk; ++x) out_group[x * mr + r] = 0.0f;
          }
          for (int64_t t = 0; t < taps; ++t) {
            for (int64_t r = 0; r < live; ++r) src[r] = source(r, t);
            float* dst = out_group + t * features * mr;
            for (int64_t z = 0; z < features; ++z, dst += mr) {
              const int64_t off = z * fstride;
              for (int64_t r = 0; r < live; ++r) dst[r] = src[r] != nullptr ? src[r][off] : 0.0f;
            }
          }
        }
      });
    }
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
    // The output dimension of position axis d.
    auto out_dim = [&](size_t d) {
      return static_cast<size_t>(pos_axis[d] < 0 ? s_.out_batch() : s_.out_spatial(pos_axis[d]));
    };
    // The positions are in the output's order; with the feature innermost the GEMM writes it.
    const bool direct = s_.out_feature() + 1 == static_cast<int64_t>(out_.dims.size());
    if (direct) {
      BatchedGemm(MatrixView{a.data(), 0, 0, 0, /*packed=*/true},
                  MatrixView{wm.data(), out_features, 1, 0}, out, 1, positions, out_features, kk,
                  ctx);
      return Status::Ok();
    }
    std::vector<float>& c = result_;
    c.resize(static_cast<size_t>(positions * out_features));
    BatchedGemm(MatrixView{a.data(), 0, 0, 0, /*packed=*/true},
                MatrixView{wm.data(), out_features, 1, 0}, c.data(), 1, positions, out_features, kk,
                ctx);
    for (int64_t p = 0; p < positions; ++p) {
      int64_t rest = p, off = 0;
      for (size_t d = pos_dims.size(); d-- > 0;) {
        int64_t i = rest % pos_dims[d];
        rest /= pos_dims[d];
        off += i * out_strides[out_dim(d)];
      }
      for (int64_t f = 0; f < out_features; ++f)
        out[off + f * out_strides[static_cast<size_t>(s_.out_feature())]] =
            c[static_cast<size_t>(p * out_features + f)];
    }
    return Status::Ok();
  }

  void PrepareTaps() {
    const size_t ns = window_.size();
    const auto in_strides = RowMajorStrides(in_.dims);
    int64_t taps = 1;
    std::vector<int64_t> taps_dims;
    bool lhs_dilated = false;  // then a tap's place in the input needs a division: no offsets
    for (const auto& wd : window_) {
      lhs_dilated = lhs_dilated || wd.lhs_dilate() != 1;
      taps_dims.push_back(wd.size());
      taps *= wd.size();
    }
    tap_offset_.assign(static_cast<size_t>(taps), 0);
    tap_shift_.assign(static_cast<size_t>(taps) * ns, 0);
    std::vector<int64_t> tidx(ns, 0);
    for (int64_t t = 0; t < taps; ++t) {
      for (size_t s = 0; s < ns; ++s) {
        const int64_t shift = tidx[s] * window_[s].rhs_dilate();
        tap_shift_[static_cast<size_t>(t) * ns + s] = shift;
        if (!lhs_dilated) {
          tap_offset_[static_cast<size_t>(t)] +=
              shift * in_strides[static_cast<size_t>(s_.in_spatial(static_cast<int>(s)))];
        }
      }
      NextIndex(tidx, taps_dims);
    }
  }

  ArrayRef in_, kernel_, out_;
  mutable std::vector<float> im2col_, weights_, result_;  // scratch (Run is one at a time)
  // Per tap (PrepareTaps): its displacement along each spatial dimension (taps x spatial) and,
  // without input dilation, its offset in the input, so that a position computes its window's
  // origin once and each tap only checks its bounds and copies.
  std::vector<int64_t> tap_offset_, tap_shift_;
  plan::v2::ConvolutionSpec s_;
  std::vector<plan::v2::WindowDim> window_;
};

}  // namespace

Status DotKernel::Run(uint8_t* arena, const ExecContext& ctx) const {
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

Result<std::unique_ptr<CpuKernel>> MakeDot(const plan::CheckedKernel& k) {
  const plan::v2::DotSpec& s = k.spec->dot();
  auto kernel = std::make_unique<DotKernel>();
  kernel->lhs_perm_.assign(s.lhs_permutation().begin(), s.lhs_permutation().end());
  kernel->rhs_perm_.assign(s.rhs_permutation().begin(), s.rhs_permutation().end());
  kernel->batch_ = s.batch();
  kernel->m_ = s.m();
  kernel->n_ = s.n();
  kernel->k_ = s.k();
  kernel->lhs_ = k.in[0];
  kernel->rhs_ = k.in[1];
  kernel->out_ = k.out[0];
  kernel->lhs_view_ =
      plan::DotGroupStrides(kernel->lhs_.dims, kernel->lhs_perm_, {s.batch(), s.m(), s.k()});
  kernel->rhs_view_ =
      plan::DotGroupStrides(kernel->rhs_.dims, kernel->rhs_perm_, {s.batch(), s.k(), s.n()});
  return std::unique_ptr<CpuKernel>(std::move(kernel));
}

Result<std::unique_ptr<CpuKernel>> MakeConvolution(const plan::CheckedKernel& k) {
  const plan::v2::ConvolutionSpec& s = k.spec->convolution();
  auto kernel = std::make_unique<ConvolutionKernel>();
  kernel->s_ = s;
  kernel->window_.assign(s.window().begin(), s.window().end());
  kernel->in_ = k.in[0];
  kernel->kernel_ = k.in[1];
  kernel->out_ = k.out[0];
  kernel->PrepareTaps();
  return std::unique_ptr<CpuKernel>(std::move(kernel));
}

}  // namespace detrain::runtime::cpu
