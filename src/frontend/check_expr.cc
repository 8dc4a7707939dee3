// Types of expressions: names, literals, arithmetic with broadcasting, matrix products, calls
// of built-in layers and of user functions.
#include <algorithm>

#include "base/checked.h"
#include "base/suggest.h"
#include "frontend/check_internal.h"
#include "frontend/number.h"
#include "frontend/parser.h"

namespace detrain::frontend {

std::string Checker::Suggest(const std::string& name) const {
  std::vector<std::string> names;
  for (const auto& [n, t] : locals_) names.push_back(n);
  for (const auto& [n, t] : globals_) names.push_back(n);
  return DidYouMean(name, names);
}

Result<Type> Checker::TypeOf(const Expr& e) {
  Result<Type> t = [&]() -> Result<Type> {
    switch (e.kind) {
      case ExprKind::kInt:
      case ExprKind::kFloat:
        return Type::Literal();
      case ExprKind::kString:
        return src_.Error(e.range, "a string is not a value here");
      case ExprKind::kBool:
        return src_.Error(e.range, "true/false is not a value here");
      case ExprKind::kList:
        return src_.Error(e.range, "a list is not a value here");
      case ExprKind::kName: {
        if (auto it = locals_.find(e.text); it != locals_.end()) return it->second;
        if (auto it = globals_.find(e.text); it != globals_.end()) return it->second;
        return src_.Error(e.range, "undefined name '" + e.text + "'" + Suggest(e.text));
      }
      case ExprKind::kNegate: {
        DETRAIN_ASSIGN_OR_RETURN(Type x, TypeOf(*e.operands[0]));
        if (x.kind == ValueKind::kKey) return src_.Error(e.range, "cannot negate a key");
        return x;
      }
      case ExprKind::kBinary:
        return CheckBinary(e);
      case ExprKind::kCall: {
        if (auto it = funcs_.find(e.text); it != funcs_.end()) return CheckUserCall(e, *it->second);
        const BuiltinDef* def = FindBuiltin(e.text, BuiltinCategory::kLayer);
        if (def == nullptr) {
          return src_.Error(e.callee_range,
                            "unknown function '" + e.text +
                                "' (not a layer or a function defined above; layers: " +
                                BuiltinNames(BuiltinCategory::kLayer) + ")");
        }
        CheckedCall cc;
        cc.builtin = def;
        DETRAIN_ASSIGN_OR_RETURN(Type r, CheckBuiltinCall(e, *def, &cc.args));
        out_.calls[&e] = std::move(cc);
        return r;
      }
    }
    return Internal("unknown expression kind");
  }();
  if (!t.ok()) return t;
  if (t->is_tensor()) {
    // Shapes are products of user-given sizes: the count must fit before anything allocates.
    std::vector<int64_t> sizes;
    for (const DimValue& d : t->dims) {
      if (!d.is_symbol()) sizes.push_back(d.size);
    }
    Result<int64_t> n = CheckedElementCount(sizes, t->ToString());
    if (!n.ok()) return src_.Error(e.range, n.status().message());
  }
  out_.types[&e] = *t;
  return t;
}

namespace {

// The number token of a constant: a literal under any negations; nullptr for anything else.
const Expr* ConstantLeaf(const Expr& e, bool* negated) {
  const Expr* lit = &e;
  *negated = false;
  while (lit->kind == ExprKind::kNegate) {
    *negated = !*negated;
    lit = lit->operands[0].get();
  }
  return lit->kind == ExprKind::kInt || lit->kind == ExprKind::kFloat ? lit : nullptr;
}

}  // namespace

Status Checker::CheckConstantFits(const Expr& constant, const Type& other) {
  bool negated;
  const Expr* lit = ConstantLeaf(constant, &negated);
  if (lit == nullptr) return Status::Ok();  // not a number token: the caller's rules apply
  std::string shown = Abbreviate(src_.Slice(constant.range));  // with its sign
  if (other.dtype == DType::kF32) {
    float v;
    if (ParseF32(lit->text, &v) != NumberStatus::kOk) {
      return src_.Error(constant.range, F32RangeMessage(shown));
    }
    return Status::Ok();
  }
  std::string type = DTypeName(other.dtype);
  int64_t v;
  if (lit->kind != ExprKind::kInt) {
    return src_.Error(constant.range,
                      "'" + shown + "' is not an integer, but the other operand is " + type);
  }
  // s32 and pred constants are converted as s32 values (lowering: LiteralAs).
  uint64_t max = negated ? uint64_t{1} << 31 : (uint64_t{1} << 31) - 1;
  if (ParseI64(lit->text, &v, max) != NumberStatus::kOk) {
    return src_.Error(constant.range, "'" + shown + "' is out of range for " + type +
                                          " (from -2147483648 to 2147483647)");
  }
  return Status::Ok();
}

Result<int> Checker::InlinedDepth(const Expr& e) {
  int inner = 0;
  for (const ExprPtr& o : e.operands) {
    DETRAIN_ASSIGN_OR_RETURN(int d, InlinedDepth(*o));
    inner = std::max(inner, d);
  }
  for (const Arg& a : e.args) {
    DETRAIN_ASSIGN_OR_RETURN(int d, InlinedDepth(*a.value));
    inner = std::max(inner, d);
  }
  if (e.kind == ExprKind::kCall) {
    auto it = out_.calls.find(&e);
    if (it != out_.calls.end() && it->second.func != nullptr) {
      inner = std::max(inner, inlined_depth_[it->second.func]);
    }
  }
  int depth = std::max(e.depth, inner + 1);
  if (depth > kMaxExpressionDepth) {
    return src_.Error(e.kind == ExprKind::kCall ? e.callee_range : e.range,
                      "expression nests deeper than " + std::to_string(kMaxExpressionDepth) +
                          " levels with the bodies of the functions it calls in place of the "
                          "calls");
  }
  return depth;
}

Result<Type> Checker::CheckBinary(const Expr& e) {
  DETRAIN_ASSIGN_OR_RETURN(Type a, TypeOf(*e.operands[0]));
  DETRAIN_ASSIGN_OR_RETURN(Type b, TypeOf(*e.operands[1]));
  // Built only for a message: an expression's text can be long.
  std::string head = Abbreviate(src_.Slice(e.range), 200) + ": " + a.ToString() + " " + e.op + " " +
                     b.ToString() + ": ";
  if (a.kind == ValueKind::kKey || b.kind == ValueKind::kKey) {
    return src_.Error(e.range, head + "keys are not numbers (use them in dropout(..., key = k))");
  }
  if (a.kind == ValueKind::kLiteral && b.kind == ValueKind::kLiteral) {
    // Lowering gives a constant the type of the tensor it meets; two constants meet none.
    return src_.Error(e.range, Abbreviate(src_.Slice(e.range)) +
                                   ": arithmetic on two constants (write the value instead)");
  }
  if (e.op == '@') {
    if (!a.is_tensor() || !b.is_tensor()) return src_.Error(e.range, head + "@ needs two tensors");
    if (a.dtype != DType::kF32 || b.dtype != DType::kF32)
      return src_.Error(e.range, head + "@ needs f32 operands");
    if (a.rank() < 1 || b.rank() < 1 || b.rank() > 2) {
      return src_.Error(e.range, head +
                                     "@ contracts the last dimension of the left operand with the "
                                     "first of a rank-1 or rank-2 right operand");
    }
    const DimValue& ka = a.dims.back();
    const DimValue& kb = b.dims.front();
    if (!(ka == kb)) {
      return src_.Error(e.range, head + "contracted dimensions " + ka.ToString() + " and " +
                                     kb.ToString() + " differ");
    }
    std::vector<DimValue> dims(a.dims.begin(), a.dims.end() - 1);
    if (b.rank() == 2) dims.push_back(b.dims[1]);
    return Type::Tensor(DType::kF32, dims);
  }
  if (a.kind == ValueKind::kLiteral) {
    DETRAIN_RETURN_IF_ERROR(CheckConstantFits(*e.operands[0], b));
    return b;
  }
  if (b.kind == ValueKind::kLiteral) {
    DETRAIN_RETURN_IF_ERROR(CheckConstantFits(*e.operands[1], a));
    return a;
  }
  if (a.dtype != b.dtype) {
    return src_.Error(e.range, head + "element types differ (no implicit conversion)");
  }
  std::vector<DimValue> dims;
  std::string why;
  if (!BroadcastDims(a.dims, b.dims, &dims, &why)) return src_.Error(e.range, head + why);
  return Type::Tensor(a.dtype, dims);
}

Result<Type> Checker::CheckUserCall(const Expr& call, const FuncDecl& f) {
  CheckedCall cc;
  cc.func = &f;
  if (call.args.size() != f.args.size()) {
    return src_.Error(call.range, f.name + " takes " + std::to_string(f.args.size()) +
                                      " arguments, " + std::to_string(call.args.size()) + " given");
  }
  for (size_t i = 0; i < call.args.size(); ++i) {
    const Arg& a = call.args[i];
    if (!a.keyword.empty()) {
      return src_.Error(a.keyword_range, "arguments of user functions are positional");
    }
    ArgValue v;
    v.present = true;
    v.expr = a.value.get();
    v.range = a.value->range;
    DETRAIN_ASSIGN_OR_RETURN(v.type, TypeOf(*a.value));
    const TypeExpr& want = f.args[i].type;
    std::string mismatch = f.name + ": argument '" + f.args[i].name + "' expects " +
                           std::string(src_.Slice(want.range)) + ", found " + v.type.ToString();
    if (want.is_key != (v.type.kind == ValueKind::kKey) || (!want.is_key && !v.type.is_tensor())) {
      return src_.Error(v.range, mismatch);
    }
    if (!want.is_key) {
      DType dt;
      ParseDType(want.dtype, &dt);
      if (dt != v.type.dtype || want.dims.size() != v.type.dims.size())
        return src_.Error(v.range, mismatch);
      for (size_t d = 0; d < want.dims.size(); ++d) {
        const Dim& wd = want.dims[d];
        const DimValue& got = v.type.dims[d];
        if (wd.symbol.empty()) {
          if (got.is_symbol() || got.size != wd.size) return src_.Error(v.range, mismatch);
        } else if (auto it = cc.bindings.find(wd.symbol); it != cc.bindings.end()) {
          if (!(it->second == got)) {
            return src_.Error(v.range, mismatch + " (" + wd.symbol + " is already " +
                                           it->second.ToString() + ")");
          }
        } else {
          cc.bindings[wd.symbol] = got;
        }
      }
    }
    cc.args.push_back(std::move(v));
  }
  // The result type with the callee's dimension names replaced by the caller's.
  Type r;
  if (f.result.is_key) {
    r = Type::Key();
  } else {
    ParseDType(f.result.dtype, &r.dtype);
    for (const Dim& d : f.result.dims) {
      if (d.symbol.empty()) {
        r.dims.push_back(DimValue::Of(d.size));
      } else if (auto it = cc.bindings.find(d.symbol); it != cc.bindings.end()) {
        r.dims.push_back(it->second);
      } else {
        r.dims.push_back(DimValue::Sym(d.symbol));
      }
    }
  }
  out_.calls[&call] = std::move(cc);
  return r;
}

}  // namespace detrain::frontend
