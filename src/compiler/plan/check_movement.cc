// The specs that move values (check_specs.h): constant, iota, reshape copies, the affine copies
// (broadcast, transpose, slice, reverse, dynamic-slice), pad, concatenate,
// dynamic-update-slice, gather, scatter and threefry — each against its buffers: element types
// that agree, dimension lists inside their ranks, windows inside their operands. And the
// dispatch of every computing spec to its family.
#include <algorithm>
#include <string>

#include "compiler/ir/shape.h"
#include "compiler/plan/check_specs.h"

namespace detrain::plan::internal {
namespace {

namespace pb = v2;
using ir::ElementType;

bool Contains(const std::vector<int64_t>& v, int64_t x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

bool AllInRange(const std::vector<int64_t>& v, int64_t rank) {
  for (int64_t x : v) {
    if (x < 0 || x >= rank) return false;
  }
  return true;
}

template <typename Repeated>
std::vector<int64_t> Ints(const Repeated& r) {
  return std::vector<int64_t>(r.begin(), r.end());
}

// The length of the index vector of `indices` at `ivd` (its rank: an implicit vector of one),
// or -1 when ivd is outside [0, rank].
int64_t IndexVectorLength(const Array& indices, int64_t ivd) {
  const int64_t rank = static_cast<int64_t>(indices.dims.size());
  if (ivd == rank) return 1;
  return ivd >= 0 && ivd < rank ? indices.dims[static_cast<size_t>(ivd)] : -1;
}

// broadcast, transpose, slice, reverse, dynamic-slice: out[i] reads in[0] at an affine index.
Status CheckAffine(const CheckedKernel& k) {
  const pb::Kernel& s = *k.spec;
  const Array& src = k.in[0];
  const Array& out = k.out[0];
  const size_t rank = out.dims.size();
  if (src.type != out.type) return KernelError(s, "operand and result types differ");
  if (s.has_broadcast()) {
    const std::vector<int64_t> dims = Ints(s.broadcast().dimensions());
    if (dims.size() != src.dims.size()) return KernelError(s, "broadcast dimensions");
    for (size_t i = 0; i < dims.size(); ++i) {
      if (dims[i] < 0 || dims[i] >= static_cast<int64_t>(rank) ||
          out.dims[static_cast<size_t>(dims[i])] != src.dims[i])
        return KernelError(s, "broadcast dimensions");
    }
  } else if (s.has_transpose()) {
    const std::vector<int64_t> perm = Ints(s.transpose().permutation());
    if (!ir::IsPermutation(perm, src.dims.size()) || rank != src.dims.size())
      return KernelError(s, "transpose permutation");
    for (size_t i = 0; i < rank; ++i) {
      if (out.dims[i] != src.dims[static_cast<size_t>(perm[i])])
        return KernelError(s, "transpose shape");
    }
  } else if (s.has_slice()) {
    const pb::SliceSpec& sl = s.slice();
    if (sl.starts_size() != static_cast<int>(rank) || sl.limits_size() != static_cast<int>(rank) ||
        sl.strides_size() != static_cast<int>(rank) || src.dims.size() != rank) {
      return KernelError(s, "slice rank");
    }
    for (size_t d = 0; d < rank; ++d) {
      const int64_t start = sl.starts(static_cast<int>(d)),
                    stride = sl.strides(static_cast<int>(d));
      if (start < 0 || stride < 1 ||
          (out.dims[d] > 0 && out.dims[d] - 1 > (src.dims[d] - 1 - start) / stride))
        return KernelError(s, "slice outside its operand");
    }
  } else if (s.has_reverse()) {
    if (src.dims != out.dims) return KernelError(s, "reverse shape");
    for (int64_t d : s.reverse().dimensions()) {
      if (d < 0 || d >= static_cast<int64_t>(rank)) return KernelError(s, "reverse dimensions");
    }
  } else {  // dynamic-slice: the operand, then one scalar start per dimension
    if (src.dims.size() != rank || k.in.size() != rank + 1)
      return KernelError(s, "dynamic-slice operands");
    for (size_t d = 0; d < rank; ++d) {
      if (out.dims[d] > src.dims[d] || k.in[d + 1].elements != 1 ||
          !ir::IsInteger(k.in[d + 1].type))
        return KernelError(s, "dynamic-slice sizes");
    }
  }
  return Status::Ok();
}

// pad, concatenate, dynamic-update-slice: out[i] is placed from one of the operands.
Status CheckPlace(const CheckedKernel& k) {
  const pb::Kernel& s = *k.spec;
  const Array& out = k.out[0];
  const size_t rank = out.dims.size();
  for (size_t i = 0; i < k.in.size(); ++i) {
    if (k.in[i].type != out.type && !(s.has_dynamic_update_slice() && i >= 2))
      return KernelError(s, "operand types");
  }
  if (s.has_pad()) {
    const pb::PadSpec& p = s.pad();
    if (k.in.size() != 2 || k.in[1].elements != 1 || p.lo_size() != static_cast<int>(rank) ||
        p.interior_size() != static_cast<int>(rank) || k.in[0].dims.size() != rank) {
      return KernelError(s, "pad spec");
    }
    for (int64_t x : p.interior()) {
      if (x < 0) return KernelError(s, "negative interior padding");
    }
  } else if (s.has_concatenate()) {
    const int64_t dim = s.concatenate();
    if (dim < 0 || dim >= static_cast<int64_t>(rank))
      return KernelError(s, "concatenate dimension");
    int64_t total = 0;
    for (const Array& a : k.in) {
      if (a.dims.size() != rank) return KernelError(s, "concatenate ranks");
      for (size_t d = 0; d < rank; ++d) {
        if (static_cast<int64_t>(d) != dim && a.dims[d] != out.dims[d])
          return KernelError(s, "concatenate shapes");
      }
      // Summed without overflow: the running total never passes the result's size.
      if (a.dims[static_cast<size_t>(dim)] > out.dims[static_cast<size_t>(dim)] - total)
        return KernelError(s, "concatenate sizes");
      total += a.dims[static_cast<size_t>(dim)];
    }
    if (total != out.dims[static_cast<size_t>(dim)]) return KernelError(s, "concatenate sizes");
  } else {  // dynamic-update-slice: the operand, the update, one scalar start per dimension
    if (k.in.size() != rank + 2 || k.in[0].dims != out.dims || k.in[1].dims.size() != rank)
      return KernelError(s, "dynamic-update-slice operands");
    for (size_t d = 0; d < rank; ++d) {
      if (k.in[1].dims[d] > out.dims[d] || k.in[2 + d].elements != 1 ||
          !ir::IsInteger(k.in[2 + d].type))
        return KernelError(s, "dynamic-update-slice sizes");
    }
  }
  return Status::Ok();
}

}  // namespace

Status KernelError(const pb::Kernel& k, const std::string& what) {
  return InvalidArgument("plan: kernel " + std::to_string(k.id()) + " (" + k.name() + "): " + what);
}

Status CheckSpec(CheckedKernel& k) {
  const pb::Kernel& s = *k.spec;
  if (s.has_threefry()) return CheckThreefry(k);
  if (k.out.size() != 1) return KernelError(s, "expected one result array");
  auto arity = [&](size_t n) {
    return k.in.size() == n ? Status::Ok()
                            : KernelError(s, "expected " + std::to_string(n) + " operands");
  };
  switch (s.spec_case()) {
    case pb::Kernel::kElementwise:
      return CheckElementwise(k);
    case pb::Kernel::kDot:
      DETRAIN_RETURN_IF_ERROR(arity(2));
      return CheckDot(k);
    case pb::Kernel::kConvolution:
      DETRAIN_RETURN_IF_ERROR(arity(2));
      return CheckConvolution(k);
    case pb::Kernel::kReduce:
      DETRAIN_RETURN_IF_ERROR(arity(2));
      return CheckReduce(k);
    case pb::Kernel::kReduceWindow:
      DETRAIN_RETURN_IF_ERROR(arity(2));
      return CheckReduceWindow(k);
    case pb::Kernel::kGather:
      return CheckGather(k);
    case pb::Kernel::kScatter:
      return CheckScatter(k);
    case pb::Kernel::kConstant:
    case pb::Kernel::kIota:
      DETRAIN_RETURN_IF_ERROR(arity(0));
      return CheckMovement(k);
    case pb::Kernel::kTranspose:
    case pb::Kernel::kBroadcast:
    case pb::Kernel::kCopy:
    case pb::Kernel::kSlice:
    case pb::Kernel::kReverse:
      DETRAIN_RETURN_IF_ERROR(arity(1));
      return CheckMovement(k);
    case pb::Kernel::kConcatenate:
    case pb::Kernel::kPad:
    case pb::Kernel::kDynamicSlice:
    case pb::Kernel::kDynamicUpdateSlice:
      return CheckMovement(k);
    default:  // alias, while and all-reduce are the reader's; a spec without a kernel
      return KernelError(s, "no spec");
  }
}

Status CheckMovement(CheckedKernel& k) {
  const pb::Kernel& s = *k.spec;
  const Array& out = k.out[0];
  if (s.has_constant()) {
    if (static_cast<int64_t>(s.constant().size()) != out.bytes)
      return KernelError(s, "constant of the wrong size");
    return Status::Ok();
  }
  if (s.has_iota()) {
    if (s.iota() < 0 || s.iota() >= static_cast<int64_t>(out.dims.size()))
      return KernelError(s, "iota dimension");
    return Status::Ok();
  }
  if (s.has_copy()) {
    if (k.in[0].bytes != out.bytes) return KernelError(s, "reshape sizes");
    return Status::Ok();
  }
  if (s.has_broadcast() || s.has_transpose() || s.has_slice() || s.has_reverse() ||
      s.has_dynamic_slice()) {
    if (k.in.empty()) return KernelError(s, "no operand");
    return CheckAffine(k);
  }
  if (k.in.empty()) return KernelError(s, "no operand");
  return CheckPlace(k);
}

Status CheckGather(CheckedKernel& k) {
  const pb::Kernel& s = *k.spec;
  const pb::GatherSpec& g = s.gather();
  if (k.in.size() != 2 || k.in[0].type != k.out[0].type || !ir::IsInteger(k.in[1].type))
    return KernelError(s, "gather operands");
  const Array& in = k.in[0];
  const Array& out = k.out[0];
  const std::vector<int64_t> offset_dims = Ints(g.offset_dims());
  const std::vector<int64_t> collapsed = Ints(g.collapsed_slice_dims());
  const std::vector<int64_t> start_map = Ints(g.start_index_map());
  const std::vector<int64_t> sizes = Ints(g.slice_sizes());
  const int64_t rank = static_cast<int64_t>(in.dims.size());
  const int64_t irank = static_cast<int64_t>(k.in[1].dims.size());
  const int64_t ivd = g.index_vector_dim();
  std::vector<int64_t> window_dims;  // the operand dims that appear as offset dims
  for (int64_t d = 0; d < rank; ++d) {
    if (!Contains(collapsed, d)) window_dims.push_back(d);
  }
  bool ok =
      sizes.size() == in.dims.size() && AllInRange(start_map, rank) &&
      AllInRange(collapsed, rank) &&
      AllInRange(offset_dims, static_cast<int64_t>(out.dims.size())) &&
      IndexVectorLength(k.in[1], ivd) == static_cast<int64_t>(start_map.size()) &&
      offset_dims.size() == window_dims.size() &&
      out.dims.size() == offset_dims.size() + static_cast<size_t>(irank - (ivd == irank ? 0 : 1));
  for (size_t d = 0; ok && d < sizes.size(); ++d) ok = sizes[d] >= 0 && sizes[d] <= in.dims[d];
  for (size_t i = 0; ok && i < offset_dims.size(); ++i) {
    ok =
        out.dims[static_cast<size_t>(offset_dims[i])] <= sizes[static_cast<size_t>(window_dims[i])];
  }
  if (!ok) return KernelError(s, "inconsistent gather spec");
  return Status::Ok();
}

Status CheckScatter(CheckedKernel& k) {
  const pb::Kernel& s = *k.spec;
  const pb::ScatterSpec& sc = s.scatter();
  const Array& out = k.out[0];
  if (k.in.size() != 3 || k.in[0].dims != out.dims || k.in[0].type != out.type ||
      k.in[2].type != out.type || !ir::IsInteger(k.in[1].type)) {
    return KernelError(s, "scatter operands");
  }
  const std::vector<int64_t> window = Ints(sc.update_window_dims());
  const std::vector<int64_t> inserted = Ints(sc.inserted_window_dims());
  const std::vector<int64_t> to_operand = Ints(sc.scatter_dims_to_operand_dims());
  const int64_t rank = static_cast<int64_t>(out.dims.size());
  size_t window_operand_dims = 0;  // the operand dims an update window spans
  for (int64_t d = 0; d < rank; ++d) window_operand_dims += Contains(inserted, d) ? 0 : 1;
  const bool ok = AllInRange(to_operand, rank) && AllInRange(inserted, rank) &&
                  AllInRange(window, static_cast<int64_t>(k.in[2].dims.size())) &&
                  IndexVectorLength(k.in[1], sc.index_vector_dim()) ==
                      static_cast<int64_t>(to_operand.size()) &&
                  window.size() == window_operand_dims;
  if (!ok) return KernelError(s, "inconsistent scatter spec");
  DETRAIN_ASSIGN_OR_RETURN(DecodedProgram combiner,
                           DecodeProgram(sc.combiner().program(), {out.type, out.type}));
  if (combiner.ops[static_cast<size_t>(combiner.result)].type != out.type)
    return KernelError(s, "a combiner of the wrong type");
  k.combiner = std::move(combiner);
  return Status::Ok();
}

Status CheckThreefry(CheckedKernel& k) {
  const pb::Kernel& s = *k.spec;
  if (k.in.size() != 4 || k.out.size() != 2 || k.out[0].elements != k.out[1].elements)
    return KernelError(s, "threefry operands");
  for (const Array& a : k.in) {
    if (a.type != ElementType::kU32 || (a.elements != 1 && a.elements != k.out[0].elements))
      return KernelError(s, "threefry operand shapes");
  }
  for (const Array& a : k.out) {
    if (a.type != ElementType::kU32) return KernelError(s, "threefry result types");
  }
  return Status::Ok();
}

}  // namespace detrain::plan::internal
