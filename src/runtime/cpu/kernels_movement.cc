// Data movement: every kernel copies element bits and never rounds. broadcast, transpose,
// slice, reverse and dynamic-slice are one affine copy (source offset = base + sum of index x
// step); reshape is a byte copy; pad, concatenate and dynamic-update-slice place operands into
// the output; iota and constant write their values. Index semantics follow docs/ir.md (and the
// interpreter): dynamic start indices are clamped so the window fits.
#include <algorithm>
#include <cstring>
#include <cwchar>

#include "runtime/cpu/copy.h"
#include "runtime/cpu/isa_kernels.h"
#include "runtime/cpu/kernels.h"

namespace detrain::runtime::cpu {
namespace {

// An affine copy's index space with the dims that need no index of their own folded away: a dim
// of size 1 is dropped, and dim d merges into d + 1 when step[d] == step[d + 1] * dims[d + 1] (a
// run of contiguous, or all-broadcast, dims is one dim). Same copy, fewer and longer rows.
void Collapse(std::vector<int64_t>* dims, std::vector<int64_t>* step) {
  std::vector<int64_t> d, s;
  for (size_t i = 0; i < dims->size(); ++i) {
    if ((*dims)[i] == 1) continue;
    if (!d.empty() && s.back() == (*step)[i] * (*dims)[i]) {
      d.back() *= (*dims)[i];
      s.back() = (*step)[i];
      continue;
    }
    d.push_back((*dims)[i]);
    s.push_back((*step)[i]);
  }
  if (d.empty()) d.push_back(1), s.push_back(0);
  *dims = std::move(d);
  *step = std::move(s);
}

// Rank limit of the collapsed index space for the stack index arrays (a plan's rank is checked
// against it at load).
constexpr size_t kMaxAffineRank = 16;

// n copies of v (a broadcast's row). 4-byte elements go through glibc's wmemset (wchar_t is a
// 4-byte integer on the platforms detrain builds for), whose vector stores the portable build's
// fill loop would not get: GCC's -O2 leaves loops of unknown length scalar. Bits are copied, never
// converted.
template <typename T>
void FillRow(T* o, T v, int64_t n) {
  if constexpr (sizeof(T) == 1) {
    std::memset(o, v, static_cast<size_t>(n));
  } else if constexpr (sizeof(T) == sizeof(wchar_t)) {
    wchar_t w;
    std::memcpy(&w, &v, sizeof w);
    std::wmemset(reinterpret_cast<wchar_t*>(o), w, static_cast<size_t>(n));
  } else {
    std::fill(o, o + n, v);
  }
}

// Rows [row0, row1) of the collapsed copy: row r is output elements [r * inner, (r + 1) * inner).
template <typename T>
void AffineRows(const T* src, T* dst, const std::vector<int64_t>& dims,
                const std::vector<int64_t>& step, int64_t base, int64_t row0, int64_t row1) {
  const size_t rank = dims.size();
  const int64_t inner = dims[rank - 1], inner_step = step[rank - 1];
  int64_t idx[kMaxAffineRank] = {};
  int64_t rest = row0, off = base;
  for (size_t d = rank - 1; d-- > 0;) {
    idx[d] = rest % dims[d];
    rest /= dims[d];
    off += idx[d] * step[d];
  }
  for (int64_t r = row0; r < row1; ++r) {
    T* o = dst + r * inner;
    const T* s = src + off;
    if (inner_step == 1) {
      std::memcpy(o, s, static_cast<size_t>(inner) * sizeof(T));
    } else if (inner_step == 0) {
      FillRow(o, *s, inner);
    } else {
      for (int64_t j = 0; j < inner; ++j) o[j] = s[j * inner_step];
    }
    for (size_t d = rank - 1; d-- > 0;) {  // the next row's index and offset
      off += step[d];
      if (++idx[d] < dims[d]) break;
      off -= idx[d] * step[d];
      idx[d] = 0;
    }
  }
}

// A transpose-like copy: the collapsed dim p (not the innermost) reads the source contiguously,
// the innermost dim reads it with a stride. Copied in strips of kTile values of p (4-byte
// elements: by the ISA's Transpose32, 8 x 8 register blocks), so that the kTile rows written and
// the source lines read stay in L1 even at strides of 4 KiB (which map to one cache set). Unit u
// is strip u % p_tiles of the index `u / p_tiles` over the other dims.
constexpr int64_t kTile = 8;

template <typename T>
void TransposeUnits(const T* src, T* dst, const std::vector<int64_t>& dims,
                    const std::vector<int64_t>& step, const std::vector<int64_t>& out_strides,
                    size_t p, int64_t base, int64_t unit0, int64_t unit1,
                    Transpose32Fn transpose32) {
  const size_t rank = dims.size();
  const int64_t inner = dims[rank - 1], s_in = step[rank - 1], dp = dims[p];
  const int64_t op = out_strides[p];
  const int64_t p_tiles = (dp + kTile - 1) / kTile;
  for (int64_t u = unit0; u < unit1; ++u) {
    int64_t rest = u / p_tiles, soff = base, doff = 0;
    for (size_t d = rank - 1; d-- > 0;) {
      if (d == p) continue;
      const int64_t i = rest % dims[d];
      rest /= dims[d];
      soff += i * step[d];
      doff += i * out_strides[d];
    }
    const int64_t i0 = u % p_tiles * kTile, i1 = std::min(dp, i0 + kTile);
    if constexpr (sizeof(T) == 4) {
      if (transpose32 != nullptr) {
        transpose32(src + soff + i0, s_in, dst + doff + i0 * op, op, i1 - i0, inner);
        continue;
      }
    }
    for (int64_t j0 = 0; j0 < inner; j0 += kTile) {
      const int64_t j1 = std::min(inner, j0 + kTile);
      for (int64_t i = i0; i < i1; ++i) {
        T* o = dst + doff + i * op;
        const T* s = src + soff + i;
        for (int64_t j = j0; j < j1; ++j) o[j] = s[j * s_in];
      }
    }
  }
}

template <typename T>
void AffineCopy(const uint8_t* in, uint8_t* out, const std::vector<int64_t>& dims,
                const std::vector<int64_t>& step, const std::vector<int64_t>& out_strides,
                int transpose_dim, int64_t base, int64_t elements, const ExecContext& ctx) {
  const T* src = reinterpret_cast<const T*>(in);
  T* dst = reinterpret_cast<T*>(out);
  const int64_t inner = dims.back();
  // Blocks of about 16 KiB of output: small copies run inline, without the pool.
  constexpr int64_t kBlockElements = 16384 / static_cast<int64_t>(sizeof(T));
  if (transpose_dim >= 0) {
    const int64_t p_tiles = (dims[static_cast<size_t>(transpose_dim)] + kTile - 1) / kTile;
    const int64_t units = elements / (dims[static_cast<size_t>(transpose_dim)] * inner) * p_tiles;
    const int64_t per_block = std::max<int64_t>(1, kBlockElements / (kTile * inner));
    const Transpose32Fn transpose32 = KernelsFor(ctx.isa).transpose32;
    ForBlocks(ctx, (units + per_block - 1) / per_block, [&](int64_t b) {
      TransposeUnits<T>(src, dst, dims, step, out_strides, static_cast<size_t>(transpose_dim), base,
                        b * per_block, std::min(units, (b + 1) * per_block), transpose32);
    });
    return;
  }
  const int64_t rows = elements / inner;
  const int64_t per_block = std::max<int64_t>(1, kBlockElements / inner);
  ForBlocks(ctx, (rows + per_block - 1) / per_block, [&](int64_t b) {
    AffineRows<T>(src, dst, dims, step, base, b * per_block, std::min(rows, (b + 1) * per_block));
  });
}

class AffineCopyKernel : public CpuKernel {
 public:
  Status Run(uint8_t* arena, const ExecContext& ctx) const override {
    if (out_.elements == 0) return Status::Ok();
    int64_t base = base_;
    if (!dynamic_.empty()) {  // dynamic-slice: clamped starts
      for (size_t d = 0; d < dynamic_.size(); ++d) {
        int64_t s = ReadIndex(arena + dynamic_[d].offset, dynamic_[d].type);
        s = std::clamp<int64_t>(s, 0, in_.dims[d] - out_.dims[d]);
        base += s * in_strides_[d];
      }
    }
    const uint8_t* in = arena + in_.offset;
    uint8_t* out = arena + out_.offset;
    // A contiguous slice placed over its source (plan_views.h): the bytes are already there.
    if (in + base * size_ == out && dims_.size() == 1 && steps_[0] == 1) return Status::Ok();
    switch (size_) {
      case 1:
        return Copy<uint8_t>(in, out, base, ctx);
      case 4:
        return Copy<uint32_t>(in, out, base, ctx);
      default:
        return Copy<uint64_t>(in, out, base, ctx);
    }
  }

  // Collapses the index space and finds the transpose dim; called once the steps are known.
  Status Prepare() {
    dims_ = out_.dims;
    steps_ = step_;
    Collapse(&dims_, &steps_);
    if (dims_.size() > kMaxAffineRank)
      return InvalidArgument("plan: an affine copy of rank " + std::to_string(dims_.size()));
    out_strides_ = RowMajorStrides(dims_);
    in_strides_ = RowMajorStrides(in_.dims);
    for (size_t d = 0; d + 1 < dims_.size(); ++d) {
      if (steps_[d] == 1 && steps_.back() != 1 && steps_.back() != 0)
        transpose_dim_ = static_cast<int>(d);
    }
    return Status::Ok();
  }

  ArrayRef in_, out_;
  std::vector<ArrayRef> dynamic_;
  std::vector<int64_t> step_;
  int64_t base_ = 0;
  int size_ = 4;

 private:
  template <typename T>
  Status Copy(const uint8_t* in, uint8_t* out, int64_t base, const ExecContext& ctx) const {
    AffineCopy<T>(in, out, dims_, steps_, out_strides_, transpose_dim_, base, out_.elements, ctx);
    return Status::Ok();
  }

  std::vector<int64_t> dims_, steps_, out_strides_, in_strides_;  // collapsed; in_'s strides
  int transpose_dim_ = -1;
};

// Copies `src` (dims) into `dst` (dst_dims) at dst index = lo + src index * (interior + 1),
// skipping elements that fall outside. By rows of the innermost dim: the row's elements that land
// inside form one range of source indices, copied with one memcpy when the innermost dim has no
// interior padding.
void Place(const uint8_t* src, const std::vector<int64_t>& dims, uint8_t* dst,
           const std::vector<int64_t>& dst_dims, const std::vector<int64_t>& lo,
           const std::vector<int64_t>& interior, int size) {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  if (n == 0) return;
  const size_t rank = dims.size();
  if (rank == 0) {
    std::memcpy(dst, src, static_cast<size_t>(size));
    return;
  }
  const auto strides = RowMajorStrides(dst_dims);
  const size_t last = rank - 1;
  const int64_t inner = dims[last], step = interior[last] + 1, l = lo[last], dl = dst_dims[last];
  // The source indices j of a row with 0 <= l + j * step < dl.
  const int64_t j_lo = l >= 0 ? 0 : (-l + step - 1) / step;
  const int64_t j_hi = l > dl - 1 ? 0 : std::min(inner, (dl - 1 - l) / step + 1);
  if (j_hi <= j_lo) return;
  std::vector<int64_t> idx(last, 0), outer(dims.begin(), dims.end() - 1);
  for (int64_t r = 0; r < n / inner; ++r) {
    bool inside = true;
    int64_t off = 0;
    for (size_t d = 0; d < last; ++d) {
      int64_t p = lo[d] + idx[d] * (interior[d] + 1);
      inside = inside && p >= 0 && p < dst_dims[d];
      off += p * strides[d];
    }
    if (inside) {
      const uint8_t* s = src + (r * inner + j_lo) * size;
      uint8_t* o = dst + (off + l + j_lo * step) * size;
      if (step == 1) {
        std::memcpy(o, s, static_cast<size_t>((j_hi - j_lo) * size));
      } else {
        for (int64_t j = j_lo; j < j_hi; ++j, s += size, o += step * size)
          std::memcpy(o, s, static_cast<size_t>(size));
      }
    }
    NextIndex(idx, outer);
  }
}

// out[0, elements) = the `size`-byte value at v.
void FillValue(uint8_t* out, const uint8_t* v, int size, int64_t elements) {
  if (size == 4) {
    uint32_t x;
    std::memcpy(&x, v, 4);
    std::fill(reinterpret_cast<uint32_t*>(out), reinterpret_cast<uint32_t*>(out) + elements, x);
    return;
  }
  for (int64_t i = 0; i < elements; ++i) std::memcpy(out + i * size, v, static_cast<size_t>(size));
}

class PlaceKernel : public CpuKernel {
 public:
  enum Kind { kPad, kConcatenate, kDynamicUpdateSlice };
  Status Run(uint8_t* arena, const ExecContext&) const override {
    uint8_t* out = arena + out_.offset;
    const size_t rank = out_.dims.size();
    std::vector<int64_t> zeros(rank, 0);
    if (kind_ == kPad) {
      FillValue(out, arena + in_[1].offset, size_, out_.elements);
      Place(arena + in_[0].offset, in_[0].dims, out, out_.dims, lo_, interior_, size_);
    } else if (kind_ == kConcatenate) {
      const size_t dim = static_cast<size_t>(dim_);
      int64_t outer = 1, inner = 1;
      for (size_t d = 0; d < rank; ++d) {
        if (d < dim) outer *= out_.dims[d];
        if (d > dim) inner *= out_.dims[d];
      }
      std::vector<int64_t> lo(rank, 0);
      for (const ArrayRef& a : in_) {
        // An operand written in its place in the result (plan_views.h) is not copied.
        if (outer != 1 || arena + a.offset != out + lo[dim] * inner * size_)
          Place(arena + a.offset, a.dims, out, out_.dims, lo, zeros, size_);
        lo[dim] += a.dims[dim];
      }
    } else {
      if (out_.offset != in_[0].offset)
        std::memmove(out, arena + in_[0].offset, static_cast<size_t>(out_.bytes));
      std::vector<int64_t> lo;
      for (size_t d = 0; d < rank; ++d) {
        int64_t s = ReadIndex(arena + in_[2 + d].offset, in_[2 + d].type);
        lo.push_back(std::clamp<int64_t>(s, 0, out_.dims[d] - in_[1].dims[d]));
      }
      Place(arena + in_[1].offset, in_[1].dims, out, out_.dims, lo, zeros, size_);
    }
    return Status::Ok();
  }
  Kind kind_ = kPad;
  std::vector<ArrayRef> in_;
  ArrayRef out_;
  std::vector<int64_t> lo_, interior_;
  int64_t dim_ = 0;
  int size_ = 4;
};

class CopyKernel : public CpuKernel {
 public:
  Status Run(uint8_t* arena, const ExecContext&) const override {
    if (bytes_ > 0 && in_ != out_)
      std::memmove(arena + out_, arena + in_, static_cast<size_t>(bytes_));
    return Status::Ok();
  }
  int64_t in_ = 0, out_ = 0, bytes_ = 0;
};

class IotaKernel : public CpuKernel {
 public:
  Status Run(uint8_t* arena, const ExecContext&) const override {
    uint8_t* out = arena + out_.offset;
    if (out_.elements == 0) return Status::Ok();
    ir::DispatchElementType(out_.type, [&](auto tag) {
      using T = typename decltype(tag)::type;
      // Row-major, the value is (linear index / inner) mod n: runs of `inner` equal values,
      // counting 0..n-1 and starting over `outer` times.
      const size_t d = static_cast<size_t>(dim_);
      int64_t inner = 1, outer = 1;
      for (size_t k = d + 1; k < out_.dims.size(); ++k) inner *= out_.dims[k];
      for (size_t k = 0; k < d; ++k) outer *= out_.dims[k];
      const int64_t n = out_.dims[d];
      T* o = reinterpret_cast<T*>(out);
      for (int64_t b = 0; b < outer; ++b) {
        for (int64_t v = 0; v < n; ++v, o += inner) std::fill(o, o + inner, static_cast<T>(v));
      }
    });
    return Status::Ok();
  }
  ArrayRef out_;
  int64_t dim_ = 0;
};

class ConstantKernel : public CpuKernel {
 public:
  Status Run(uint8_t* arena, const ExecContext&) const override {
    if (!bytes_.empty()) std::memcpy(arena + offset_, bytes_.data(), bytes_.size());
    return Status::Ok();
  }
  std::string bytes_;
  int64_t offset_ = 0;
};

// broadcast, transpose, slice, reverse, dynamic-slice: one affine copy of in[0].
Result<std::unique_ptr<CpuKernel>> MakeAffine(const plan::CheckedKernel& c) {
  const plan::v2::Kernel& k = *c.spec;
  auto kernel = std::make_unique<AffineCopyKernel>();
  const ArrayRef& src = c.in[0];
  const ArrayRef& out = c.out[0];
  const size_t rank = out.dims.size();
  auto strides = RowMajorStrides(src.dims);
  kernel->step_.assign(rank, 0);
  if (k.has_broadcast()) {
    const auto& dims = k.broadcast().dimensions();
    for (int i = 0; i < dims.size(); ++i)
      kernel->step_[static_cast<size_t>(dims[i])] = strides[static_cast<size_t>(i)];
  } else if (k.has_transpose()) {
    const auto& perm = k.transpose().permutation();
    for (size_t i = 0; i < rank; ++i)
      kernel->step_[i] = strides[static_cast<size_t>(perm[static_cast<int>(i)])];
  } else if (k.has_slice()) {
    const auto& s = k.slice();
    for (size_t d = 0; d < rank; ++d) {
      kernel->base_ += s.starts(static_cast<int>(d)) * strides[d];
      kernel->step_[d] = strides[d] * s.strides(static_cast<int>(d));
    }
  } else if (k.has_reverse()) {
    for (size_t d = 0; d < rank; ++d) kernel->step_[d] = strides[d];
    for (int64_t d : k.reverse().dimensions()) {
      if (kernel->step_[static_cast<size_t>(d)] < 0) continue;
      kernel->base_ += (src.dims[static_cast<size_t>(d)] - 1) * strides[static_cast<size_t>(d)];
      kernel->step_[static_cast<size_t>(d)] = -strides[static_cast<size_t>(d)];
    }
  } else {  // dynamic-slice
    for (size_t d = 0; d < rank; ++d) {
      kernel->step_[d] = strides[d];
      kernel->dynamic_.push_back(c.in[d + 1]);
    }
  }
  kernel->size_ = ir::ElementTypeByteSize(out.type);
  kernel->in_ = src;
  kernel->out_ = out;
  DETRAIN_RETURN_IF_ERROR(kernel->Prepare());
  return std::unique_ptr<CpuKernel>(std::move(kernel));
}

}  // namespace

Result<std::unique_ptr<CpuKernel>> MakeMovement(const plan::CheckedKernel& c) {
  const plan::v2::Kernel& k = *c.spec;
  const ArrayRef& out = c.out[0];
  if (k.has_constant()) {
    auto kernel = std::make_unique<ConstantKernel>();
    kernel->bytes_ = k.constant();
    kernel->offset_ = out.offset;
    return std::unique_ptr<CpuKernel>(std::move(kernel));
  }
  if (k.has_iota()) {
    auto kernel = std::make_unique<IotaKernel>();
    kernel->out_ = out;
    kernel->dim_ = k.iota();
    return std::unique_ptr<CpuKernel>(std::move(kernel));
  }
  if (k.has_copy()) {
    auto kernel = std::make_unique<CopyKernel>();
    kernel->in_ = c.in[0].offset;
    kernel->out_ = out.offset;
    kernel->bytes_ = out.bytes;
    return std::unique_ptr<CpuKernel>(std::move(kernel));
  }
  if (k.has_broadcast() || k.has_transpose() || k.has_slice() || k.has_reverse() ||
      k.has_dynamic_slice()) {
    return MakeAffine(c);
  }
  auto kernel = std::make_unique<PlaceKernel>();
  const size_t rank = out.dims.size();
  if (k.has_pad()) {
    kernel->kind_ = PlaceKernel::kPad;
    for (size_t d = 0; d < rank; ++d) {
      kernel->lo_.push_back(k.pad().lo(static_cast<int>(d)));
      kernel->interior_.push_back(k.pad().interior(static_cast<int>(d)));
    }
  } else if (k.has_concatenate()) {
    kernel->kind_ = PlaceKernel::kConcatenate;
    kernel->dim_ = k.concatenate();
  } else {
    kernel->kind_ = PlaceKernel::kDynamicUpdateSlice;
  }
  kernel->size_ = ir::ElementTypeByteSize(out.type);
  kernel->in_ = c.in;
  kernel->out_ = out;
  return std::unique_ptr<CpuKernel>(std::move(kernel));
}

}  // namespace detrain::runtime::cpu
