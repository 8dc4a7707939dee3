// See builder.h.
#include "compiler/ir/builder.h"

#include "compiler/ir/shape_inference.h"

namespace detrain::ir {
namespace {

AttrValue Ints(std::vector<int64_t> v) {
  AttrValue a;
  a.ints = std::move(v);
  return a;
}
AttrValue Int(int64_t i) {
  AttrValue a;
  a.i = i;
  return a;
}
AttrValue Comp(const Computation* c) {
  AttrValue a;
  a.computation = c;
  return a;
}

}  // namespace

Builder::Builder(Module* module, std::string name)
    : computation_(module->AddComputation(std::make_unique<Computation>(std::move(name)))) {}

Instruction* Builder::Emit(Opcode op, std::vector<Instruction*> operands, AttrMap attrs,
                           std::optional<Shape> shape) {
  auto instr = std::make_unique<Instruction>();
  instr->opcode = op;
  instr->operands = std::move(operands);
  instr->attrs = std::move(attrs);
  if (shape) instr->shape = *shape;
  auto inferred = InferShape(*instr);
  if (inferred.ok()) {
    instr->shape = *inferred;
  } else if (status_.ok()) {
    status_ = InvalidArgument("building " + std::string(OpcodeName(op)) + " in '" +
                              computation_->name() + "': " + inferred.status().message());
  }
  return computation_->AddInstruction(std::move(instr));
}

Instruction* Builder::Parameter(int64_t number, const Shape& shape, std::string name) {
  Instruction* p = Emit(Opcode::kParameter, {}, {}, shape);
  p->parameter_number = number;
  p->name = std::move(name);
  return p;
}

Instruction* Builder::Constant(Literal value) {
  auto instr = std::make_unique<Instruction>();
  instr->opcode = Opcode::kConstant;
  instr->shape = value.shape();
  instr->literal = std::move(value);
  return computation_->AddInstruction(std::move(instr));
}

Instruction* Builder::ConstantF32(float value) {
  return Constant(Literal::Scalar<float>(ElementType::kF32, value));
}

Instruction* Builder::Iota(const Shape& shape, int64_t dimension) {
  return Emit(Opcode::kIota, {}, {{Attr::kIotaDimension, Int(dimension)}}, shape);
}

Instruction* Builder::Compare(Instruction* a, Instruction* b, Direction direction) {
  AttrValue d;
  d.direction = direction;
  return Emit(Opcode::kCompare, {a, b}, {{Attr::kDirection, d}});
}

Instruction* Builder::Select(Instruction* p, Instruction* t, Instruction* f) {
  return Emit(Opcode::kSelect, {p, t, f});
}

Instruction* Builder::Clamp(Instruction* lo, Instruction* x, Instruction* hi) {
  return Emit(Opcode::kClamp, {lo, x, hi});
}

Instruction* Builder::Convert(Instruction* x, ElementType type) {
  return Emit(Opcode::kConvert, {x}, {}, Shape(type, x->shape.dims()));
}

Instruction* Builder::BitcastConvert(Instruction* x, ElementType type) {
  return Emit(Opcode::kBitcastConvert, {x}, {}, Shape(type, x->shape.dims()));
}

Instruction* Builder::Broadcast(Instruction* x, const Shape& shape, std::vector<int64_t> dims) {
  return Emit(Opcode::kBroadcast, {x}, {{Attr::kDimensions, Ints(std::move(dims))}}, shape);
}

Instruction* Builder::Reshape(Instruction* x, std::vector<int64_t> dims) {
  return Emit(Opcode::kReshape, {x}, {}, Shape(x->shape.type(), std::move(dims)));
}

Instruction* Builder::Transpose(Instruction* x, std::vector<int64_t> perm) {
  return Emit(Opcode::kTranspose, {x}, {{Attr::kDimensions, Ints(std::move(perm))}});
}

Instruction* Builder::Slice(Instruction* x, std::vector<SliceDim> slice) {
  AttrValue v;
  v.slice = std::move(slice);
  return Emit(Opcode::kSlice, {x}, {{Attr::kSlice, v}});
}

Instruction* Builder::Concatenate(std::vector<Instruction*> xs, int64_t dimension) {
  return Emit(Opcode::kConcatenate, std::move(xs), {{Attr::kDimensions, Ints({dimension})}});
}

Instruction* Builder::Pad(Instruction* x, Instruction* value, std::vector<PadDim> padding) {
  AttrValue v;
  v.padding = std::move(padding);
  return Emit(Opcode::kPad, {x, value}, {{Attr::kPadding, v}});
}

Instruction* Builder::Reverse(Instruction* x, std::vector<int64_t> dims) {
  return Emit(Opcode::kReverse, {x}, {{Attr::kDimensions, Ints(std::move(dims))}});
}

Instruction* Builder::DynamicSlice(Instruction* x, std::vector<Instruction*> starts,
                                   std::vector<int64_t> sizes) {
  starts.insert(starts.begin(), x);
  return Emit(Opcode::kDynamicSlice, std::move(starts),
              {{Attr::kDynamicSliceSizes, Ints(std::move(sizes))}});
}

Instruction* Builder::DynamicUpdateSlice(Instruction* x, Instruction* update,
                                         std::vector<Instruction*> starts) {
  starts.insert(starts.begin(), {x, update});
  return Emit(Opcode::kDynamicUpdateSlice, std::move(starts));
}

Instruction* Builder::Gather(Instruction* x, Instruction* indices, const GatherDims& d) {
  return Emit(Opcode::kGather, {x, indices},
              {{Attr::kOffsetDims, Ints(d.offset_dims)},
               {Attr::kCollapsedSliceDims, Ints(d.collapsed_slice_dims)},
               {Attr::kStartIndexMap, Ints(d.start_index_map)},
               {Attr::kSliceSizes, Ints(d.slice_sizes)},
               {Attr::kIndexVectorDim, Int(d.index_vector_dim)}});
}

Instruction* Builder::Scatter(Instruction* x, Instruction* indices, Instruction* updates,
                              const ScatterDims& d, const Computation* combiner) {
  return Emit(Opcode::kScatter, {x, indices, updates},
              {{Attr::kUpdateWindowDims, Ints(d.update_window_dims)},
               {Attr::kInsertedWindowDims, Ints(d.inserted_window_dims)},
               {Attr::kScatterDimsToOperandDims, Ints(d.scatter_dims_to_operand_dims)},
               {Attr::kIndexVectorDim, Int(d.index_vector_dim)},
               {Attr::kToApply, Comp(combiner)}});
}

Instruction* Builder::Reduce(Instruction* x, Instruction* init, std::vector<int64_t> dims,
                             const Computation* combiner) {
  return Emit(Opcode::kReduce, {x, init},
              {{Attr::kDimensions, Ints(std::move(dims))}, {Attr::kToApply, Comp(combiner)}});
}

Instruction* Builder::ReduceWindow(Instruction* x, Instruction* init, std::vector<WindowDim> window,
                                   const Computation* combiner) {
  AttrValue w;
  w.window = std::move(window);
  return Emit(Opcode::kReduceWindow, {x, init},
              {{Attr::kWindow, w}, {Attr::kToApply, Comp(combiner)}});
}

Instruction* Builder::Dot(Instruction* a, Instruction* b, const DotDims& d) {
  return Emit(Opcode::kDot, {a, b},
              {{Attr::kLhsBatchDims, Ints(d.lhs_batch)},
               {Attr::kRhsBatchDims, Ints(d.rhs_batch)},
               {Attr::kLhsContractingDims, Ints(d.lhs_contracting)},
               {Attr::kRhsContractingDims, Ints(d.rhs_contracting)}});
}

Instruction* Builder::Convolution(Instruction* x, Instruction* kernel, std::string dim_labels,
                                  std::vector<WindowDim> window) {
  AttrValue labels, w;
  labels.s = std::move(dim_labels);
  w.window = std::move(window);
  return Emit(Opcode::kConvolution, {x, kernel}, {{Attr::kDimLabels, labels}, {Attr::kWindow, w}});
}

Instruction* Builder::AllReduce(Instruction* x, const Computation* combiner,
                                std::vector<std::vector<int64_t>> groups) {
  AttrValue g;
  g.lists = std::move(groups);
  return Emit(Opcode::kAllReduce, {x},
              {{Attr::kToApply, Comp(combiner)}, {Attr::kReplicaGroups, g}});
}

Instruction* Builder::Tuple(std::vector<Instruction*> xs) {
  return Emit(Opcode::kTuple, std::move(xs));
}

Instruction* Builder::GetTupleElement(Instruction* t, int64_t index) {
  return Emit(Opcode::kGetTupleElement, {t}, {{Attr::kIndex, Int(index)}});
}

Instruction* Builder::Call(const Computation* computation, std::vector<Instruction*> args) {
  return Emit(Opcode::kCall, std::move(args), {{Attr::kToApply, Comp(computation)}});
}

Instruction* Builder::While(Instruction* init, const Computation* condition,
                            const Computation* body) {
  return Emit(Opcode::kWhile, {init},
              {{Attr::kBody, Comp(body)}, {Attr::kCondition, Comp(condition)}});
}

Instruction* Builder::Threefry2x32(Instruction* k0, Instruction* k1, Instruction* x0,
                                   Instruction* x1) {
  AttrValue target;
  target.s = std::string(kThreefryTarget);
  return Emit(Opcode::kCustomCall, {k0, k1, x0, x1}, {{Attr::kCustomCallTarget, target}});
}

Result<Computation*> Builder::Build(Instruction* root) {
  if (!status_.ok()) return status_;
  computation_->set_root(root);
  return computation_;
}

Computation* Builder::ScalarCombiner(Module* module, std::string name, Opcode op,
                                     ElementType type) {
  Builder b(module, std::move(name));
  Instruction* x = b.Parameter(0, Shape::Scalar(type));
  Instruction* y = b.Parameter(1, Shape::Scalar(type));
  b.computation_->set_root(b.Binary(op, x, y));
  return b.computation_;
}

}  // namespace detrain::ir
