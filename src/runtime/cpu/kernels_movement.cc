// Data movement: every kernel copies element bits and never rounds. broadcast, transpose,
// slice, reverse and dynamic-slice are one affine copy (source offset = base + sum of index x
// step); reshape is a byte copy; pad, concatenate and dynamic-update-slice place operands into
// the output; iota and constant write their values. Index semantics follow docs/ir.md (and the
// interpreter): dynamic start indices are clamped so the window fits.
#include <algorithm>
#include <cstring>

#include "runtime/cpu/checked.h"
#include "runtime/cpu/copy.h"
#include "runtime/cpu/kernels.h"

namespace detrain::runtime::cpu {
namespace {

template <typename T>
void AffineRows(const uint8_t* in, uint8_t* out, const std::vector<int64_t>& dims,
                const std::vector<int64_t>& step, int64_t base, int64_t row0, int64_t row1) {
  const size_t rank = dims.size();
  const int64_t inner = dims[rank - 1], inner_step = step[rank - 1];
  const T* src = reinterpret_cast<const T*>(in);
  T* dst = reinterpret_cast<T*>(out);
  std::vector<int64_t> idx(rank - 1);
  int64_t rest = row0;
  for (size_t d = rank - 1; d-- > 0;) idx[d] = rest % dims[d], rest /= dims[d];
  std::vector<int64_t> outer(dims.begin(), dims.end() - 1);
  for (int64_t r = row0; r < row1; ++r) {
    int64_t off = base;
    for (size_t d = 0; d + 1 < rank; ++d) off += idx[d] * step[d];
    T* o = dst + r * inner;
    for (int64_t j = 0; j < inner; ++j) o[j] = src[off + j * inner_step];
    NextIndex(idx, outer);
  }
}

class AffineCopyKernel : public CpuKernel {
 public:
  Status Run(uint8_t* arena, const ExecContext& ctx) const override {
    if (out_.elements == 0) return Status::Ok();
    int64_t base = base_;
    std::vector<int64_t> starts;
    if (!dynamic_.empty()) {  // dynamic-slice: clamped starts
      auto strides = RowMajorStrides(in_.dims);
      for (size_t d = 0; d < dynamic_.size(); ++d) {
        int64_t s = ReadIndex(arena + dynamic_[d].offset, dynamic_[d].type);
        s = std::clamp<int64_t>(s, 0, in_.dims[d] - out_.dims[d]);
        base += s * strides[d];
      }
    }
    const uint8_t* in = arena + in_.offset;
    uint8_t* out = arena + out_.offset;
    if (out_.dims.empty()) {
      std::memcpy(out, in + base * size_, static_cast<size_t>(size_));
      return Status::Ok();
    }
    const int64_t rows = out_.elements / out_.dims.back();
    constexpr int64_t kRowsPerBlock = 64;
    ForBlocks(ctx, (rows + kRowsPerBlock - 1) / kRowsPerBlock, [&](int64_t b) {
      int64_t r0 = b * kRowsPerBlock, r1 = std::min(rows, r0 + kRowsPerBlock);
      switch (size_) {
        case 1:
          return AffineRows<uint8_t>(in, out, out_.dims, step_, base, r0, r1);
        case 4:
          return AffineRows<uint32_t>(in, out, out_.dims, step_, base, r0, r1);
        default:
          return AffineRows<uint64_t>(in, out, out_.dims, step_, base, r0, r1);
      }
    });
    return Status::Ok();
  }

  ArrayRef in_, out_;
  std::vector<ArrayRef> dynamic_;
  std::vector<int64_t> step_;
  int64_t base_ = 0;
  int size_ = 4;
};

// Copies `src` (dims) into `dst` (dst_dims) at dst index = lo + src index * (interior + 1),
// skipping elements that fall outside.
void Place(const uint8_t* src, const std::vector<int64_t>& dims, uint8_t* dst,
           const std::vector<int64_t>& dst_dims, const std::vector<int64_t>& lo,
           const std::vector<int64_t>& interior, int size) {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  if (n == 0) return;
  auto strides = RowMajorStrides(dst_dims);
  std::vector<int64_t> idx(dims.size(), 0);
  int64_t i = 0;
  do {
    bool inside = true;
    int64_t off = 0;
    for (size_t d = 0; d < idx.size(); ++d) {
      int64_t p = lo[d] + idx[d] * (interior[d] + 1);
      inside = inside && p >= 0 && p < dst_dims[d];
      off += p * strides[d];
    }
    if (inside) std::memcpy(dst + off * size, src + i * size, static_cast<size_t>(size));
    ++i;
  } while (NextIndex(idx, dims));
}

class PlaceKernel : public CpuKernel {
 public:
  enum Kind { kPad, kConcatenate, kDynamicUpdateSlice };
  Status Run(uint8_t* arena, const ExecContext&) const override {
    uint8_t* out = arena + out_.offset;
    const size_t rank = out_.dims.size();
    std::vector<int64_t> zeros(rank, 0);
    if (kind_ == kPad) {
      for (int64_t i = 0; i < out_.elements; ++i)
        std::memcpy(out + i * size_, arena + in_[1].offset, static_cast<size_t>(size_));
      Place(arena + in_[0].offset, in_[0].dims, out, out_.dims, lo_, interior_, size_);
    } else if (kind_ == kConcatenate) {
      std::vector<int64_t> lo(rank, 0);
      for (const ArrayRef& a : in_) {
        Place(arena + a.offset, a.dims, out, out_.dims, lo, zeros, size_);
        lo[static_cast<size_t>(dim_)] += a.dims[static_cast<size_t>(dim_)];
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
      std::vector<int64_t> idx(out_.dims.size(), 0);
      int64_t i = 0;
      do {
        T v = static_cast<T>(idx[static_cast<size_t>(dim_)]);
        std::memcpy(out + i * static_cast<int64_t>(sizeof(T)), &v, sizeof(T));
        ++i;
      } while (NextIndex(idx, out_.dims));
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

Status Bad(const plan::v2::Kernel& k, const std::string& what) {
  return InvalidArgument("plan: kernel " + k.name() + ": " + what);
}

Result<std::unique_ptr<CpuKernel>> MakeAffine(const plan::v2::Kernel& k, std::vector<ArrayRef> in,
                                              ArrayRef out) {
  auto kernel = std::make_unique<AffineCopyKernel>();
  const ArrayRef& src = in[0];
  const size_t rank = out.dims.size();
  if (src.type != out.type) return Bad(k, "operand and result types differ");
  auto strides = RowMajorStrides(src.dims);
  kernel->step_.assign(rank, 0);
  if (k.has_broadcast()) {
    const auto& dims = k.broadcast().dimensions();
    if (dims.size() != static_cast<int>(src.dims.size())) return Bad(k, "broadcast dimensions");
    for (int i = 0; i < dims.size(); ++i) {
      int64_t d = dims[i];
      if (d < 0 || d >= static_cast<int64_t>(rank) ||
          out.dims[static_cast<size_t>(d)] != src.dims[static_cast<size_t>(i)]) {
        return Bad(k, "broadcast dimensions");
      }
      kernel->step_[static_cast<size_t>(d)] = strides[static_cast<size_t>(i)];
    }
  } else if (k.has_transpose()) {
    std::vector<int64_t> perm(k.transpose().permutation().begin(),
                              k.transpose().permutation().end());
    if (!IsPermutation(perm, src.dims.size()) || rank != src.dims.size())
      return Bad(k, "transpose permutation");
    for (size_t i = 0; i < rank; ++i) {
      if (out.dims[i] != src.dims[static_cast<size_t>(perm[i])]) return Bad(k, "transpose shape");
      kernel->step_[i] = strides[static_cast<size_t>(perm[i])];
    }
  } else if (k.has_slice()) {
    const auto& s = k.slice();
    if (s.starts_size() != static_cast<int>(rank) || s.limits_size() != static_cast<int>(rank) ||
        s.strides_size() != static_cast<int>(rank) || src.dims.size() != rank) {
      return Bad(k, "slice rank");
    }
    for (size_t d = 0; d < rank; ++d) {
      int64_t start = s.starts(static_cast<int>(d)), stride = s.strides(static_cast<int>(d));
      if (start < 0 || stride < 1 ||
          (out.dims[d] > 0 && (out.dims[d] - 1 > (src.dims[d] - 1 - start) / stride))) {
        return Bad(k, "slice outside its operand");
      }
      kernel->base_ += start * strides[d];
      kernel->step_[d] = strides[d] * stride;
    }
  } else if (k.has_reverse()) {
    if (src.dims != out.dims) return Bad(k, "reverse shape");
    for (size_t d = 0; d < rank; ++d) kernel->step_[d] = strides[d];
    for (int64_t d : k.reverse().dimensions()) {
      if (d < 0 || d >= static_cast<int64_t>(rank)) return Bad(k, "reverse dimensions");
      if (kernel->step_[static_cast<size_t>(d)] < 0) continue;
      kernel->base_ += (src.dims[static_cast<size_t>(d)] - 1) * strides[static_cast<size_t>(d)];
      kernel->step_[static_cast<size_t>(d)] = -strides[static_cast<size_t>(d)];
    }
  } else {  // dynamic-slice
    if (src.dims.size() != rank || in.size() != rank + 1) return Bad(k, "dynamic-slice operands");
    for (size_t d = 0; d < rank; ++d) {
      if (out.dims[d] > src.dims[d] || in[d + 1].elements != 1 || !ir::IsInteger(in[d + 1].type)) {
        return Bad(k, "dynamic-slice sizes");
      }
      kernel->step_[d] = strides[d];
      kernel->dynamic_.push_back(in[d + 1]);
    }
  }
  kernel->size_ = ir::ElementTypeByteSize(out.type);
  kernel->in_ = src;
  kernel->out_ = out;
  return std::unique_ptr<CpuKernel>(std::move(kernel));
}

}  // namespace

Result<std::unique_ptr<CpuKernel>> MakeMovement(const plan::v2::Kernel& k, std::vector<ArrayRef> in,
                                                ArrayRef out) {
  if (k.has_constant()) {
    if (static_cast<int64_t>(k.constant().size()) != out.bytes)
      return Bad(k, "constant of the wrong size");
    auto kernel = std::make_unique<ConstantKernel>();
    kernel->bytes_ = k.constant();
    kernel->offset_ = out.offset;
    return std::unique_ptr<CpuKernel>(std::move(kernel));
  }
  if (k.has_iota()) {
    if (k.iota() < 0 || k.iota() >= static_cast<int64_t>(out.dims.size()))
      return Bad(k, "iota dimension");
    auto kernel = std::make_unique<IotaKernel>();
    kernel->out_ = out;
    kernel->dim_ = k.iota();
    return std::unique_ptr<CpuKernel>(std::move(kernel));
  }
  if (k.has_copy()) {
    if (in.size() != 1 || in[0].bytes != out.bytes) return Bad(k, "reshape sizes");
    auto kernel = std::make_unique<CopyKernel>();
    kernel->in_ = in[0].offset;
    kernel->out_ = out.offset;
    kernel->bytes_ = out.bytes;
    return std::unique_ptr<CpuKernel>(std::move(kernel));
  }
  if (k.has_broadcast() || k.has_transpose() || k.has_slice() || k.has_reverse() ||
      k.has_dynamic_slice()) {
    if (in.empty()) return Bad(k, "no operand");
    return MakeAffine(k, std::move(in), std::move(out));
  }
  auto kernel = std::make_unique<PlaceKernel>();
  const size_t rank = out.dims.size();
  for (const ArrayRef& a : in) {
    if (a.type != out.type && !(k.has_dynamic_update_slice() && &a - in.data() >= 2))
      return Bad(k, "operand types");
  }
  if (k.has_pad()) {
    const auto& p = k.pad();
    if (in.size() != 2 || in[1].elements != 1 || p.lo_size() != static_cast<int>(rank) ||
        p.interior_size() != static_cast<int>(rank) || in[0].dims.size() != rank) {
      return Bad(k, "pad spec");
    }
    kernel->kind_ = PlaceKernel::kPad;
    for (size_t d = 0; d < rank; ++d) {
      if (p.interior(static_cast<int>(d)) < 0) return Bad(k, "negative interior padding");
      kernel->lo_.push_back(p.lo(static_cast<int>(d)));
      kernel->interior_.push_back(p.interior(static_cast<int>(d)));
    }
  } else if (k.has_concatenate()) {
    kernel->kind_ = PlaceKernel::kConcatenate;
    kernel->dim_ = k.concatenate();
    if (kernel->dim_ < 0 || kernel->dim_ >= static_cast<int64_t>(rank))
      return Bad(k, "concatenate dimension");
    int64_t total = 0;
    for (const ArrayRef& a : in) {
      if (a.dims.size() != rank) return Bad(k, "concatenate ranks");
      for (size_t d = 0; d < rank; ++d) {
        if (static_cast<int64_t>(d) != kernel->dim_ && a.dims[d] != out.dims[d])
          return Bad(k, "concatenate shapes");
      }
      total += a.dims[static_cast<size_t>(kernel->dim_)];
    }
    if (total != out.dims[static_cast<size_t>(kernel->dim_)]) return Bad(k, "concatenate sizes");
  } else if (k.has_dynamic_update_slice()) {
    kernel->kind_ = PlaceKernel::kDynamicUpdateSlice;
    if (in.size() != rank + 2 || in[0].dims != out.dims || in[1].dims.size() != rank)
      return Bad(k, "dynamic-update-slice operands");
    for (size_t d = 0; d < rank; ++d) {
      if (in[1].dims[d] > out.dims[d] || in[2 + d].elements != 1 ||
          !ir::IsInteger(in[2 + d].type)) {
        return Bad(k, "dynamic-update-slice sizes");
      }
    }
  } else {
    return Bad(k, "no movement spec");
  }
  kernel->size_ = ir::ElementTypeByteSize(out.type);
  kernel->in_ = std::move(in);
  kernel->out_ = std::move(out);
  return std::unique_ptr<CpuKernel>(std::move(kernel));
}

}  // namespace detrain::runtime::cpu
