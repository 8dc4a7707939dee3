// See shape_inference.h. Elementwise, data movement and structural ops; reductions, dot,
// convolution, gather and scatter are in shape_inference_reduce.cc.
#include "compiler/ir/shape_inference.h"

#include <algorithm>

#include "base/checked.h"
#include "compiler/ir/shape_inference_internal.h"

namespace detrain::ir {
namespace shape_internal {

Result<Shape> ArrayOperand(const Instruction& instr, size_t i) {
  if (i >= instr.operands.size()) return Fail("missing operand " + std::to_string(i));
  const Shape& s = instr.operands[i]->shape;
  if (s.is_tuple())
    return Fail("operand " + std::to_string(i) + " must be an array, got tuple " + s.ToString());
  return s;
}

Status CheckDimList(const std::vector<int64_t>& dims, int64_t rank, std::string_view what) {
  std::vector<bool> seen(static_cast<size_t>(std::max<int64_t>(rank, 0)), false);
  for (int64_t d : dims) {
    if (d < 0 || d >= rank) {
      return Fail(std::string(what) + " " + ShortIntList(dims) + " has dimension " +
                  std::to_string(d) + " outside [0, " + std::to_string(rank) + ")");
    }
    if (seen[static_cast<size_t>(d)]) {
      return Fail(std::string(what) + " " + ShortIntList(dims) + " repeats dimension " +
                  std::to_string(d));
    }
    seen[static_cast<size_t>(d)] = true;
  }
  return Status::Ok();
}

Status CheckCombiner(const Computation* c, ElementType type, std::string_view op) {
  std::string want = std::string(ElementTypeName(type)) + "[]";
  if (c == nullptr) return Fail(std::string(op) + " needs a to_apply computation");
  auto params = c->Parameters();
  Shape scalar = Shape::Scalar(type);
  bool ok = params.size() == 2 && params[0]->shape == scalar && params[1]->shape == scalar &&
            c->root() != nullptr && c->root()->shape == scalar;
  if (!ok) {
    return Fail("to_apply computation '" + c->name() + "' of " + std::string(op) + " must take (" +
                want + ", " + want + ") and return " + want);
  }
  return Status::Ok();
}

Result<int64_t> Add(int64_t a, int64_t b, std::string_view what) {
  int64_t out = 0;
  if (!CheckedAdd(a, b, &out)) return Fail(std::string(what) + " overflows int64");
  return out;
}

Result<int64_t> Mul(int64_t a, int64_t b, std::string_view what) {
  int64_t out = 0;
  if (!CheckedMul(a, b, &out)) return Fail(std::string(what) + " overflows int64");
  return out;
}

std::string ShortIntList(const std::vector<int64_t>& values) {
  if (values.size() <= 16) return IntListToString(values);
  std::vector<int64_t> head(values.begin(), values.begin() + 16);
  std::string s = IntListToString(head);
  s.pop_back();
  return s + ",... (" + std::to_string(values.size()) + " values)}";
}

Result<int64_t> WindowedSize(int64_t input, const WindowDim& w) {
  const char* what = "the padded, dilated window dimension";
  int64_t dilated_input = 0;
  if (input > 0) {
    DETRAIN_ASSIGN_OR_RETURN(int64_t scaled, Mul(input - 1, w.lhs_dilate, what));
    DETRAIN_ASSIGN_OR_RETURN(dilated_input, Add(scaled, 1, what));
  }
  DETRAIN_ASSIGN_OR_RETURN(int64_t padded, Add(dilated_input, w.pad_lo, what));
  DETRAIN_ASSIGN_OR_RETURN(padded, Add(padded, w.pad_hi, what));
  DETRAIN_ASSIGN_OR_RETURN(int64_t window, Mul(w.size - 1, w.rhs_dilate, what));
  DETRAIN_ASSIGN_OR_RETURN(window, Add(window, 1, what));
  if (padded < window) return 0;
  DETRAIN_ASSIGN_OR_RETURN(int64_t span, Add(padded, -window, what));  // window may be <= 0
  return span / w.stride + 1;
}

}  // namespace shape_internal

namespace {

using namespace shape_internal;

std::string OpName(const Instruction& instr) { return std::string(OpcodeName(instr.opcode)); }

// The types column of ops.def, enforced: "needs a numeric operand, got pred" (one operand),
// "needs integer operands, got f32" (several).
Status CheckOperandTypes(Opcode op, ElementType t) {
  if (OpcodeAcceptsType(op, t)) return Status::Ok();
  std::string_view types = OpcodeOperandTypes(op);
  std::string what = types == "f"     ? "floating-point"
                     : types == "suf" ? "numeric"
                     : types == "bsu" ? "pred or integer"
                     : types == "su"  ? "integer"
                                      : "[" + std::string(types) + "]";
  std::string got = std::string(ElementTypeName(t));
  if (OpcodeArity(op) == 1) return Fail("needs a " + what + " operand, got " + got);
  return Fail("needs " + what + " operands, got " + got);
}

Result<Shape> InferElementwise(const Instruction& instr) {
  DETRAIN_ASSIGN_OR_RETURN(Shape a, ArrayOperand(instr, 0));
  for (size_t i = 1; i < instr.operands.size(); ++i) {
    DETRAIN_ASSIGN_OR_RETURN(Shape b, ArrayOperand(instr, i));
    if (!(a == b)) {
      return Fail("operands of " + OpName(instr) + " must have the same shape, got " +
                  a.ToString() + " and " + b.ToString());
    }
  }
  DETRAIN_RETURN_IF_ERROR(CheckOperandTypes(instr.opcode, a.type()));
  return a;
}

Result<Shape> InferSelectOrClamp(const Instruction& instr) {
  DETRAIN_ASSIGN_OR_RETURN(Shape a, ArrayOperand(instr, 0));
  DETRAIN_ASSIGN_OR_RETURN(Shape b, ArrayOperand(instr, 1));
  DETRAIN_ASSIGN_OR_RETURN(Shape c, ArrayOperand(instr, 2));
  if (instr.opcode == Opcode::kSelect) {
    if (a.type() != ElementType::kPred || a.dims() != b.dims() || !(b == c)) {
      return Fail("select needs pred[d] and two operands of shape T[d], got " + a.ToString() +
                  ", " + b.ToString() + ", " + c.ToString());
    }
    return b;
  }
  auto fits = [&](const Shape& s) { return s == b || s == Shape::Scalar(b.type()); };
  if (!fits(a) || !fits(c)) {
    return Fail("clamp(min, x, max) needs min and max of x's shape or scalars of its type, got " +
                a.ToString() + ", " + b.ToString() + ", " + c.ToString());
  }
  return b;
}

Result<Shape> InferConvert(const Instruction& instr) {
  DETRAIN_ASSIGN_OR_RETURN(Shape a, ArrayOperand(instr, 0));
  if (instr.shape.is_tuple() || instr.shape.dims() != a.dims()) {
    return Fail(OpName(instr) + " keeps the dimensions: operand " + a.ToString() + ", result " +
                instr.shape.ToString());
  }
  if (instr.opcode == Opcode::kBitcastConvert &&
      ElementTypeByteSize(a.type()) != ElementTypeByteSize(instr.shape.type())) {
    return Fail("bitcast-convert needs element types of the same size, got " +
                std::string(ElementTypeName(a.type())) + " and " +
                std::string(ElementTypeName(instr.shape.type())));
  }
  return instr.shape;
}

Result<Shape> InferBroadcast(const Instruction& instr) {
  DETRAIN_ASSIGN_OR_RETURN(Shape a, ArrayOperand(instr, 0));
  const Shape& out = instr.shape;
  const auto& dims = instr.IntsAttr(Attr::kDimensions);
  if (out.is_tuple() || out.type() != a.type()) return Fail("broadcast keeps the element type");
  if (static_cast<int>(dims.size()) != a.rank()) {
    return Fail("broadcast dimensions " + ShortIntList(dims) +
                " must name one output dimension per operand dimension (" +
                std::to_string(a.rank()) + ")");
  }
  DETRAIN_RETURN_IF_ERROR(CheckDimList(dims, out.rank(), "broadcast dimensions"));
  for (int i = 0; i < a.rank(); ++i) {
    if (a.dim(i) != out.dim(static_cast<int>(dims[static_cast<size_t>(i)]))) {
      return Fail("broadcast operand dimension " + std::to_string(i) + " (size " +
                  std::to_string(a.dim(i)) + ") must equal result dimension " +
                  std::to_string(dims[static_cast<size_t>(i)]));
    }
  }
  return out;
}

Result<Shape> InferReshapeOrIota(const Instruction& instr) {
  const Shape& out = instr.shape;
  if (out.is_tuple()) return Fail(OpName(instr) + " produces an array");
  if (instr.opcode == Opcode::kIota) {
    int64_t d = instr.IntAttr(Attr::kIotaDimension);
    if (d < 0 || d >= out.rank())
      return Fail("iota_dimension " + std::to_string(d) + " is outside the result's rank");
    if (!OpcodeAcceptsType(Opcode::kIota, out.type()))
      return Fail("iota needs a numeric element type");
    return out;
  }
  DETRAIN_ASSIGN_OR_RETURN(Shape a, ArrayOperand(instr, 0));
  DETRAIN_ASSIGN_OR_RETURN(int64_t in_count, a.CheckedElementCount());
  DETRAIN_ASSIGN_OR_RETURN(int64_t out_count, out.CheckedElementCount());
  if (a.type() != out.type() || in_count != out_count) {
    return Fail("reshape keeps the element type and count: operand " + a.ToString() + ", result " +
                out.ToString());
  }
  return out;
}

Result<Shape> InferTransposeOrReverse(const Instruction& instr) {
  DETRAIN_ASSIGN_OR_RETURN(Shape a, ArrayOperand(instr, 0));
  const auto& dims = instr.IntsAttr(Attr::kDimensions);
  DETRAIN_RETURN_IF_ERROR(CheckDimList(dims, a.rank(), OpName(instr) + " dimensions"));
  if (instr.opcode == Opcode::kReverse) return a;
  if (static_cast<int>(dims.size()) != a.rank())
    return Fail("transpose dimensions must be a permutation of the operand's dimensions");
  std::vector<int64_t> out;
  for (int64_t d : dims) out.push_back(a.dim(static_cast<int>(d)));
  return Shape(a.type(), out);
}

Result<Shape> InferSlice(const Instruction& instr) {
  DETRAIN_ASSIGN_OR_RETURN(Shape a, ArrayOperand(instr, 0));
  const AttrValue* v = instr.FindAttr(Attr::kSlice);
  if (!v || static_cast<int>(v->slice.size()) != a.rank())
    return Fail("slice needs one [start:limit:stride] per operand dimension");
  std::vector<int64_t> out;
  for (int i = 0; i < a.rank(); ++i) {
    const SliceDim& s = v->slice[static_cast<size_t>(i)];
    if (s.start < 0 || s.start > s.limit || s.limit > a.dim(i) || s.stride < 1) {
      return Fail("slice dimension " + std::to_string(i) +
                  " needs 0 <= start <= limit <= " + std::to_string(a.dim(i)) + " and stride >= 1");
    }
    // ceil((limit - start) / stride), exact for any stride: 0 <= limit - start <= dim.
    out.push_back(s.limit == s.start ? 0 : (s.limit - s.start - 1) / s.stride + 1);
  }
  return Shape(a.type(), out);
}

Result<Shape> InferConcatenate(const Instruction& instr) {
  if (instr.operands.empty()) return Fail("concatenate needs at least one operand");
  DETRAIN_ASSIGN_OR_RETURN(Shape a, ArrayOperand(instr, 0));
  const auto& dims = instr.IntsAttr(Attr::kDimensions);
  if (dims.size() != 1) return Fail("concatenate needs exactly one dimension in dimensions={d}");
  DETRAIN_RETURN_IF_ERROR(CheckDimList(dims, a.rank(), "concatenate dimensions"));
  std::vector<int64_t> out = a.dims();
  int cd = static_cast<int>(dims[0]);
  for (size_t i = 1; i < instr.operands.size(); ++i) {
    DETRAIN_ASSIGN_OR_RETURN(Shape b, ArrayOperand(instr, i));
    bool ok = b.type() == a.type() && b.rank() == a.rank();
    for (int d = 0; ok && d < a.rank(); ++d) ok = d == cd || b.dim(d) == a.dim(d);
    if (!ok)
      return Fail("concatenate operands must agree except in dimension " + std::to_string(cd) +
                  ", got " + a.ToString() + " and " + b.ToString());
    DETRAIN_ASSIGN_OR_RETURN(out[static_cast<size_t>(cd)],
                             Add(out[static_cast<size_t>(cd)], b.dim(cd),
                                 "concatenate dimension " + std::to_string(cd)));
  }
  return Shape(a.type(), out);
}

Result<Shape> InferPad(const Instruction& instr) {
  DETRAIN_ASSIGN_OR_RETURN(Shape a, ArrayOperand(instr, 0));
  DETRAIN_ASSIGN_OR_RETURN(Shape v, ArrayOperand(instr, 1));
  if (!(v == Shape::Scalar(a.type())))
    return Fail("pad's padding value must be a scalar of the operand's type");
  const AttrValue* p = instr.FindAttr(Attr::kPadding);
  if (!p || static_cast<int>(p->padding.size()) != a.rank())
    return Fail("pad needs one lo_hi[_interior] per operand dimension");
  std::vector<int64_t> out;
  for (int i = 0; i < a.rank(); ++i) {
    const PadDim& d = p->padding[static_cast<size_t>(i)];
    int64_t n = a.dim(i);
    std::string what = "pad dimension " + std::to_string(i);
    if (d.interior < 0) return Fail(what + " needs interior >= 0 and a non-negative result size");
    DETRAIN_ASSIGN_OR_RETURN(int64_t size, Mul(n > 0 ? n - 1 : 0, d.interior, what));
    DETRAIN_ASSIGN_OR_RETURN(size, Add(size, n, what));
    DETRAIN_ASSIGN_OR_RETURN(size, Add(size, d.lo, what));
    DETRAIN_ASSIGN_OR_RETURN(size, Add(size, d.hi, what));
    if (size < 0)
      return Fail("pad dimension " + std::to_string(i) +
                  " needs interior >= 0 and a non-negative result size");
    out.push_back(size);
  }
  return Shape(a.type(), out);
}

Result<Shape> InferDynamicSlice(const Instruction& instr) {
  bool update = instr.opcode == Opcode::kDynamicUpdateSlice;
  DETRAIN_ASSIGN_OR_RETURN(Shape a, ArrayOperand(instr, 0));
  size_t first_index = update ? 2 : 1;
  if (instr.operands.size() != first_index + static_cast<size_t>(a.rank())) {
    return Fail(OpName(instr) + " needs one scalar start index operand per operand dimension (" +
                std::to_string(a.rank()) + ")");
  }
  for (size_t i = first_index; i < instr.operands.size(); ++i) {
    DETRAIN_ASSIGN_OR_RETURN(Shape s, ArrayOperand(instr, i));
    if (s.rank() != 0 || !IsInteger(s.type()))
      return Fail(OpName(instr) + " start indices must be integer scalars, got " + s.ToString());
  }
  std::vector<int64_t> sizes = instr.IntsAttr(Attr::kDynamicSliceSizes);
  if (update) {
    DETRAIN_ASSIGN_OR_RETURN(Shape u, ArrayOperand(instr, 1));
    if (u.type() != a.type() || u.rank() != a.rank())
      return Fail("dynamic-update-slice update must have the operand's type and rank");
    sizes = u.dims();
  }
  if (static_cast<int>(sizes.size()) != a.rank())
    return Fail("dynamic_slice_sizes needs one size per operand dimension");
  for (int i = 0; i < a.rank(); ++i) {
    if (sizes[static_cast<size_t>(i)] < 0 || sizes[static_cast<size_t>(i)] > a.dim(i)) {
      return Fail("slice size " + std::to_string(sizes[static_cast<size_t>(i)]) +
                  " exceeds operand dimension " + std::to_string(i));
    }
  }
  return update ? a : Shape(a.type(), sizes);
}

Result<Shape> InferTuple(const Instruction& instr) {
  std::vector<Shape> elements;
  for (const Instruction* op : instr.operands) elements.push_back(op->shape);
  return Shape::Tuple(elements);
}

Result<Shape> InferGetTupleElement(const Instruction& instr) {
  const Shape& t = instr.operands.at(0)->shape;
  int64_t i = instr.IntAttr(Attr::kIndex);
  if (!t.is_tuple() || i < 0 || i >= static_cast<int64_t>(t.tuple_elements().size())) {
    return Fail("get-tuple-element index " + std::to_string(i) + " is not an element of " +
                t.ToString());
  }
  return t.tuple_elements()[static_cast<size_t>(i)];
}

Result<Shape> InferCall(const Instruction& instr) {
  bool fusion = instr.opcode == Opcode::kFusion;
  const Computation* c = instr.ComputationAttr(fusion ? Attr::kCalls : Attr::kToApply);
  std::string op = fusion ? "fusion" : "call";
  if (!c || !c->root())
    return Fail(op + " needs a " + (fusion ? "calls" : "to_apply") + " computation");
  if (fusion) {
    const AttrValue* kind = instr.FindAttr(Attr::kKind);
    if (!kind || !IsFusionKind(kind->s))
      return Fail("fusion kind must be kLoop, kInput, kOutput or kCustom");
  }
  auto params = c->Parameters();
  bool ok = params.size() == instr.operands.size();
  for (size_t i = 0; ok && i < params.size(); ++i)
    ok = params[i]->shape == instr.operands[i]->shape;
  if (!ok) return Fail(op + " operands must match the parameters of '" + c->name() + "'");
  return c->root()->shape;
}

// while: the state's shape T is the operand's; the condition maps T to pred[], the body T to T.
Result<Shape> InferWhile(const Instruction& instr) {
  const Computation* cond = instr.ComputationAttr(Attr::kCondition);
  const Computation* body = instr.ComputationAttr(Attr::kBody);
  if (!cond || !cond->root() || !body || !body->root())
    return Fail("while needs a condition and a body computation");
  const Shape& state = instr.operands.at(0)->shape;
  for (const Computation* c : {cond, body}) {
    auto params = c->Parameters();
    if (params.size() != 1 || !(params[0]->shape == state)) {
      return Fail("while " + std::string(c == cond ? "condition" : "body") + " '" + c->name() +
                  "' must take one parameter of the state's shape " + state.ToString());
    }
  }
  if (!(cond->root()->shape == Shape::Scalar(ElementType::kPred)))
    return Fail("while condition '" + cond->name() + "' must return pred[]");
  if (!(body->root()->shape == state)) {
    return Fail("while body '" + body->name() + "' must return the state's shape " +
                state.ToString() + ", not " + body->root()->shape.ToString());
  }
  return state;
}

Result<Shape> InferCustomCall(const Instruction& instr) {
  const AttrValue* target = instr.FindAttr(Attr::kCustomCallTarget);
  if (!target || target->s != kThreefryTarget) {
    return Fail("unsupported custom_call_target \"" + (target ? target->s : "") +
                "\" (supported: \"" + std::string(kThreefryTarget) + "\")");
  }
  if (instr.operands.size() != 4) return Fail("threefry2x32 takes 4 operands (k0, k1, x0, x1)");
  DETRAIN_ASSIGN_OR_RETURN(Shape a, ArrayOperand(instr, 0));
  for (size_t i = 0; i < 4; ++i) {
    DETRAIN_ASSIGN_OR_RETURN(Shape s, ArrayOperand(instr, i));
    if (s.type() != ElementType::kU32 || !(s == a))
      return Fail("threefry2x32 operands must all be u32 of one shape, got " + s.ToString());
  }
  return Shape::Tuple({a, a});
}

Status CheckSizes(const Shape& shape) {
  if (!shape.is_tuple()) return shape.CheckedElementCount().status();
  for (const Shape& e : shape.tuple_elements()) DETRAIN_RETURN_IF_ERROR(CheckSizes(e));
  return Status::Ok();
}

Result<Shape> InferShapeOf(const Instruction& instr) {
  int arity = OpcodeArity(instr.opcode);
  if (arity != kVariadic && static_cast<int>(instr.operands.size()) != arity) {
    bool reduction = instr.opcode == Opcode::kReduce || instr.opcode == Opcode::kReduceWindow;
    return Fail(OpName(instr) + " takes " + std::to_string(arity) + " operand(s), got " +
                std::to_string(instr.operands.size()) +
                (reduction ? " (variadic reductions are not supported)" : ""));
  }
  switch (instr.opcode) {
    case Opcode::kParameter:
      return instr.shape;
    case Opcode::kConstant:
      if (!(instr.literal.shape() == instr.shape))
        return Fail("constant value does not have the declared shape " + instr.shape.ToString());
      return instr.shape;
    case Opcode::kIota:
    case Opcode::kReshape:
      return InferReshapeOrIota(instr);
#define OP(e, s, n, c, o, x, a, t)
#define UNARY(e, s, x, t) case Opcode::e:
#define BINARY(e, s, x, t) case Opcode::e:
#include "compiler/ir/ops.def"
#undef OP
      return InferElementwise(instr);
    case Opcode::kCompare: {
      DETRAIN_ASSIGN_OR_RETURN(Shape a, InferElementwise(instr));
      return Shape(ElementType::kPred, a.dims());
    }
    case Opcode::kSelect:
    case Opcode::kClamp:
      return InferSelectOrClamp(instr);
    case Opcode::kConvert:
    case Opcode::kBitcastConvert:
      return InferConvert(instr);
    case Opcode::kBroadcast:
      return InferBroadcast(instr);
    case Opcode::kTranspose:
    case Opcode::kReverse:
      return InferTransposeOrReverse(instr);
    case Opcode::kSlice:
      return InferSlice(instr);
    case Opcode::kConcatenate:
      return InferConcatenate(instr);
    case Opcode::kPad:
      return InferPad(instr);
    case Opcode::kDynamicSlice:
    case Opcode::kDynamicUpdateSlice:
      return InferDynamicSlice(instr);
    case Opcode::kGather:
      return InferGather(instr);
    case Opcode::kScatter:
      return InferScatter(instr);
    case Opcode::kReduce:
      return InferReduce(instr);
    case Opcode::kReduceWindow:
      return InferReduceWindow(instr);
    case Opcode::kDot:
      return InferDot(instr);
    case Opcode::kConvolution:
      return InferConvolution(instr);
    case Opcode::kAllReduce:
      return InferAllReduce(instr);
    case Opcode::kTuple:
      return InferTuple(instr);
    case Opcode::kGetTupleElement:
      return InferGetTupleElement(instr);
    case Opcode::kCall:
    case Opcode::kFusion:
      return InferCall(instr);
    case Opcode::kWhile:
      return InferWhile(instr);
    case Opcode::kCustomCall:
      return InferCustomCall(instr);
  }
  return Fail("unknown opcode");
}

}  // namespace

// A shape computed from sizes that are each valid can still be too large (a broadcast's or
// concatenate's result): no rule returns a shape whose element count is not representable.
Result<Shape> InferShape(const Instruction& instr) {
  DETRAIN_ASSIGN_OR_RETURN(Shape shape, InferShapeOf(instr));
  DETRAIN_RETURN_IF_ERROR(CheckSizes(shape));
  return shape;
}

}  // namespace detrain::ir
