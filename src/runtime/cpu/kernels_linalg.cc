// dot and convolution. dot packs its operands into [batch, m, k] and [batch, k, n] (a copy:
// no value changes) and runs the ISA path's GEMM, whose every output is one fmaf chain over k
// ascending from +0 (DESIGN.md §2); threads split row blocks. convolution is im2col (+0 at
// padding and dilation holes, k = tap * features + feature) followed by the same GEMM: exactly
// the interpreter's chain; the im2col matrix is never in memory whole, the GEMM asks for each
// packed block of it as it goes (Im2col, gemm.h APacker). Integer dots accumulate with wrap-around
// (semantics::DotChain).
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
  static constexpr int64_t kMaxRows = 16;    // the GEMM's tile height (mr) on every ISA path

  // The convolution's A for the GEMM, block by block (gemm.h APacker): row p is the p-th output
  // position in the result's order (pos_dims, pos_axis: -1 the batch, s spatial dimension s),
  // column t * features + z the input feature z at window tap t (row-major over the window), +0
  // where the tap falls outside the input (padding) or in a hole (input dilation).
  class Im2col : public APacker {
   public:
    Im2col(const ConvolutionKernel& k, const float* in, const std::vector<int64_t>& pos_dims,
           const int* pos_axis, int64_t features, int64_t taps, int64_t positions)
        : k_(k),
          in_(in),
          pos_dims_(pos_dims),
          pos_axis_(pos_axis),
          features_(features),
          taps_(taps),
          positions_(positions),
          ns_(k.window_.size()) {
      const auto strides = RowMajorStrides(k.in_.dims);
      fstride_ = strides[static_cast<size_t>(k.s_.in_feature())];
      batch_stride_ = strides[static_cast<size_t>(k.s_.in_batch())];
      for (size_t s = 0; s < ns_; ++s) {
        const size_t dim = static_cast<size_t>(k.s_.in_spatial(static_cast<int>(s)));
        limit_[s] = k.in_.dims[dim];
        stride_in_[s] = strides[dim];
        lhs_dilated_ = lhs_dilated_ || k.window_[s].lhs_dilate() != 1;
      }
    }

    void Pack(int64_t i0, int64_t rows, int64_t p0, int64_t kc, int64_t mr,
              float* out) const override {
      const size_t ns = ns_;
      const int64_t p1 = p0 + kc, features = features_;
      const int64_t t0 = p0 / features, t1 = features == 0 ? 0 : (p1 - 1) / features + 1;
      int64_t pidx[kMaxSpatial + 1];
      for (int64_t rest = std::min(i0, positions_), d = static_cast<int64_t>(pos_dims_.size());
           d-- > 0;) {
        pidx[d] = rest % pos_dims_[static_cast<size_t>(d)];
        rest /= pos_dims_[static_cast<size_t>(d)];
      }
      int64_t origin[kMaxRows][kMaxSpatial], base[kMaxRows];
      bool interior[kMaxRows];
      const float* src[kMaxRows];
      const float* image[kMaxRows];    // with the table: the row's batch element in the input
      const int64_t* place[kMaxRows];  // and the row's taps' offsets in it (-1: none)
      const bool table = !k_.place_.empty();
      // Where tap t of row r reads its features, or null (padding, a hole).
      auto from = [&](int64_t r, int64_t t) -> const float* {
        if (table) {
          const int64_t off = place[r][t];
          return off < 0 ? nullptr : image[r] + off;
        }
        return interior[r] ? in_ + base[r] + k_.tap_offset_[static_cast<size_t>(t)]
                           : Source(origin[r], base[r], t);
      };
      for (int64_t g = 0; g < rows; g += mr) {
        float* group = out + g * kc;
        const int64_t live = std::clamp<int64_t>(positions_ - (i0 + g), 0, std::min(mr, rows - g));
        for (int64_t r = 0; table && r < live; ++r) {  // each row's image and its taps' places
          int64_t spatial = 0, batch = 0;
          for (size_t d = 0; d < pos_dims_.size(); ++d) {
            const int s = pos_axis_[d];
            if (s < 0) {
              batch += pidx[d] * batch_stride_;
            } else {
              spatial += pidx[d] * k_.place_stride_[static_cast<size_t>(s)];
            }
          }
          image[r] = in_ + batch;
          place[r] = k_.place_.data() + spatial * taps_;
          NextIndex(pidx, pos_dims_.data(), pos_dims_.size());
        }
        // Without the table: each row's window origin, and whether it is whole.
        for (int64_t r = 0; !table && r < live; ++r) {
          base[r] = 0;
          interior[r] = taps_ > 0 && !lhs_dilated_;
          for (size_t d = 0; d < pos_dims_.size(); ++d) {
            const int s = pos_axis_[d];
            if (s < 0) {
              base[r] += pidx[d] * batch_stride_;
              continue;
            }
            const auto& wd = k_.window_[static_cast<size_t>(s)];
            origin[r][s] = pidx[d] * wd.stride() - wd.pad_lo();
            if (lhs_dilated_) continue;
            base[r] += origin[r][s] * stride_in_[s];
            // The last tap is the farthest along every dimension.
            interior[r] = interior[r] && origin[r][s] >= 0 &&
                          origin[r][s] + k_.tap_shift_[static_cast<size_t>(taps_ - 1) * ns +
                                                       static_cast<size_t>(s)] <
                              limit_[s];
          }
          NextIndex(pidx, pos_dims_.data(), pos_dims_.size());
        }
        for (int64_t r = live; r < mr; ++r) {  // rows past the last position: +0
          for (int64_t x = 0; x < kc; ++x) group[x * mr + r] = 0.0f;
        }
        if (fstride_ == 1) {
          // Features contiguous in the input (b01f): row by row, each tap's features one read
          // run, written down the row.
          for (int64_t r = 0; r < live; ++r) {
            for (int64_t t = t0; t < t1; ++t) {
              const int64_t zlo = std::max<int64_t>(0, p0 - t * features);
              const int64_t zhi = std::min(features, p1 - t * features);
              float* dst = group + (t * features + zlo - p0) * mr + r;
              const float* x = from(r, t);
              if (x == nullptr) {
                for (int64_t z = zlo; z < zhi; ++z, dst += mr) *dst = 0.0f;
              } else {
                for (int64_t z = zlo; z < zhi; ++z, dst += mr) *dst = x[z];
              }
            }
          }
          continue;
        }
        // Features strided (a weight gradient's f01b, whose features are the batch): tap by tap,
        // the group's rows innermost, which read neighbouring elements when the rows are
        // neighbours along the input's innermost dimension.
        for (int64_t t = t0; t < t1; ++t) {
          for (int64_t r = 0; r < live; ++r) src[r] = from(r, t);
          const int64_t zlo = std::max<int64_t>(0, p0 - t * features);
          const int64_t zhi = std::min(features, p1 - t * features);
          float* dst = group + (t * features + zlo - p0) * mr;
          for (int64_t z = zlo; z < zhi; ++z, dst += mr) {
            const int64_t off = z * fstride_;
            for (int64_t r = 0; r < live; ++r) dst[r] = src[r] != nullptr ? src[r][off] : 0.0f;
          }
        }
      }
    }

   private:
    // Where tap t of the window at `origin` (base: the batch's offset, and without input
    // dilation the origin's) reads its features, or null outside the input or in a hole.
    [[gnu::always_inline]] const float* Source(const int64_t* origin, int64_t base,
                                               int64_t t) const {
      const int64_t* shift = k_.tap_shift_.data() + t * static_cast<int64_t>(ns_);
      if (!lhs_dilated_) {
        for (size_t s = 0; s < ns_; ++s) {
          const int64_t pos = origin[s] + shift[s];
          if (pos < 0 || pos >= limit_[s]) return nullptr;
        }
        return in_ + base + k_.tap_offset_[static_cast<size_t>(t)];
      }
      for (size_t s = 0; s < ns_; ++s) {  // input dilation: a tap may fall in a hole
        const int64_t pos = origin[s] + shift[s], dilate = k_.window_[s].lhs_dilate();
        if (pos < 0 || pos % dilate != 0 || pos / dilate >= limit_[s]) return nullptr;
        base += pos / dilate * stride_in_[s];
      }
      return in_ + base;
    }

    const ConvolutionKernel& k_;
    const float* in_;
    const std::vector<int64_t>& pos_dims_;
    const int* pos_axis_;
    int64_t features_, taps_, positions_;
    size_t ns_;
    int64_t fstride_ = 1, batch_stride_ = 0;
    int64_t limit_[kMaxSpatial] = {}, stride_in_[kMaxSpatial] = {};
    bool lhs_dilated_ = false;
  };

  Status Run(uint8_t* arena, const ExecContext& ctx) const override {
    const float* in = reinterpret_cast<const float*>(arena + in_.offset);
    const float* w = reinterpret_cast<const float*>(arena + kernel_.offset);
    float* out = reinterpret_cast<float*>(arena + out_.offset);
    const size_t ns = window_.size();
    const auto k_strides = RowMajorStrides(kernel_.dims), out_strides = RowMajorStrides(out_.dims);
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
    // im2col: A[p][t * features + z], never in memory whole: the GEMM asks for each block of it
    // (Im2col::Pack) just before its tiles read it.
    Im2col im2col(*this, in, pos_dims, pos_axis, features, taps, positions);
    // W[t * features + z][f]: the kernel itself when it is laid out so (spatial dimensions in
    // window order, then input and output features: "01io"), else a copy.
    bool in_place =
        s_.k_in() == static_cast<int64_t>(ns) && s_.k_out() == static_cast<int64_t>(ns) + 1;
    for (size_t s = 0; s < ns; ++s)
      in_place = in_place && s_.k_spatial(static_cast<int>(s)) == static_cast<int64_t>(s);
    std::vector<float>& wm = weights_;
    wm.resize(in_place ? 0 : static_cast<size_t>(kk * out_features));
    std::vector<int64_t> tidx(ns, 0);
    for (int64_t t = 0; !in_place && t < taps; ++t) {
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
    // The output dimension of position axis d.
    auto out_dim = [&](size_t d) {
      return static_cast<size_t>(pos_axis[d] < 0 ? s_.out_batch() : s_.out_spatial(pos_axis[d]));
    };
    // The positions are in the output's order: with the feature innermost the result is the
    // GEMM's [positions, features], written in place.
    const bool direct = s_.out_feature() + 1 == static_cast<int64_t>(out_.dims.size());
    if (direct) {
      BatchedGemm(MatrixView{nullptr, 0, 0, 0, &im2col},
                  MatrixView{in_place ? w : wm.data(), out_features, 1, 0}, out, 1, positions,
                  out_features, kk, ctx);
      return Status::Ok();
    }
    std::vector<float>& c = result_;
    c.resize(static_cast<size_t>(positions * out_features));
    BatchedGemm(MatrixView{nullptr, 0, 0, 0, &im2col},
                MatrixView{in_place ? w : wm.data(), out_features, 1, 0}, c.data(), 1, positions,
                out_features, kk, ctx);
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
    // Without input dilation, every output position's taps read the same places relative to its
    // batch element: the table of them per output spatial position (row-major over the spatial
    // dimensions in window order), unless it would be large.
    place_.clear();
    place_stride_.assign(ns, 0);
    int64_t spatial = 1;
    for (size_t s = ns; s-- > 0;) {
      place_stride_[s] = spatial;
      spatial *= out_.dims[static_cast<size_t>(s_.out_spatial(static_cast<int>(s)))];
    }
    int64_t entries = 0;
    if (lhs_dilated || __builtin_mul_overflow(spatial, taps, &entries) || entries > kMaxPlaces)
      return;
    place_.assign(static_cast<size_t>(entries), -1);
    for (int64_t p = 0; p < spatial; ++p) {
      for (int64_t t = 0; t < taps; ++t) {
        int64_t off = 0;
        bool inside = true;
        for (size_t s = 0; s < ns; ++s) {
          const int64_t o = p / place_stride_[s] %
                            out_.dims[static_cast<size_t>(s_.out_spatial(static_cast<int>(s)))];
          const int64_t pos = o * window_[s].stride() - window_[s].pad_lo() +
                              tap_shift_[static_cast<size_t>(t) * ns + s];
          const int64_t limit = in_.dims[static_cast<size_t>(s_.in_spatial(static_cast<int>(s)))];
          inside = inside && pos >= 0 && pos < limit;
          off += pos * in_strides[static_cast<size_t>(s_.in_spatial(static_cast<int>(s)))];
        }
        if (inside) place_[static_cast<size_t>(p * taps + t)] = off;
      }
    }
  }

  ArrayRef in_, kernel_, out_;
  mutable std::vector<float> weights_, result_;  // scratch (Run is one at a time)
  // Per tap (PrepareTaps): its displacement along each spatial dimension (taps x spatial) and,
  // without input dilation, its offset in the input, so that a position computes its window's
  // origin once and each tap only checks its bounds and copies.
  std::vector<int64_t> tap_offset_, tap_shift_;
  // Without input dilation and up to kMaxPlaces entries (PrepareTaps): for output spatial
  // position p (index sum of its coordinates times place_stride_) and tap t, where the tap's
  // features start relative to the batch element's first, or -1 outside the input.
  static constexpr int64_t kMaxPlaces = int64_t{1} << 20;
  std::vector<int64_t> place_, place_stride_;
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
