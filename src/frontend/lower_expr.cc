// Lowering of expressions and function bodies. See lower.h.
#include "frontend/lower_internal.h"
#include "frontend/number.h"

namespace detrain::frontend {

using ir::ElementType;
using ir::Instruction;
using ir::Opcode;

Result<ir::Shape> ToShape(const Type& t, const std::map<std::string, int64_t>& dims) {
  if (t.kind == ValueKind::kKey) return ir::Shape(ElementType::kU32, {2});
  ElementType et = ToElementType(t.dtype);
  std::vector<int64_t> d;
  for (const DimValue& dv : t.dims) {
    if (!dv.is_symbol()) {
      d.push_back(dv.size);
      continue;
    }
    auto it = dims.find(dv.symbol);
    if (it == dims.end()) return InvalidArgument("no size given for dimension '" + dv.symbol + "'");
    d.push_back(it->second);
  }
  return ir::Shape(et, d);
}

Result<ir::Shape> LowerCtx::ShapeOf(const Expr& e) {
  auto it = prog_.types.find(&e);
  if (it == prog_.types.end()) return Internal("expression was not type-checked");
  return ToShape(it->second, dims_);
}

Result<Instruction*> LowerCtx::LowerBody(const FuncDecl& f, const std::vector<Instruction*>& args,
                                         const std::map<std::string, int64_t>& dims) {
  auto saved_locals = std::move(locals_);
  auto saved_dims = std::move(dims_);
  locals_.clear();
  dims_ = dims;
  for (size_t i = 0; i < f.args.size(); ++i) locals_[f.args[i].name] = args[i];
  Instruction* result = nullptr;
  for (const Stmt& s : f.body) {
    Result<Instruction*> v = Lower(*s.value);
    if (!v.ok()) return v.status();
    if (s.is_return) {
      result = *v;
    } else {
      locals_[s.target] = *v;
    }
  }
  locals_ = std::move(saved_locals);
  dims_ = std::move(saved_dims);
  return result;
}

Result<Instruction*> LowerCtx::Lower(const Expr& e) {
  switch (e.kind) {
    case ExprKind::kInt:
    case ExprKind::kFloat: {
      // A constant alone is f32 (it combines only with f32 tensors, or with s32 ones as an
      // integer); LowerBinary converts it to the other operand's type and shape.
      float v = 0;
      if (ParseF32(e.text, &v) != NumberStatus::kOk) return Internal(F32RangeMessage(e.text));
      return b().ConstantF32(v);
    }
    case ExprKind::kName: {
      if (auto it = locals_.find(e.text); it != locals_.end()) return it->second;
      if (auto it = params.find(e.text); it != params.end()) return it->second;
      return Internal("unbound name '" + e.text + "' after checking");
    }
    case ExprKind::kNegate: {
      DETRAIN_ASSIGN_OR_RETURN(Instruction * x, Lower(*e.operands[0]));
      return b().Unary(Opcode::kNegate, x);
    }
    case ExprKind::kBinary:
      return LowerBinary(e);
    case ExprKind::kCall:
      return LowerCall(e);
    case ExprKind::kString:
    case ExprKind::kBool:
    case ExprKind::kList:
      return Internal("literal in value position after checking");
  }
  return Internal("unknown expression kind");
}

namespace {

bool IsLiteral(const Expr& e) {
  if (e.kind == ExprKind::kNegate) return IsLiteral(*e.operands[0]);
  return e.kind == ExprKind::kInt || e.kind == ExprKind::kFloat;
}

// The literal's value as the other operand's element type (a constant of that type).
Result<Instruction*> LiteralAs(LowerCtx& ctx, const Expr& e, const ir::Shape& like) {
  bool negate = false;
  const Expr* lit = &e;
  while (lit->kind == ExprKind::kNegate) {
    negate = !negate;
    lit = lit->operands[0].get();
  }
  if (like.type() == ElementType::kF32) {
    // Correctly rounded straight to f32, as JAX's weak-typed Python float becomes f32; the
    // checker (CheckConstantFits) refused what rounds to infinity.
    float v = 0;
    if (ParseF32(lit->text, &v) != NumberStatus::kOk) return Internal(F32RangeMessage(lit->text));
    return ctx.e().Full(ir::Shape::Scalar(ElementType::kF32), negate ? -v : v);
  }
  int64_t v = 0;
  if (ParseI64(lit->text, &v, uint64_t{1} << 31) != NumberStatus::kOk) {
    return Internal("'" + lit->text + "' is not an s32 constant, but the other operand is " +
                    std::string(ir::ElementTypeName(like.type())));
  }
  return ctx.e().Full(ir::Shape::Scalar(like.type()), static_cast<double>(negate ? -v : v));
}

Opcode BinaryOpcode(char op) {
  switch (op) {
    case '+':
      return Opcode::kAdd;
    case '-':
      return Opcode::kSubtract;
    case '*':
      return Opcode::kMultiply;
    default:
      return Opcode::kDivide;
  }
}

}  // namespace

Result<Instruction*> LowerCtx::LowerBinary(const Expr& e) {
  DETRAIN_ASSIGN_OR_RETURN(ir::Shape result, ShapeOf(e));
  const Expr& lhs_e = *e.operands[0];
  const Expr& rhs_e = *e.operands[1];
  if (e.op == '@') {
    DETRAIN_ASSIGN_OR_RETURN(Instruction * a, Lower(lhs_e));
    DETRAIN_ASSIGN_OR_RETURN(Instruction * m, Lower(rhs_e));
    ir::DotDims d;
    d.lhs_contracting = {a->shape.rank() - 1};
    d.rhs_contracting = {0};
    return b().Dot(a, m, d);
  }
  Instruction* a;
  Instruction* c;
  if (IsLiteral(lhs_e) && IsLiteral(rhs_e)) {
    return Internal("constant arithmetic outside a tensor expression");
  }
  if (IsLiteral(lhs_e)) {
    DETRAIN_ASSIGN_OR_RETURN(c, Lower(rhs_e));
    DETRAIN_ASSIGN_OR_RETURN(a, LiteralAs(*this, lhs_e, c->shape));
  } else if (IsLiteral(rhs_e)) {
    DETRAIN_ASSIGN_OR_RETURN(a, Lower(lhs_e));
    DETRAIN_ASSIGN_OR_RETURN(c, LiteralAs(*this, rhs_e, a->shape));
  } else {
    DETRAIN_ASSIGN_OR_RETURN(a, Lower(lhs_e));
    DETRAIN_ASSIGN_OR_RETURN(c, Lower(rhs_e));
  }
  return b().Binary(BinaryOpcode(e.op), e_->BroadcastTo(a, result), e_->BroadcastTo(c, result));
}

Result<Instruction*> LowerCtx::LowerCall(const Expr& e) {
  auto it = prog_.calls.find(&e);
  if (it == prog_.calls.end()) return Internal("call was not checked");
  const CheckedCall& call = it->second;
  std::vector<Instruction*> args;
  if (call.func != nullptr) {
    std::map<std::string, int64_t> callee_dims;
    for (const auto& [sym, dim] : call.bindings) {
      if (!dim.is_symbol()) {
        callee_dims[sym] = dim.size;
      } else if (auto d = dims_.find(dim.symbol); d != dims_.end()) {
        callee_dims[sym] = d->second;
      }
    }
    for (const ArgValue& a : call.args) {
      DETRAIN_ASSIGN_OR_RETURN(Instruction * v, Lower(*a.expr));
      args.push_back(v);
    }
    return LowerBody(*call.func, args, callee_dims);
  }
  for (size_t i = 0; i < call.args.size(); ++i) {
    ArgKind k = call.builtin->params[i].kind;
    if ((k == ArgKind::kTensor || k == ArgKind::kKey) && call.args[i].present) {
      DETRAIN_ASSIGN_OR_RETURN(Instruction * v, Lower(*call.args[i].expr));
      args.push_back(v);
    } else {
      args.push_back(nullptr);
    }
  }
  DETRAIN_ASSIGN_OR_RETURN(ir::Shape result, ShapeOf(e));
  return LowerLayer(*this, e, call, args, result);
}

Result<ir::Shape> ArgShape(const FuncArg& a, const std::map<std::string, int64_t>& dims) {
  Type t;
  if (a.type.is_key) {
    t = Type::Key();
  } else {
    ParseDType(a.type.dtype, &t.dtype);
    for (const Dim& d : a.type.dims)
      t.dims.push_back(d.symbol.empty() ? DimValue::Of(d.size) : DimValue::Sym(d.symbol));
  }
  return ToShape(t, dims);
}

Result<Instruction*> LowerInline(const CheckedProgram& program, const FuncDecl& f,
                                 const LowerOptions& options, Emitter& emit,
                                 const std::vector<Instruction*>& params,
                                 const std::vector<Instruction*>& args) {
  LowerCtx ctx(program, options, &emit);
  for (size_t i = 0; i < program.params.size(); ++i)
    ctx.params[program.params[i].first] = params[i];
  return ctx.LowerBody(f, args, options.dims);
}

Result<ir::Computation*> LowerFunction(const CheckedProgram& program, const FuncDecl& f,
                                       const LowerOptions& options, ir::Module* module,
                                       const std::string& name) {
  ir::Builder builder(module, name);
  Emitter emit(module, &builder);
  int64_t n = 0;
  std::vector<Instruction*> params;
  for (const auto& [pname, ptype] : program.params) {
    DETRAIN_ASSIGN_OR_RETURN(ir::Shape s, ToShape(ptype, options.dims));
    params.push_back(builder.Parameter(n++, s, pname));
  }
  std::vector<Instruction*> args;
  for (const FuncArg& a : f.args) {
    DETRAIN_ASSIGN_OR_RETURN(ir::Shape s, ArgShape(a, options.dims));
    args.push_back(builder.Parameter(n++, s, a.name));
  }
  DETRAIN_ASSIGN_OR_RETURN(Instruction * root,
                           LowerInline(program, f, options, emit, params, args));
  DETRAIN_ASSIGN_OR_RETURN(ir::Computation * c, builder.Build(root));
  module->set_entry(c);
  return c;
}

}  // namespace detrain::frontend
