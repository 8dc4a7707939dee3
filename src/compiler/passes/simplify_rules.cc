// See simplify_rules.h. Rules are small on purpose: one algebraic fact each.
#include "compiler/passes/simplify_rules.h"

#include "compiler/passes/rewrite.h"

namespace detrain::passes::simplify {
namespace {

using ir::ElementType;
using ir::Instruction;
using ir::Opcode;

bool IsF32(const Instruction& x) {
  return !x.shape.is_tuple() && x.shape.type() == ElementType::kF32;
}
bool IsInt(const Instruction& x) { return !x.shape.is_tuple() && ir::IsInteger(x.shape.type()); }

bool IsSplatOf(const Instruction& x, const std::string& bits) {
  auto s = SplatBits(x);
  return s && *s == bits;
}

bool IsOne(const Instruction& x) {
  if (IsF32(x)) return IsSplatOf(x, F32Bits(1.0f));
  return IsInt(x) && IsSplatOf(x, IntBits(x.shape.type(), 1));
}

// The additive identity that is exact for every x: -0.0 for f32 (x + -0 = x, also for x = +0
// and x = -0), 0 for integers.
bool IsAddIdentity(const Instruction& x) {
  if (IsF32(x)) return IsSplatOf(x, F32Bits(-0.0f));
  return IsInt(x) && IsSplatOf(x, IntBits(x.shape.type(), 0));
}

// x - z = x for every quiet x: +0.0 for f32 (x - (+0) = x + (-0)), 0 for integers.
bool IsSubIdentity(const Instruction& x) {
  if (IsF32(x)) return IsSplatOf(x, F32Bits(0.0f));
  return IsInt(x) && IsSplatOf(x, IntBits(x.shape.type(), 0));
}

bool IsIdentityPermutation(const std::vector<int64_t>& p) {
  for (size_t i = 0; i < p.size(); ++i) {
    if (p[i] != static_cast<int64_t>(i)) return false;
  }
  return true;
}

Instruction* Broadcast(Ctx& ctx, Instruction* x, const ir::Shape& shape,
                       std::vector<int64_t> dims) {
  ir::AttrMap attrs;
  attrs[ir::Attr::kDimensions].ints = std::move(dims);
  return AddInstruction(*ctx.computation, Opcode::kBroadcast, shape, {x}, std::move(attrs));
}

}  // namespace

bool IsQuiet(const Instruction& x) {
  if (!IsF32(x)) return true;
  switch (x.opcode) {
    case Opcode::kAdd:
    case Opcode::kSubtract:
    case Opcode::kMultiply:
    case Opcode::kDivide:
    case Opcode::kSqrt:
    case Opcode::kDot:
    case Opcode::kConvolution:
      return true;
    default:
      return false;
  }
}

Instruction* MulOne(Ctx&, Instruction* instr) {
  Instruction* a = instr->operands[0];
  Instruction* b = instr->operands[1];
  if (IsOne(*b) && IsQuiet(*a)) return a;
  if (IsOne(*a) && IsQuiet(*b)) return b;
  return nullptr;
}

Instruction* AddZero(Ctx&, Instruction* instr) {
  Instruction* a = instr->operands[0];
  Instruction* b = instr->operands[1];
  if (IsAddIdentity(*b) && IsQuiet(*a)) return a;
  if (IsAddIdentity(*a) && IsQuiet(*b)) return b;
  return nullptr;
}

Instruction* SubZero(Ctx&, Instruction* instr) {
  Instruction* a = instr->operands[0];
  return IsSubIdentity(*instr->operands[1]) && IsQuiet(*a) ? a : nullptr;
}

Instruction* DivOne(Ctx&, Instruction* instr) {
  Instruction* a = instr->operands[0];
  return IsOne(*instr->operands[1]) && IsQuiet(*a) ? a : nullptr;
}

Instruction* NegNeg(Ctx&, Instruction* instr) {
  Instruction* x = instr->operands[0];
  return x->opcode == Opcode::kNegate ? x->operands[0] : nullptr;
}

Instruction* SelectConst(Ctx&, Instruction* instr) {
  const Instruction& p = *instr->operands[0];
  if (IsSplatOf(p, std::string(1, '\1'))) return instr->operands[1];
  if (IsSplatOf(p, std::string(1, '\0'))) return instr->operands[2];
  return nullptr;
}

Instruction* SelectSame(Ctx&, Instruction* instr) {
  return instr->operands[1] == instr->operands[2] ? instr->operands[1] : nullptr;
}

Instruction* ConvertSame(Ctx&, Instruction* instr) {
  Instruction* x = instr->operands[0];
  return x->shape == instr->shape ? x : nullptr;
}

Instruction* TransposeId(Ctx&, Instruction* instr) {
  return IsIdentityPermutation(instr->IntsAttr(ir::Attr::kDimensions)) ? instr->operands[0]
                                                                       : nullptr;
}

Instruction* TransposeTranspose(Ctx& ctx, Instruction* instr) {
  Instruction* inner = instr->operands[0];
  if (inner->opcode != Opcode::kTranspose) return nullptr;
  const auto& p = inner->IntsAttr(ir::Attr::kDimensions);
  const auto& q = instr->IntsAttr(ir::Attr::kDimensions);
  std::vector<int64_t> composed(q.size());  // result dim i = inner dim q[i] = x dim p[q[i]]
  for (size_t i = 0; i < q.size(); ++i) composed[i] = p[static_cast<size_t>(q[i])];
  Instruction* x = inner->operands[0];
  if (IsIdentityPermutation(composed)) return x;
  ir::AttrMap attrs;
  attrs[ir::Attr::kDimensions].ints = std::move(composed);
  return AddInstruction(*ctx.computation, Opcode::kTranspose, instr->shape, {x}, std::move(attrs));
}

Instruction* MoveSplat(Ctx& ctx, Instruction* instr) {
  Instruction* x = instr->operands[0];
  if (x->opcode != Opcode::kBroadcast || x->operands[0]->opcode != Opcode::kConstant ||
      x->operands[0]->shape.rank() != 0) {
    return nullptr;
  }
  return Broadcast(ctx, x->operands[0], instr->shape, {});
}

Instruction* ReshapeSame(Ctx&, Instruction* instr) {
  Instruction* x = instr->operands[0];
  return x->shape == instr->shape ? x : nullptr;
}

Instruction* ReshapeReshape(Ctx& ctx, Instruction* instr) {
  Instruction* inner = instr->operands[0];
  if (inner->opcode != Opcode::kReshape) return nullptr;
  Instruction* x = inner->operands[0];
  if (x->shape == instr->shape) return x;
  return AddInstruction(*ctx.computation, Opcode::kReshape, instr->shape, {x});
}

Instruction* BroadcastId(Ctx&, Instruction* instr) {
  Instruction* x = instr->operands[0];
  return x->shape == instr->shape && IsIdentityPermutation(instr->IntsAttr(ir::Attr::kDimensions))
             ? x
             : nullptr;
}

Instruction* BroadcastBroadcast(Ctx& ctx, Instruction* instr) {
  Instruction* inner = instr->operands[0];
  if (inner->opcode != Opcode::kBroadcast) return nullptr;
  const auto& d1 = inner->IntsAttr(ir::Attr::kDimensions);
  const auto& d2 = instr->IntsAttr(ir::Attr::kDimensions);
  std::vector<int64_t> composed;  // x dim j -> inner dim d1[j] -> result dim d2[d1[j]]
  for (int64_t d : d1) composed.push_back(d2[static_cast<size_t>(d)]);
  return Broadcast(ctx, inner->operands[0], instr->shape, std::move(composed));
}

Instruction* SliceFull(Ctx&, Instruction* instr) {
  Instruction* x = instr->operands[0];
  const auto& slice = instr->FindAttr(ir::Attr::kSlice)->slice;
  for (size_t d = 0; d < slice.size(); ++d) {
    if (slice[d].start != 0 || slice[d].limit != x->shape.dims()[d] || slice[d].stride != 1)
      return nullptr;
  }
  return x;
}

Instruction* PadNone(Ctx&, Instruction* instr) {
  for (const ir::PadDim& p : instr->FindAttr(ir::Attr::kPadding)->padding) {
    if (p.lo != 0 || p.hi != 0 || p.interior != 0) return nullptr;
  }
  return instr->operands[0];
}

Instruction* ReverseTrivial(Ctx&, Instruction* instr) {
  Instruction* x = instr->operands[0];
  for (int64_t d : instr->IntsAttr(ir::Attr::kDimensions)) {
    if (x->shape.dims()[static_cast<size_t>(d)] > 1) return nullptr;
  }
  return x;
}

Instruction* ConcatOne(Ctx&, Instruction* instr) {
  return instr->operands.size() == 1 ? instr->operands[0] : nullptr;
}

Instruction* GteTuple(Ctx&, Instruction* instr) {
  Instruction* t = instr->operands[0];
  if (t->opcode != Opcode::kTuple) return nullptr;
  return t->operands.at(static_cast<size_t>(instr->IntAttr(ir::Attr::kIndex)));
}

Instruction* SplatConstant(Ctx& ctx, Instruction* instr) {
  if (instr->shape.is_tuple() || instr->shape.ElementCount() <= 1) return nullptr;
  auto bits = SplatBits(*instr);
  if (!bits) return nullptr;
  ir::Shape scalar_shape = ir::Shape::Scalar(instr->shape.type());
  ir::Instruction* scalar = AddInstruction(*ctx.computation, Opcode::kConstant, scalar_shape, {});
  scalar->literal = ir::Literal(scalar_shape);
  scalar->literal.mutable_bytes() = *bits;
  return Broadcast(ctx, scalar, instr->shape, {});
}

}  // namespace detrain::passes::simplify
