// See emitter.h.
#include "compiler/xla_import/emitter.h"

namespace detrain::xla_import {

Instruction* Emitter::Add(Opcode opcode, Shape shape, std::vector<Instruction*> operands) {
  return AddBeside(comp_, like_, opcode, std::move(shape), std::move(operands),
                   suffix_ + std::to_string(serial_++));
}

Instruction* Emitter::Scalar(ElementType type, int32_t v) {
  Instruction* c = Add(Opcode::kConstant, Shape(type, {}), {});
  c->literal = type == ElementType::kPred ? Literal::Scalar<uint8_t>(type, v != 0 ? 1 : 0)
                                          : Literal::Scalar<int32_t>(type, v);
  return c;
}

Instruction* Emitter::Zero(ElementType type) {
  Instruction* c = Add(Opcode::kConstant, Shape(type, {}), {});
  c->literal = Literal(Shape(type, {}));  // all bits clear
  return c;
}

Instruction* Emitter::Broadcast(Instruction* scalar, const std::vector<int64_t>& dims) {
  if (dims.empty()) return scalar;
  Instruction* b = Add(Opcode::kBroadcast, Shape(scalar->shape.type(), dims), {scalar});
  b->attrs[Attr::kDimensions].ints = {};
  return b;
}

Instruction* Emitter::Compare(Instruction* a, Instruction* b, Direction d) {
  Instruction* c = Add(Opcode::kCompare, Shape(ElementType::kPred, a->shape.dims()), {a, b});
  c->attrs[Attr::kDirection].direction = d;
  return c;
}

Instruction* Emitter::Reshape(Instruction* x, std::vector<int64_t> dims) {
  if (x->shape.dims() == dims) return x;
  return Add(Opcode::kReshape, Shape(x->shape.type(), std::move(dims)), {x});
}

Instruction* Emitter::Transpose(Instruction* x, const std::vector<int64_t>& perm) {
  bool identity = true;
  for (size_t i = 0; i < perm.size(); ++i) identity = identity && perm[i] == int64_t(i);
  if (identity) return x;
  std::vector<int64_t> dims;
  for (int64_t p : perm) dims.push_back(x->shape.dims()[static_cast<size_t>(p)]);
  Instruction* t = Add(Opcode::kTranspose, Shape(x->shape.type(), dims), {x});
  t->attrs[Attr::kDimensions].ints = perm;
  return t;
}

Instruction* Emitter::Slice(Instruction* x, size_t dim, int64_t start, int64_t limit,
                            int64_t stride) {
  std::vector<int64_t> dims = x->shape.dims();
  std::vector<SliceDim> s;
  for (int64_t d : dims) s.push_back({0, d, 1});
  s[dim] = {start, limit, stride};
  dims[dim] = (limit - start + stride - 1) / stride;
  Instruction* r = Add(Opcode::kSlice, Shape(x->shape.type(), dims), {x});
  r->attrs[Attr::kSlice].slice = s;
  return r;
}

Instruction* Emitter::WindowTap(Instruction* x, const std::vector<WindowDim>& window,
                                const std::vector<int64_t>& windows, int64_t k) {
  const size_t rank = window.size();
  std::vector<int64_t> at(rank);
  for (size_t d = rank; d-- > 0;) {
    at[d] = k % window[d].size;
    k /= window[d].size;
  }
  Instruction* s = Add(Opcode::kSlice, Shape(x->shape.type(), windows), {x});
  std::vector<SliceDim>& dims = s->attrs[Attr::kSlice].slice;
  for (size_t d = 0; d < rank; ++d) {
    const int64_t stride = window[d].stride;
    dims.push_back({at[d], at[d] + (windows[d] - 1) * stride + 1, stride});
  }
  return s;
}

}  // namespace detrain::xla_import
