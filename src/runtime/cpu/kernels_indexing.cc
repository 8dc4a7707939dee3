// gather, scatter and the threefry2x32 custom call. gather clamps each start index so the
// slice fits; scatter skips an update whose window would leave the operand and applies the
// others one element at a time in row-major order of the updates (ops.def kUpdateOrder), so it
// runs on one thread. threefry is the one host+device block function of src/attest/prng.
#include <algorithm>
#include <cstring>

#include "attest/prng/threefry.h"
#include "runtime/cpu/copy.h"
#include "runtime/cpu/kernels.h"

namespace detrain::runtime::cpu {
namespace {

bool Contains(const std::vector<int64_t>& v, int64_t x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

// The index vector of `indices` at batch position `batch` (dims of indices without ivd).
void IndexVector(const ArrayRef& indices, const uint8_t* data, int64_t ivd,
                 const std::vector<int64_t>& batch, std::vector<int64_t>* vec) {
  const auto& dims = indices.dims;
  auto strides = RowMajorStrides(dims);
  const int64_t rank = static_cast<int64_t>(dims.size());
  int64_t base = 0;
  size_t b = 0;
  for (int64_t d = 0; d < rank; ++d) {
    if (d != ivd) base += batch[b++] * strides[static_cast<size_t>(d)];
  }
  int64_t len = ivd == rank ? 1 : dims[static_cast<size_t>(ivd)];
  vec->clear();
  for (int64_t k = 0; k < len; ++k) {
    vec->push_back(ReadIndex(data, indices.type,
                             base + (ivd == rank ? 0 : k * strides[static_cast<size_t>(ivd)])));
  }
}

// The length of the contiguous run a gather or scatter moves per index vector: the last dimension
// of `dims` (the output of a gather, the updates of a scatter) when it is the window dimension
// that maps to the operand's last dimension, else 1. Along a run the operand offset grows by one
// element and the index vector is the same, so the run is one copy (gather) or one loop over
// consecutive elements (scatter) — the same elements in the same order as one at a time.
int64_t ContiguousRun(const std::vector<int64_t>& dims, const std::vector<int64_t>& window_dims,
                      const std::vector<int64_t>& operand_dims, int64_t operand_rank) {
  const int64_t last = static_cast<int64_t>(dims.size()) - 1;
  if (last < 0) return 1;
  for (size_t k = 0; k < window_dims.size() && k < operand_dims.size(); ++k) {
    if (window_dims[k] == last && operand_dims[k] == operand_rank - 1)
      return std::max<int64_t>(dims.back(), 1);
  }
  return 1;
}

// `dims` with the last dimension counted as one run of `run` elements.
std::vector<int64_t> RunDims(std::vector<int64_t> dims, int64_t run) {
  if (run > 1) dims.back() = 1;
  return dims;
}

class GatherKernel : public CpuKernel {
 public:
  Status Run(uint8_t* arena, const ExecContext&) const override {
    const uint8_t* in = arena + in_.offset;
    const uint8_t* ind = arena + indices_.offset;
    uint8_t* out = arena + out_.offset;
    if (out_.elements == 0) return Status::Ok();
    auto in_strides = RowMajorStrides(in_.dims);
    const int64_t run =
        ContiguousRun(out_.dims, offset_dims_, window_dims_, static_cast<int64_t>(in_.dims.size()));
    const std::vector<int64_t> dims = RunDims(out_.dims, run);
    std::vector<int64_t> idx(dims.size(), 0), batch, offset, vec, src(in_.dims.size());
    int64_t i = 0;
    do {
      batch.clear();
      offset.clear();
      for (size_t d = 0; d < idx.size(); ++d)
        (Contains(offset_dims_, static_cast<int64_t>(d)) ? offset : batch).push_back(idx[d]);
      IndexVector(indices_, ind, ivd_, batch, &vec);
      std::fill(src.begin(), src.end(), 0);
      for (size_t k = 0; k < start_map_.size(); ++k)
        src[static_cast<size_t>(start_map_[k])] = vec[k];
      int64_t off = 0;
      for (size_t d = 0; d < src.size(); ++d)
        src[d] = std::clamp<int64_t>(src[d], 0, in_.dims[d] - sizes_[d]);
      for (size_t k = 0; k < offset.size(); ++k)
        src[static_cast<size_t>(window_dims_[k])] += offset[k];
      for (size_t d = 0; d < src.size(); ++d) off += src[d] * in_strides[d];
      std::memcpy(out + i * size_, in + off * size_, static_cast<size_t>(run * size_));
      i += run;
    } while (NextIndex(idx, dims));
    return Status::Ok();
  }
  ArrayRef in_, indices_, out_;
  std::vector<int64_t> offset_dims_, start_map_, sizes_, window_dims_;
  int64_t ivd_ = 0;
  int size_ = 4;
};

class ScatterKernel : public CpuKernel {
 public:
  Status Run(uint8_t* arena, const ExecContext&) const override {
    uint8_t* out = arena + out_.offset;
    if (out_.offset != in_.offset)
      std::memcpy(out, arena + in_.offset, static_cast<size_t>(out_.bytes));
    const uint8_t* ind = arena + indices_.offset;
    const uint8_t* upd = arena + updates_.offset;
    if (updates_.elements == 0) return Status::Ok();
    auto out_strides = RowMajorStrides(out_.dims);
    const int64_t run = ContiguousRun(updates_.dims, update_window_dims_, window_operand_dims_,
                                      static_cast<int64_t>(out_.dims.size()));
    const std::vector<int64_t> dims = RunDims(updates_.dims, run);
    ir::DispatchElementType(out_.type, [&](auto tag) {
      using T = typename decltype(tag)::type;
      std::vector<int64_t> idx(dims.size(), 0), batch, window, vec, dst(out_.dims.size());
      int64_t u = 0;
      do {
        batch.clear();
        window.clear();
        for (size_t d = 0; d < idx.size(); ++d)
          (Contains(update_window_dims_, static_cast<int64_t>(d)) ? window : batch)
              .push_back(idx[d]);
        IndexVector(indices_, ind, ivd_, batch, &vec);
        std::fill(dst.begin(), dst.end(), 0);
        for (size_t k = 0; k < to_operand_.size(); ++k)
          dst[static_cast<size_t>(to_operand_[k])] = vec[k];
        bool in_bounds = true;
        for (size_t d = 0; d < dst.size(); ++d)
          in_bounds = in_bounds && dst[d] >= 0 && dst[d] <= out_.dims[d] - window_sizes_[d];
        if (in_bounds) {
          for (size_t k = 0; k < window.size(); ++k)
            dst[static_cast<size_t>(window_operand_dims_[k])] += window[k];
          int64_t o = 0;
          for (size_t d = 0; d < dst.size(); ++d) o += dst[d] * out_strides[d];
          uint8_t* po = out + o * static_cast<int64_t>(sizeof(T));
          const uint8_t* pu = upd + u * static_cast<int64_t>(sizeof(T));
          for (int64_t e = 0; e < run; ++e) {
            T a, b;
            std::memcpy(&a, po + e * static_cast<int64_t>(sizeof(T)), sizeof(T));
            std::memcpy(&b, pu + e * static_cast<int64_t>(sizeof(T)), sizeof(T));
            T r = Combine<T>(combiner_, a, b);
            std::memcpy(po + e * static_cast<int64_t>(sizeof(T)), &r, sizeof(T));
          }
        }
        u += run;
      } while (NextIndex(idx, dims));
    });
    return Status::Ok();
  }
  ArrayRef in_, indices_, updates_, out_;
  std::vector<int64_t> update_window_dims_, window_operand_dims_, to_operand_, window_sizes_;
  int64_t ivd_ = 0;
  DecodedProgram combiner_;
};

class ThreefryKernel : public CpuKernel {
 public:
  Status Run(uint8_t* arena, const ExecContext& ctx) const override {
    const int64_t n = out_[0].elements;
    auto word = [&](int i, int64_t j) {
      uint32_t v;
      std::memcpy(&v,
                  arena + in_[static_cast<size_t>(i)].offset +
                      (in_[static_cast<size_t>(i)].elements == 1 ? 0 : j) * 4,
                  4);
      return v;
    };
    uint8_t* y0 = arena + out_[0].offset;
    uint8_t* y1 = arena + out_[1].offset;
    const bool arrays = in_[2].elements == n && in_[3].elements == n && Disjoint(2, 0) &&
                        Disjoint(2, 1) && Disjoint(3, 0) && Disjoint(3, 1);
    if (arrays) {
      // Each run of blocks under one key (a broadcast key: one run) goes through the vectorized
      // array form of the same function.
      const auto* x0 = reinterpret_cast<const uint32_t*>(arena + in_[2].offset);
      const auto* x1 = reinterpret_cast<const uint32_t*>(arena + in_[3].offset);
      auto* out0 = reinterpret_cast<uint32_t*>(y0);
      auto* out1 = reinterpret_cast<uint32_t*>(y1);
      for (int64_t j = 0; j < n;) {
        const uint32_t k0 = word(0, j), k1 = word(1, j);
        int64_t e = j + 1;
        while (e < n && word(0, e) == k0 && word(1, e) == k1) ++e;
        prng::Threefry2x32ArrayIsa(ctx.isa, k0, k1, x0 + j, x1 + j, out0 + j, out1 + j,
                                   static_cast<size_t>(e - j));
        j = e;
      }
      return Status::Ok();
    }
    for (int64_t j = 0; j < n; ++j) {
      auto y = prng::Threefry2x32(word(0, j), word(1, j), word(2, j), word(3, j));
      std::memcpy(y0 + j * 4, &y[0], 4);
      std::memcpy(y1 + j * 4, &y[1], 4);
    }
    return Status::Ok();
  }
  std::vector<ArrayRef> in_, out_;

 private:
  // Whether input i and output o share no byte (the array form allows only exact aliasing).
  bool Disjoint(size_t i, size_t o) const {
    return in_[i].offset + in_[i].bytes <= out_[o].offset ||
           out_[o].offset + out_[o].bytes <= in_[i].offset;
  }
};

}  // namespace

Result<std::unique_ptr<CpuKernel>> MakeIndexing(const plan::CheckedKernel& c) {
  const plan::v2::Kernel& k = *c.spec;
  const ArrayRef& out = c.out[0];
  if (k.has_gather()) {
    const auto& g = k.gather();
    auto kernel = std::make_unique<GatherKernel>();
    kernel->offset_dims_.assign(g.offset_dims().begin(), g.offset_dims().end());
    kernel->start_map_.assign(g.start_index_map().begin(), g.start_index_map().end());
    kernel->sizes_.assign(g.slice_sizes().begin(), g.slice_sizes().end());
    kernel->ivd_ = g.index_vector_dim();
    const std::vector<int64_t> collapsed(g.collapsed_slice_dims().begin(),
                                         g.collapsed_slice_dims().end());
    for (int64_t d = 0; d < static_cast<int64_t>(c.in[0].dims.size()); ++d) {
      if (!Contains(collapsed, d)) kernel->window_dims_.push_back(d);
    }
    kernel->size_ = ir::ElementTypeByteSize(out.type);
    kernel->in_ = c.in[0];
    kernel->indices_ = c.in[1];
    kernel->out_ = out;
    return std::unique_ptr<CpuKernel>(std::move(kernel));
  }
  const auto& s = k.scatter();
  auto kernel = std::make_unique<ScatterKernel>();
  kernel->update_window_dims_.assign(s.update_window_dims().begin(), s.update_window_dims().end());
  kernel->to_operand_.assign(s.scatter_dims_to_operand_dims().begin(),
                             s.scatter_dims_to_operand_dims().end());
  const std::vector<int64_t> inserted(s.inserted_window_dims().begin(),
                                      s.inserted_window_dims().end());
  kernel->ivd_ = s.index_vector_dim();
  const int64_t rank = static_cast<int64_t>(out.dims.size());
  kernel->window_sizes_.assign(out.dims.size(), 1);
  for (int64_t d = 0; d < rank; ++d) {
    if (!Contains(inserted, d)) kernel->window_operand_dims_.push_back(d);
  }
  for (size_t i = 0; i < kernel->update_window_dims_.size(); ++i) {
    kernel->window_sizes_[static_cast<size_t>(kernel->window_operand_dims_[i])] =
        c.in[2].dims[static_cast<size_t>(kernel->update_window_dims_[i])];
  }
  kernel->combiner_ = c.combiner;
  kernel->in_ = c.in[0];
  kernel->indices_ = c.in[1];
  kernel->updates_ = c.in[2];
  kernel->out_ = out;
  return std::unique_ptr<CpuKernel>(std::move(kernel));
}

Result<std::unique_ptr<CpuKernel>> MakeThreefry(const plan::CheckedKernel& c) {
  auto kernel = std::make_unique<ThreefryKernel>();
  kernel->in_ = c.in;
  kernel->out_ = c.out;
  return std::unique_ptr<CpuKernel>(std::move(kernel));
}

}  // namespace detrain::runtime::cpu
