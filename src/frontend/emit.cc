// See emit.h.
#include "frontend/emit.h"

#include <cmath>
#include <limits>

namespace detrain::frontend {

using ir::ElementType;
using ir::Instruction;
using ir::Opcode;
using ir::Shape;

ir::Instruction* Emitter::ScalarF32(float value) { return b_->ConstantF32(value); }

ir::Instruction* Emitter::ScalarU32(uint32_t value) {
  return b_->Constant(ir::Literal::Scalar<uint32_t>(ElementType::kU32, value));
}

ir::Instruction* Emitter::Full(const Shape& shape, double value) {
  ir::Literal lit = ir::DispatchElementType(shape.type(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    return ir::Literal::Scalar<T>(shape.type(), static_cast<T>(value));
  });
  Instruction* c = b_->Constant(std::move(lit));
  if (shape.rank() == 0) return c;
  return b_->Broadcast(c, shape, {});
}

ir::Instruction* Emitter::BroadcastInDims(Instruction* x, const Shape& shape,
                                          std::vector<int64_t> dims) {
  Shape out(x->shape.type(), shape.dims());
  if (x->shape == out) return x;
  return b_->Broadcast(x, out, std::move(dims));
}

ir::Instruction* Emitter::BroadcastTo(Instruction* x, const Shape& shape) {
  Shape out(x->shape.type(), shape.dims());
  if (x->shape == out) return x;
  const auto& xd = x->shape.dims();
  int64_t r = static_cast<int64_t>(xd.size()), rank = out.rank();
  std::vector<int64_t> kept_dims, kept_sizes;
  for (int64_t i = 0; i < r; ++i) {
    int64_t j = rank - r + i;
    if (xd[static_cast<size_t>(i)] == out.dim(static_cast<int>(j))) {
      kept_dims.push_back(j);
      kept_sizes.push_back(xd[static_cast<size_t>(i)]);
    }  // otherwise a size-1 dimension that stretches: dropped before the broadcast
  }
  if (static_cast<int64_t>(kept_sizes.size()) != r) x = b_->Reshape(x, kept_sizes);
  return b_->Broadcast(x, out, kept_dims);
}

const ir::Computation* Emitter::Combiner(Opcode op, ElementType type) {
  auto key = std::make_pair(static_cast<int>(op), static_cast<int>(type));
  auto it = combiners_.find(key);
  if (it != combiners_.end()) return it->second;
  std::string name = std::string(ir::OpcodeName(op)) + "_" + std::string(ir::ElementTypeName(type));
  const ir::Computation* c = ir::Builder::ScalarCombiner(module_, name, op, type);
  combiners_[key] = c;
  return c;
}

ir::Instruction* Emitter::Reduce(Instruction* x, Opcode op, std::vector<int64_t> dims) {
  ElementType t = x->shape.type();
  double init = 0;
  if (op == Opcode::kMaximum) init = -std::numeric_limits<double>::infinity();
  if (op == Opcode::kMinimum) init = std::numeric_limits<double>::infinity();
  Instruction* init_value;
  if (t == ElementType::kF32) {
    init_value = b_->ConstantF32(static_cast<float>(init));
  } else if (op == Opcode::kMaximum) {
    init_value = Full(Shape::Scalar(t), t == ElementType::kS32 ? -2147483648.0 : 0.0);
  } else if (op == Opcode::kMinimum) {
    init_value = Full(Shape::Scalar(t), t == ElementType::kS32 ? 2147483647.0 : 4294967295.0);
  } else {
    init_value = Full(Shape::Scalar(t), 0);
  }
  return b_->Reduce(x, init_value, std::move(dims), Combiner(op, t));
}

ir::Instruction* Emitter::ReduceMean(Instruction* x, std::vector<int64_t> dims) {
  int64_t count = 1;
  for (int64_t d : dims) count *= x->shape.dim(static_cast<int>(d));
  Instruction* sum = ReduceSum(x, std::move(dims));
  return b_->Binary(Opcode::kDivide, sum, Full(sum->shape, static_cast<double>(count)));
}

ir::Instruction* Emitter::Accuracy(Instruction* z, Instruction* labels) {
  int64_t k = z->shape.rank() - 1;
  std::vector<int64_t> keep;
  for (int64_t d = 0; d < k; ++d) keep.push_back(d);
  Shape ids(ElementType::kS32, z->shape.dims());
  Instruction* max = BroadcastInDims(Reduce(z, Opcode::kMaximum, {k}), z->shape, keep);
  Instruction* is_max = b_->Compare(z, max, ir::Direction::kEq);
  Instruction* idx = b_->Select(is_max, b_->Iota(ids, k),
                                Full(ids, static_cast<double>(z->shape.dim(static_cast<int>(k)))));
  Instruction* argmax = Reduce(idx, Opcode::kMinimum, {k});
  Instruction* hit =
      b_->Convert(b_->Compare(argmax, labels, ir::Direction::kEq), ElementType::kF32);
  std::vector<int64_t> all;
  for (int64_t d = 0; d < hit->shape.rank(); ++d) all.push_back(d);
  return ReduceMean(hit, all);
}

namespace {

Instruction* Word(ir::Builder& b, Instruction* key, int64_t i) {
  return b.Reshape(b.Slice(key, {{i, i + 1, 1}}), {});
}

}  // namespace

ir::Instruction* Emitter::FoldIn(Instruction* key, Instruction* data) {
  Instruction* t = b_->Threefry2x32(Word(*b_, key, 0), Word(*b_, key, 1), ScalarU32(0), data);
  return b_->Concatenate(
      {b_->Reshape(b_->GetTupleElement(t, 0), {1}), b_->Reshape(b_->GetTupleElement(t, 1), {1})},
      0);
}

ir::Instruction* Emitter::RandomBits(Instruction* key, const std::vector<int64_t>& dims,
                                     bool partitionable) {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  Shape u32 = Shape(ElementType::kU32, {n});
  if (partitionable) {
    // Counter i as the 64-bit pair (hi, lo) = (0, i) for i < 2^32; bits = y0 ^ y1.
    Instruction* lo = b_->Iota(u32, 0);
    Instruction* hi = Full(u32, 0);
    Instruction* t = b_->Threefry2x32(BroadcastInDims(Word(*b_, key, 0), u32, {}),
                                      BroadcastInDims(Word(*b_, key, 1), u32, {}), hi, lo);
    Instruction* bits =
        b_->Binary(Opcode::kXor, b_->GetTupleElement(t, 0), b_->GetTupleElement(t, 1));
    return b_->Reshape(bits, dims);
  }
  // Original mode: threefry_2x32 over iota(n) with JAX's pairing (c[j], c[j + n'/2]).
  int64_t padded = n + (n % 2);
  int64_t half = padded / 2;
  Instruction* counts = b_->Iota(Shape(ElementType::kU32, {padded}), 0);
  Shape h(ElementType::kU32, {half});
  Instruction* t = b_->Threefry2x32(
      BroadcastInDims(Word(*b_, key, 0), h, {}), BroadcastInDims(Word(*b_, key, 1), h, {}),
      b_->Slice(counts, {{0, half, 1}}), b_->Slice(counts, {{half, padded, 1}}));
  Instruction* all = b_->Concatenate({b_->GetTupleElement(t, 0), b_->GetTupleElement(t, 1)}, 0);
  if (padded != n) all = b_->Slice(all, {{0, n, 1}});
  return b_->Reshape(all, dims);
}

ir::Instruction* Emitter::Uniform01(Instruction* key, const std::vector<int64_t>& dims,
                                    bool partitionable) {
  // JAX: float_bits = (bits >> 9) | bits(1.0f); u = bitcast(float_bits) - 1.0f. The remaining
  // steps of jax.random.uniform for [0, 1) (u * 1 + 0, max(0, .)) are exact identities here.
  Instruction* bits = RandomBits(key, dims, partitionable);
  Shape s(ElementType::kU32, dims);
  Instruction* mant = b_->Binary(Opcode::kShiftRightLogical, bits, Full(s, 9));
  Instruction* fbits = b_->Binary(Opcode::kOr, mant, Full(s, 0x3f800000u));
  Instruction* one_to_two = b_->BitcastConvert(fbits, ElementType::kF32);
  return b_->Binary(Opcode::kSubtract, one_to_two, Full(Shape(ElementType::kF32, dims), 1.0));
}

}  // namespace detrain::frontend
