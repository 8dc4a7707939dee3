// The specs that compute values (check_specs.h): elementwise and reduction fusions, reduce,
// reduce-window, dot, convolution, all-reduce — each against its buffers, its scalar programs
// decoded. What every backend relies on: element types that agree, sizes that match the
// buffers (products checked for overflow), dimensions inside their ranks, windows of at least
// one tap, combiners of two inputs of the reduced type.
#include <algorithm>
#include <string>

#include "base/checked.h"
#include "compiler/ir/shape.h"
#include "compiler/plan/check_specs.h"

namespace detrain::plan::internal {
namespace {

namespace pb = v2;
using ir::ElementType;

// A program of the kernel decoded; a decoding error names the kernel.
Result<DecodedProgram> Decode(const pb::Kernel& k, const pb::ScalarProgram& program,
                              const std::vector<ElementType>& types, bool allow_reduced = false,
                              ElementType reduced_type = ElementType::kF32) {
  Result<DecodedProgram> p = DecodeProgram(program, types, allow_reduced, reduced_type);
  if (p.ok()) return p;
  std::string_view message = p.status().message();
  if (message.rfind("plan: ", 0) == 0) message.remove_prefix(6);
  return KernelError(k, std::string(message));
}

ElementType ResultType(const DecodedProgram& p) {
  return p.ops[static_cast<size_t>(p.result)].type;
}

// A combiner (inputs: accumulator and element, both `type`) whose result is `type`.
Result<DecodedProgram> Combiner(const pb::Kernel& k, const pb::Combiner& c, ElementType type) {
  DETRAIN_ASSIGN_OR_RETURN(DecodedProgram p, Decode(k, c.program(), {type, type}));
  if (ResultType(p) != type) return KernelError(k, "a combiner of the wrong type");
  return p;
}

// The element counts of a reduce spec: the operand's, and the output's (its kept dims').
struct ReduceSizes {
  int64_t operand = 0, outputs = 0;
};

Result<ReduceSizes> CheckReduceSpec(const pb::Kernel& k, const pb::ReduceSpec& spec) {
  const std::vector<int64_t> dims(spec.operand_dims().begin(), spec.operand_dims().end());
  Result<int64_t> operand = CheckedElementCount(dims, "reduce operand");
  if (!operand.ok()) return KernelError(k, std::string(operand.status().message()));
  std::vector<bool> reduced(dims.size(), false);
  int64_t last = -1;
  for (int64_t d : spec.dimensions()) {
    if (d <= last || d >= static_cast<int64_t>(dims.size()))
      return KernelError(k, "bad reduce dimensions");
    reduced[static_cast<size_t>(d)] = true;
    last = d;
  }
  std::vector<int64_t> kept;
  for (size_t d = 0; d < dims.size(); ++d) {
    if (!reduced[d]) kept.push_back(dims[d]);
  }
  Result<int64_t> outputs = CheckedElementCount(kept, "reduce output");
  if (!outputs.ok()) return KernelError(k, std::string(outputs.status().message()));
  return ReduceSizes{*operand, *outputs};
}

// Every INPUT of `p` holds `space` elements or one (read as a scalar).
Status CheckInputs(const CheckedKernel& k, const DecodedProgram& p, int64_t space) {
  for (const DecodedOp& op : p.ops) {
    if (op.kind != pb::ScalarOp::INPUT) continue;
    const int64_t n = k.in[static_cast<size_t>(op.input)].elements;
    if (n != 1 && n != space) {
      return KernelError(*k.spec, "input " + std::to_string(op.input) + " has " +
                                      std::to_string(n) + " elements, its index space " +
                                      std::to_string(space));
    }
  }
  return Status::Ok();
}

bool InRange(int64_t d, size_t rank) { return d >= 0 && d < static_cast<int64_t>(rank); }

bool ValidWindow(const pb::WindowDim& w) {
  return w.size() >= 1 && w.stride() >= 1 && w.lhs_dilate() >= 1 && w.rhs_dilate() >= 1;
}

}  // namespace

Status CheckElementwise(CheckedKernel& k) {
  const pb::Kernel& s = *k.spec;
  const pb::ElementwiseSpec& spec = s.elementwise();
  const Array& out = k.out[0];
  std::vector<ElementType> types;
  for (const Array& a : k.in) types.push_back(a.type);
  if (spec.has_reduce()) {
    if (spec.pre().ops_size() == 0)
      return KernelError(s, "a reduction fusion without its pre program");
    DETRAIN_ASSIGN_OR_RETURN(k.pre, Decode(s, spec.pre(), types));
    DETRAIN_ASSIGN_OR_RETURN(k.init, Decode(s, spec.init(), types));
    const ElementType rtype = ResultType(k.pre);
    if (ResultType(k.init) != rtype) return KernelError(s, "a reduction init of the wrong type");
    DETRAIN_ASSIGN_OR_RETURN(ReduceSizes sizes, CheckReduceSpec(s, spec.reduce()));
    DETRAIN_ASSIGN_OR_RETURN(k.combiner, Combiner(s, spec.reduce().combiner(), rtype));
    if (sizes.outputs != out.elements)
      return KernelError(s, "reduction fusion output size mismatch");
    DETRAIN_ASSIGN_OR_RETURN(k.program, Decode(s, spec.program(), types, true, rtype));
    DETRAIN_RETURN_IF_ERROR(CheckInputs(k, k.pre, sizes.operand));
    for (const DecodedOp& op : k.init.ops) {
      if (op.kind == pb::ScalarOp::INPUT && k.in[static_cast<size_t>(op.input)].elements < 1)
        return KernelError(s, "an empty reduction init");
    }
  } else {
    DETRAIN_ASSIGN_OR_RETURN(k.program, Decode(s, spec.program(), types));
  }
  DETRAIN_RETURN_IF_ERROR(CheckInputs(k, k.program, out.elements));
  if (ResultType(k.program) != out.type)
    return KernelError(s, "the program's result type is not the output's");
  return Status::Ok();
}

Status CheckReduce(CheckedKernel& k) {
  const pb::Kernel& s = *k.spec;
  if (k.in.size() != 2 || k.in[0].type != k.in[1].type || k.in[1].elements != 1 ||
      k.out[0].type != k.in[0].type) {
    return KernelError(s, "reduce operands");
  }
  DETRAIN_ASSIGN_OR_RETURN(ReduceSizes sizes, CheckReduceSpec(s, s.reduce()));
  DETRAIN_ASSIGN_OR_RETURN(k.combiner, Combiner(s, s.reduce().combiner(), k.in[0].type));
  if (sizes.operand != k.in[0].elements || sizes.outputs != k.out[0].elements)
    return KernelError(s, "reduce sizes do not match its buffers");
  return Status::Ok();
}

Status CheckReduceWindow(CheckedKernel& k) {
  const pb::Kernel& s = *k.spec;
  const pb::ReduceWindowSpec& spec = s.reduce_window();
  if (k.in.size() != 2 || k.in[1].elements != 1 || k.in[1].type != k.in[0].type ||
      k.out[0].type != k.in[0].type) {
    return KernelError(s, "reduce-window operands");
  }
  const size_t rank = k.in[0].dims.size();
  if (static_cast<size_t>(spec.window_size()) != rank || k.out[0].dims.size() != rank)
    return KernelError(s, "reduce-window rank");
  std::vector<int64_t> taps;
  for (const pb::WindowDim& w : spec.window()) {
    if (!ValidWindow(w) || w.size() > (int64_t{1} << 20))
      return KernelError(s, "reduce-window window");
    taps.push_back(w.size());
  }
  if (!CheckedElementCount(taps, "window").ok()) return KernelError(s, "reduce-window window");
  DETRAIN_ASSIGN_OR_RETURN(k.combiner, Combiner(s, spec.combiner(), k.in[0].type));
  return Status::Ok();
}

Status CheckDot(CheckedKernel& k) {
  const pb::Kernel& s = *k.spec;
  const pb::DotSpec& d = s.dot();
  if (k.in.size() != 2) return KernelError(s, "dot operands");
  const Array& lhs = k.in[0];
  const Array& rhs = k.in[1];
  const Array& out = k.out[0];
  const std::vector<int64_t> lp(d.lhs_permutation().begin(), d.lhs_permutation().end());
  const std::vector<int64_t> rp(d.rhs_permutation().begin(), d.rhs_permutation().end());
  if (!ir::IsPermutation(lp, lhs.dims.size()) || !ir::IsPermutation(rp, rhs.dims.size()))
    return KernelError(s, "bad dot permutations");
  if (lhs.type != out.type || rhs.type != out.type || out.type == ElementType::kPred)
    return KernelError(s, "dot element types");
  Result<int64_t> lhs_n = CheckedElementCount({d.batch(), d.m(), d.k()}, "dot");
  Result<int64_t> rhs_n = CheckedElementCount({d.batch(), d.k(), d.n()}, "dot");
  Result<int64_t> out_n = CheckedElementCount({d.batch(), d.m(), d.n()}, "dot");
  if (!lhs_n.ok() || !rhs_n.ok() || !out_n.ok() || *lhs_n != lhs.elements ||
      *rhs_n != rhs.elements || *out_n != out.elements) {
    return KernelError(s, "dot sizes do not match its buffers");
  }
  return Status::Ok();
}

Status CheckConvolution(CheckedKernel& k) {
  const pb::Kernel& spec = *k.spec;
  const pb::ConvolutionSpec& s = spec.convolution();
  if (k.in.size() != 2) return KernelError(spec, "convolution operands");
  const Array& in = k.in[0];
  const Array& w = k.in[1];
  const Array& out = k.out[0];
  const size_t rank = in.dims.size();
  const size_t ns = static_cast<size_t>(s.window_size());
  constexpr size_t kMaxSpatial = 64;  // the IR's rank limit
  bool ok = in.type == ElementType::kF32 && w.type == in.type && out.type == in.type &&
            w.dims.size() == rank && out.dims.size() == rank && rank == ns + 2 &&
            ns <= kMaxSpatial && s.in_spatial_size() == static_cast<int>(ns) &&
            s.k_spatial_size() == static_cast<int>(ns) &&
            s.out_spatial_size() == static_cast<int>(ns);
  for (int64_t d :
       {s.in_batch(), s.in_feature(), s.k_in(), s.k_out(), s.out_batch(), s.out_feature()})
    ok = ok && InRange(d, rank);
  for (size_t i = 0; ok && i < ns; ++i) {
    const int si = static_cast<int>(i);
    ok = InRange(s.in_spatial(si), rank) && InRange(s.k_spatial(si), rank) &&
         InRange(s.out_spatial(si), rank) && ValidWindow(s.window(si)) &&
         s.window(si).size() == w.dims[static_cast<size_t>(s.k_spatial(si))];
  }
  ok = ok &&
       in.dims[static_cast<size_t>(s.in_feature())] == w.dims[static_cast<size_t>(s.k_in())] &&
       out.dims[static_cast<size_t>(s.out_feature())] == w.dims[static_cast<size_t>(s.k_out())] &&
       out.dims[static_cast<size_t>(s.out_batch())] == in.dims[static_cast<size_t>(s.in_batch())];
  if (!ok) return KernelError(spec, "inconsistent convolution spec");
  return Status::Ok();
}

Status CheckAllReduce(CheckedKernel& k) {
  const pb::Kernel& s = *k.spec;
  if (k.in.size() != 1 || k.out.size() != 1) return KernelError(s, "an all-reduce of one array");
  if (k.in[0].type != k.out[0].type || k.in[0].elements != k.out[0].elements)
    return KernelError(s, "all-reduce shapes");
  DETRAIN_ASSIGN_OR_RETURN(k.combiner, Combiner(s, s.all_reduce().combiner(), k.in[0].type));
  return Status::Ok();
}

}  // namespace detrain::plan::internal
