// See kernel_spec.h. One function per spec kind; scalar programs are built by walking a
// computation's canonical post-order and keeping the instructions a root reaches.
#include "compiler/plan/kernel_spec.h"

#include <algorithm>
#include <map>
#include <unordered_set>

#include "compiler/ir/attributes.h"
#include "compiler/plan/schema.h"

namespace detrain::plan {
namespace {

using ir::Instruction;
using ir::Opcode;
namespace pb = plan::v2;

std::string Impl(std::string_view kind) {
  return "cpu." + std::string(kind) + "." + kImplementationVersion;
}

template <typename Repeated, typename Values>
void Assign(Repeated* out, const Values& values) {
  for (auto v : values) out->Add(v);
}

// The instructions of `c` reachable from `root`, in the computation's canonical post-order.
Result<std::vector<const Instruction*>> Reachable(const ir::Computation& c,
                                                  const Instruction* root) {
  std::unordered_set<const Instruction*> seen{root};
  std::vector<const Instruction*> stack{root};
  while (!stack.empty()) {
    const Instruction* x = stack.back();
    stack.pop_back();
    for (const Instruction* op : x->operands) {
      if (seen.insert(op).second) stack.push_back(op);
    }
  }
  DETRAIN_ASSIGN_OR_RETURN(auto order, c.PostOrder());
  std::vector<const Instruction*> kept;
  for (const Instruction* x : order) {
    if (seen.count(x)) kept.push_back(x);
  }
  return kept;
}

// Builds the scalar program of `root` in `c`; `reduced` (if any) becomes a REDUCED op, and the
// walk does not descend into it.
Status BuildProgram(const ir::Computation& c, const Instruction* root, const Instruction* reduced,
                    pb::ScalarProgram* program) {
  DETRAIN_ASSIGN_OR_RETURN(auto order, Reachable(c, root));
  std::unordered_set<const Instruction*> below_reduce;
  if (reduced != nullptr) {
    DETRAIN_ASSIGN_OR_RETURN(auto inner, Reachable(c, reduced));
    below_reduce.insert(inner.begin(), inner.end());
    below_reduce.erase(reduced);
  }
  std::map<const Instruction*, int32_t> index;
  for (const Instruction* x : order) {
    if (below_reduce.count(x) && !index.count(x)) {
      // Only needed if something outside the reduce uses it too.
      bool used_outside = false;
      for (const Instruction* y : order) {
        if (below_reduce.count(y) || y == reduced) continue;
        used_outside = used_outside || std::count(y->operands.begin(), y->operands.end(), x) > 0;
      }
      if (!used_outside) continue;
    }
    auto arg = [&](size_t i) { return index.at(x->operands[i]); };
    // Value-preserving ops on the linear index: a broadcast of a scalar, a reshape.
    if ((x->opcode == Opcode::kBroadcast && x->operands[0]->shape.rank() == 0) ||
        x->opcode == Opcode::kReshape) {
      index[x] = arg(0);
      continue;
    }
    pb::ScalarOp* op = program->add_ops();
    op->set_type(ToPlanType(x->shape.type()));
    if (x == reduced) {
      op->set_kind(pb::ScalarOp::REDUCED);
    } else if (x->opcode == Opcode::kParameter) {
      op->set_kind(pb::ScalarOp::INPUT);
      op->set_input(static_cast<int32_t>(x->parameter_number));
    } else if (x->opcode == Opcode::kConstant && x->shape.rank() == 0 && !x->shape.is_tuple()) {
      op->set_kind(pb::ScalarOp::CONSTANT);
      op->set_constant(x->literal.bytes());
    } else if (ir::AsUnaryOp(x->opcode)) {
      op->set_kind(pb::ScalarOp::UNARY);
      op->add_args(arg(0));
    } else if (ir::AsBinaryOp(x->opcode)) {
      op->set_kind(pb::ScalarOp::BINARY);
      op->add_args(arg(0));
      op->add_args(arg(1));
    } else if (x->opcode == Opcode::kCompare) {
      op->set_kind(pb::ScalarOp::COMPARE);
      op->set_direction(
          std::string(ir::DirectionName(x->FindAttr(ir::Attr::kDirection)->direction)));
      op->add_args(arg(0));
      op->add_args(arg(1));
    } else if (x->opcode == Opcode::kSelect || x->opcode == Opcode::kClamp) {
      op->set_kind(x->opcode == Opcode::kSelect ? pb::ScalarOp::SELECT : pb::ScalarOp::CLAMP);
      for (size_t i = 0; i < 3; ++i) op->add_args(arg(i));
    } else if (x->opcode == Opcode::kConvert || x->opcode == Opcode::kBitcastConvert) {
      op->set_kind(x->opcode == Opcode::kConvert ? pb::ScalarOp::CONVERT : pb::ScalarOp::BITCAST);
      op->add_args(arg(0));
    } else {
      return Unimplemented("a scalar program cannot contain '" +
                           std::string(ir::OpcodeName(x->opcode)) + "' (computation " + c.name() +
                           ")");
    }
    if (op->kind() != pb::ScalarOp::INPUT && op->kind() != pb::ScalarOp::CONSTANT &&
        op->kind() != pb::ScalarOp::REDUCED) {
      op->set_op(std::string(ir::OpcodeName(x->opcode)));
    }
    index[x] = program->ops_size() - 1;
  }
  program->set_result(index.at(root));
  return Status::Ok();
}

Status BuildCombiner(const Instruction& instr, const ir::CanonicalNames& names, pb::Combiner* out) {
  const ir::Computation* c = instr.ComputationAttr(ir::Attr::kToApply);
  out->set_hlo_computation(names.computations.at(c));
  return BuildProgram(*c, c->root(), nullptr, out->mutable_program());
}

void SortedDims(const std::vector<int64_t>& dims, google::protobuf::RepeatedField<int64_t>* out) {
  std::vector<int64_t> sorted = dims;
  std::sort(sorted.begin(), sorted.end());
  Assign(out, sorted);
}

void AddWindow(const std::vector<ir::WindowDim>& window,
               google::protobuf::RepeatedPtrField<pb::WindowDim>* out) {
  for (const ir::WindowDim& w : window) {
    pb::WindowDim* d = out->Add();
    d->set_size(w.size);
    d->set_stride(w.stride);
    d->set_pad_lo(w.pad_lo);
    d->set_pad_hi(w.pad_hi);
    d->set_lhs_dilate(w.lhs_dilate);
    d->set_rhs_dilate(w.rhs_dilate);
  }
}

Status BuildFusion(const Instruction& instr, pb::Kernel* kernel) {
  const ir::Computation& c = *instr.ComputationAttr(ir::Attr::kCalls);
  DETRAIN_ASSIGN_OR_RETURN(auto order, Reachable(c, c.root()));
  const Instruction* reduce = nullptr;
  for (const Instruction* x : order) {
    if (x->opcode != Opcode::kReduce) continue;
    if (reduce != nullptr) return Unimplemented("a fusion with two reduces");
    reduce = x;
  }
  pb::ElementwiseSpec* spec = kernel->mutable_elementwise();
  if (reduce != nullptr) {
    pb::ReduceSpec* r = spec->mutable_reduce();
    Assign(r->mutable_operand_dims(), reduce->operands[0]->shape.dims());
    SortedDims(reduce->IntsAttr(ir::Attr::kDimensions), r->mutable_dimensions());
    const ir::Computation* combiner = reduce->ComputationAttr(ir::Attr::kToApply);
    DETRAIN_RETURN_IF_ERROR(BuildProgram(*combiner, combiner->root(), nullptr,
                                         r->mutable_combiner()->mutable_program()));
    DETRAIN_RETURN_IF_ERROR(BuildProgram(c, reduce->operands[0], nullptr, spec->mutable_pre()));
    DETRAIN_RETURN_IF_ERROR(BuildProgram(c, reduce->operands[1], nullptr, spec->mutable_init()));
  }
  kernel->set_implementation(Impl(reduce ? "fused-reduce" : "elementwise"));
  return BuildProgram(c, c.root(), reduce, spec->mutable_program());
}

// A single elementwise op: a program of its operands.
Status BuildElementwise(const Instruction& instr, pb::Kernel* kernel) {
  ir::Computation c("elementwise");
  std::vector<Instruction*> params;
  auto clone = std::make_unique<Instruction>();
  clone->opcode = instr.opcode;
  clone->shape = instr.shape;
  clone->attrs = instr.attrs;
  for (size_t i = 0; i < instr.operands.size(); ++i) {
    auto p = std::make_unique<Instruction>();
    p->opcode = Opcode::kParameter;
    p->shape = instr.operands[i]->shape;
    p->parameter_number = static_cast<int64_t>(i);
    clone->operands.push_back(c.AddInstruction(std::move(p)));
  }
  c.set_root(c.AddInstruction(std::move(clone)));
  kernel->set_implementation(Impl("elementwise"));
  return BuildProgram(c, c.root(), nullptr, kernel->mutable_elementwise()->mutable_program());
}

void BuildDot(const Instruction& instr, pb::DotSpec* spec) {
  const auto& lb = instr.IntsAttr(ir::Attr::kLhsBatchDims);
  const auto& rb = instr.IntsAttr(ir::Attr::kRhsBatchDims);
  const auto& lc = instr.IntsAttr(ir::Attr::kLhsContractingDims);
  const auto& rc = instr.IntsAttr(ir::Attr::kRhsContractingDims);
  const ir::Shape& l = instr.operands[0]->shape;
  const ir::Shape& r = instr.operands[1]->shape;
  auto contains = [](const std::vector<int64_t>& v, int64_t x) {
    return std::find(v.begin(), v.end(), x) != v.end();
  };
  int64_t batch = 1, m = 1, n = 1, k = 1;
  for (int64_t d : lb) spec->add_lhs_permutation(d), batch *= l.dim(static_cast<int>(d));
  for (int64_t d = 0; d < l.rank(); ++d) {
    if (!contains(lb, d) && !contains(lc, d))
      spec->add_lhs_permutation(d), m *= l.dim(static_cast<int>(d));
  }
  for (int64_t d : lc) spec->add_lhs_permutation(d), k *= l.dim(static_cast<int>(d));
  for (int64_t d : rb) spec->add_rhs_permutation(d);
  for (int64_t d : rc) spec->add_rhs_permutation(d);
  for (int64_t d = 0; d < r.rank(); ++d) {
    if (!contains(rb, d) && !contains(rc, d))
      spec->add_rhs_permutation(d), n *= r.dim(static_cast<int>(d));
  }
  spec->set_batch(batch);
  spec->set_m(m);
  spec->set_n(n);
  spec->set_k(k);
}

Status BuildConvolution(const Instruction& instr, pb::ConvolutionSpec* spec) {
  DETRAIN_ASSIGN_OR_RETURN(ir::ConvDims cd,
                           ir::ParseDimLabels(instr.FindAttr(ir::Attr::kDimLabels)->s));
  spec->set_in_batch(cd.in_batch);
  spec->set_in_feature(cd.in_feature);
  Assign(spec->mutable_in_spatial(), cd.in_spatial);
  spec->set_k_in(cd.k_in);
  spec->set_k_out(cd.k_out);
  Assign(spec->mutable_k_spatial(), cd.k_spatial);
  spec->set_out_batch(cd.out_batch);
  spec->set_out_feature(cd.out_feature);
  Assign(spec->mutable_out_spatial(), cd.out_spatial);
  AddWindow(instr.FindAttr(ir::Attr::kWindow)->window, spec->mutable_window());
  return Status::Ok();
}

}  // namespace

bool IsElementwiseKernel(const Instruction& instr) {
  const ir::OpCategory c = ir::OpcodeCategory(instr.opcode);
  // The ops BuildKernelSpec builds with BuildElementwise: the unary, binary and elementwise
  // categories (compare, select, clamp, convert, bitcast-convert).
  if (c == ir::OpCategory::kUnary || c == ir::OpCategory::kBinary ||
      c == ir::OpCategory::kElementwise) {
    return true;
  }
  if (instr.opcode != Opcode::kFusion) return false;
  // BuildFusion's classification: a fusion holding a reduce is a fused reduction.
  const ir::Computation* called = instr.ComputationAttr(ir::Attr::kCalls);
  Result<std::vector<const Instruction*>> order = Reachable(*called, called->root());
  if (!order.ok()) return false;
  for (const Instruction* x : *order) {
    if (x->opcode == Opcode::kReduce) return false;
  }
  return true;
}

Status BuildKernelSpec(const Instruction& instr, const ir::CanonicalNames& names,
                       pb::Kernel* kernel) {
  kernel->set_implementation(Impl(ir::OpcodeName(instr.opcode)));
  switch (instr.opcode) {
    case Opcode::kParameter:
    case Opcode::kTuple:
    case Opcode::kGetTupleElement:
      kernel->set_alias(true);
      kernel->set_implementation("");
      return Status::Ok();
    case Opcode::kConstant:
      kernel->set_constant(instr.literal.bytes());
      return Status::Ok();
    case Opcode::kIota:
      kernel->set_iota(instr.IntAttr(ir::Attr::kIotaDimension));
      return Status::Ok();
#define OP(e, s, n, c, o, x, a, t)
#define UNARY(e, s, x, t) case Opcode::e:
#define BINARY(e, s, x, t) case Opcode::e:
#include "compiler/ir/ops.def"
#undef OP
    case Opcode::kCompare:
    case Opcode::kSelect:
    case Opcode::kClamp:
    case Opcode::kConvert:
    case Opcode::kBitcastConvert:
      return BuildElementwise(instr, kernel);
    case Opcode::kFusion:
      return BuildFusion(instr, kernel);
    case Opcode::kBroadcast:
      Assign(kernel->mutable_broadcast()->mutable_dimensions(),
             instr.IntsAttr(ir::Attr::kDimensions));
      return Status::Ok();
    case Opcode::kReshape:
      kernel->set_copy(true);
      return Status::Ok();
    case Opcode::kTranspose:
      Assign(kernel->mutable_transpose()->mutable_permutation(),
             instr.IntsAttr(ir::Attr::kDimensions));
      return Status::Ok();
    case Opcode::kSlice: {
      pb::SliceSpec* s = kernel->mutable_slice();
      for (const ir::SliceDim& d : instr.FindAttr(ir::Attr::kSlice)->slice) {
        s->add_starts(d.start);
        s->add_limits(d.limit);
        s->add_strides(d.stride);
      }
      return Status::Ok();
    }
    case Opcode::kConcatenate:
      kernel->set_concatenate(instr.IntsAttr(ir::Attr::kDimensions).at(0));
      return Status::Ok();
    case Opcode::kPad: {
      pb::PadSpec* p = kernel->mutable_pad();
      for (const ir::PadDim& d : instr.FindAttr(ir::Attr::kPadding)->padding) {
        p->add_lo(d.lo);
        p->add_hi(d.hi);
        p->add_interior(d.interior);
      }
      return Status::Ok();
    }
    case Opcode::kReverse:
      Assign(kernel->mutable_reverse()->mutable_dimensions(),
             instr.IntsAttr(ir::Attr::kDimensions));
      return Status::Ok();
    case Opcode::kDynamicSlice:
      Assign(kernel->mutable_dynamic_slice()->mutable_dimensions(),
             instr.IntsAttr(ir::Attr::kDynamicSliceSizes));
      return Status::Ok();
    case Opcode::kDynamicUpdateSlice:
      kernel->set_dynamic_update_slice(true);
      return Status::Ok();
    case Opcode::kGather: {
      pb::GatherSpec* g = kernel->mutable_gather();
      Assign(g->mutable_offset_dims(), instr.IntsAttr(ir::Attr::kOffsetDims));
      Assign(g->mutable_collapsed_slice_dims(), instr.IntsAttr(ir::Attr::kCollapsedSliceDims));
      Assign(g->mutable_start_index_map(), instr.IntsAttr(ir::Attr::kStartIndexMap));
      g->set_index_vector_dim(instr.IntAttr(ir::Attr::kIndexVectorDim));
      Assign(g->mutable_slice_sizes(), instr.IntsAttr(ir::Attr::kSliceSizes));
      return Status::Ok();
    }
    case Opcode::kScatter: {
      pb::ScatterSpec* s = kernel->mutable_scatter();
      Assign(s->mutable_update_window_dims(), instr.IntsAttr(ir::Attr::kUpdateWindowDims));
      Assign(s->mutable_inserted_window_dims(), instr.IntsAttr(ir::Attr::kInsertedWindowDims));
      Assign(s->mutable_scatter_dims_to_operand_dims(),
             instr.IntsAttr(ir::Attr::kScatterDimsToOperandDims));
      s->set_index_vector_dim(instr.IntAttr(ir::Attr::kIndexVectorDim));
      return BuildCombiner(instr, names, s->mutable_combiner());
    }
    case Opcode::kReduce: {
      pb::ReduceSpec* r = kernel->mutable_reduce();
      Assign(r->mutable_operand_dims(), instr.operands[0]->shape.dims());
      SortedDims(instr.IntsAttr(ir::Attr::kDimensions), r->mutable_dimensions());
      return BuildCombiner(instr, names, r->mutable_combiner());
    }
    case Opcode::kReduceWindow: {
      pb::ReduceWindowSpec* r = kernel->mutable_reduce_window();
      AddWindow(instr.FindAttr(ir::Attr::kWindow)->window, r->mutable_window());
      return BuildCombiner(instr, names, r->mutable_combiner());
    }
    case Opcode::kDot:
      BuildDot(instr, kernel->mutable_dot());
      return Status::Ok();
    case Opcode::kConvolution:
      return BuildConvolution(instr, kernel->mutable_convolution());
    case Opcode::kAllReduce: {
      pb::AllReduceSpec* a = kernel->mutable_all_reduce();
      if (const ir::AttrValue* groups = instr.FindAttr(ir::Attr::kReplicaGroups)) {
        for (const auto& group : groups->lists)
          Assign(a->add_replica_groups()->mutable_replicas(), group);
      }
      return BuildCombiner(instr, names, a->mutable_combiner());
    }
    case Opcode::kCustomCall:
      if (instr.FindAttr(ir::Attr::kCustomCallTarget)->s != "detrain.threefry2x32") {
        return Unimplemented("custom-call target '" +
                             instr.FindAttr(ir::Attr::kCustomCallTarget)->s + "'");
      }
      kernel->set_threefry(true);
      kernel->set_implementation(Impl("threefry2x32"));
      return Status::Ok();
    case Opcode::kCall:
      return Unimplemented("'call' reached the plan: run the inline pass first");
    case Opcode::kWhile:
      return Internal("'while' is planned by the builder (a WhileSpec of sub-plans)");
  }
  return Internal("unknown opcode");
}

}  // namespace detrain::plan
