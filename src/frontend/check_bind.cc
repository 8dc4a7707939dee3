// Argument binding for built-in calls: positional then keyword arguments, defaults, literal
// decoding (correctly rounded, locale-free: std::from_chars), and the builtin's type rule.
#include <charconv>

#include "frontend/check_internal.h"
#include "frontend/number.h"

namespace detrain::frontend {
namespace {

const char* KindDescription(ArgKind k) {
  switch (k) {
    case ArgKind::kTensor:
      return "a tensor";
    case ArgKind::kKey:
      return "a key";
    case ArgKind::kInt:
      return "an integer";
    case ArgKind::kFloat:
      return "a number";
    case ArgKind::kBool:
      return "true or false";
    case ArgKind::kString:
      return "a string";
    case ArgKind::kDims:
      return "a list of dimensions such as [B, 64]";
    case ArgKind::kAxes:
      return "an axis or a list of axes";
    case ArgKind::kSchedule:
      return "a number or a schedule";
    case ArgKind::kColumn:
      return "a column index or name";
    case ArgKind::kColumns:
      return "a list of column indices or names";
  }
  return "?";
}

// The literal decoders: kOk, kMalformed (not a literal of that kind: the caller says what was
// expected), or kOutOfRange with *range_error set to the message (number.h states the rule).

// Integer literal, possibly negated once (-9223372036854775808 is int64's smallest).
NumberStatus IntLiteral(const Expr& e, int64_t* out, std::string* range_error = nullptr) {
  bool negate = e.kind == ExprKind::kNegate && e.operands[0]->kind == ExprKind::kInt;
  const Expr& lit = negate ? *e.operands[0] : e;
  if (lit.kind != ExprKind::kInt) return NumberStatus::kMalformed;
  uint64_t max = negate ? uint64_t{1} << 63 : uint64_t{INT64_MAX};
  int64_t v;
  NumberStatus s = ParseI64(lit.text, &v, max);
  if (s == NumberStatus::kOutOfRange && range_error != nullptr) {
    *range_error = I64RangeMessage(lit.text, negate);
  }
  if (s != NumberStatus::kOk) return s;
  *out = !negate ? v : v == INT64_MIN ? INT64_MIN : -v;  // 2^63 parsed wraps to INT64_MIN
  return NumberStatus::kOk;
}

NumberStatus NumberLiteral(const Expr& e, double* out, std::string* range_error) {
  if (e.kind == ExprKind::kNegate) {
    NumberStatus s = NumberLiteral(*e.operands[0], out, range_error);
    if (s == NumberStatus::kOk) *out = -*out;
    return s;
  }
  if (e.kind != ExprKind::kInt && e.kind != ExprKind::kFloat) return NumberStatus::kMalformed;
  NumberStatus s = ParseF64(e.text, out);
  if (s == NumberStatus::kOutOfRange) *range_error = F32RangeMessage(e.text);
  return s;
}

// Decodes a default value written in the builtin table (a literal in .dt syntax).
void ApplyDefault(const ParamSpec& p, ArgValue* a) {
  std::string v = p.default_value;
  if (v == "none") return;
  a->present = true;
  a->s = v;
  switch (p.kind) {
    case ArgKind::kInt:
      std::from_chars(v.data(), v.data() + v.size(), a->i);
      break;
    case ArgKind::kColumn: {  // an index (the table writes no name as a default)
      int64_t index = 0;
      std::from_chars(v.data(), v.data() + v.size(), index);
      a->columns = {index};
      break;
    }
    case ArgKind::kFloat:
    case ArgKind::kSchedule:
      std::from_chars(v.data(), v.data() + v.size(), a->f);
      break;
    case ArgKind::kBool:
      a->b = v == "true";
      break;
    case ArgKind::kString:
      a->s = v.substr(1, v.size() - 2);
      break;
    default:
      break;
  }
}

}  // namespace

// Decodes one argument expression of literal kind; tensor kinds are typed by the caller.
static Status DecodeLiteral(const SourceFile& src, std::string_view callee, const ParamSpec& p,
                            const Expr& e, ArgValue* a) {
  auto wrong = [&] {
    return src.Error(e.range, std::string(callee) + ": '" + p.name + "' expects " +
                                  KindDescription(p.kind) + ", found '" +
                                  std::string(src.Slice(e.range)) + "'");
  };
  a->s = std::string(src.Slice(e.range));
  std::string range_error;
  auto out_of_range = [&](const Expr& at) {
    return src.Error(at.range, std::string(callee) + ": '" + p.name + "': " + range_error);
  };
  // Decodes one integer item; false with *status set when it is not one.
  auto integer = [&](const Expr& item, int64_t* n, Status* status) {
    switch (IntLiteral(item, n, &range_error)) {
      case NumberStatus::kOk:
        return true;
      case NumberStatus::kOutOfRange:
        *status = out_of_range(item);
        return false;
      case NumberStatus::kMalformed:
        *status = Status::Ok();
        return false;
    }
    return false;
  };
  Status bad;
  switch (p.kind) {
    case ArgKind::kInt:
      if (!integer(e, &a->i, &bad)) return bad.ok() ? wrong() : bad;
      return Status::Ok();
    case ArgKind::kFloat:
      switch (NumberLiteral(e, &a->f, &range_error)) {
        case NumberStatus::kOk:
          return Status::Ok();
        case NumberStatus::kOutOfRange:
          return out_of_range(e);
        case NumberStatus::kMalformed:
          return wrong();
      }
      return wrong();
    case ArgKind::kBool:
      if (e.kind != ExprKind::kBool) return wrong();
      a->b = e.text == "true";
      return Status::Ok();
    case ArgKind::kString:
      if (e.kind != ExprKind::kString) return wrong();
      a->s = e.text;
      return Status::Ok();
    case ArgKind::kDims:
      if (e.kind != ExprKind::kList) return wrong();
      for (const auto& item : e.operands) {
        int64_t n = 0;
        bool is_int = item->kind != ExprKind::kName && integer(*item, &n, &bad);
        if (!bad.ok()) return bad;
        if (item->kind == ExprKind::kName) {
          a->dims.push_back(DimValue::Sym(item->text));
        } else if (is_int && n >= 0) {
          a->dims.push_back(DimValue::Of(n));
        } else if (is_int && n == -1) {
          a->dims.push_back({-2, ""});  // inferred by the rule
        } else {
          return src.Error(item->range,
                           std::string(callee) + ": a dimension must be a size, a name or -1");
        }
      }
      return Status::Ok();
    case ArgKind::kAxes: {
      int64_t n;
      if (integer(e, &n, &bad)) {
        a->axes.push_back(n);
        return Status::Ok();
      }
      if (!bad.ok()) return bad;
      if (e.kind != ExprKind::kList) return wrong();
      for (const auto& item : e.operands) {
        if (!integer(*item, &n, &bad)) {
          if (!bad.ok()) return bad;
          return src.Error(item->range, std::string(callee) + ": an axis must be an integer");
        }
        a->axes.push_back(n);
      }
      return Status::Ok();
    }
    case ArgKind::kColumn:
    case ArgKind::kColumns: {
      // One column, or a list of them: each a string (a name) or an integer (an index).
      bool list = p.kind == ArgKind::kColumns;
      if (list && e.kind != ExprKind::kList) return wrong();
      std::vector<const Expr*> items;
      if (list) {
        for (const auto& item : e.operands) items.push_back(item.get());
      } else {
        items.push_back(&e);
      }
      for (const Expr* item : items) {
        int64_t n;
        if (item->kind == ExprKind::kString) {
          a->columns.emplace_back(item->text);
        } else if (integer(*item, &n, &bad)) {
          a->columns.emplace_back(n);
        } else if (!bad.ok()) {
          return bad;
        } else if (list) {
          return src.Error(item->range, std::string(callee) +
                                            ": a column is an index (an integer) or a name (a "
                                            "string), found '" +
                                            std::string(src.Slice(item->range)) + "'");
        } else {
          return wrong();
        }
      }
      return Status::Ok();
    }
    default:
      return Internal("DecodeLiteral on a non-literal kind");
  }
}

Result<Type> Checker::CheckBuiltinCall(const Expr& call, const BuiltinDef& def,
                                       std::vector<ArgValue>* args) {
  const size_t n = def.params.size();
  args->assign(n, ArgValue{});
  std::vector<bool> given(n, false);
  size_t next_positional = 0;
  for (const Arg& a : call.args) {
    size_t idx = n;
    if (a.keyword.empty()) {
      if (next_positional >= n) {
        return src_.Error(a.value->range, std::string(def.name) + ": too many arguments (takes " +
                                              std::to_string(n) + ")");
      }
      idx = next_positional++;
    } else {
      for (size_t i = 0; i < n; ++i) {
        if (a.keyword == def.params[i].name) idx = i;
      }
      if (idx == n) {
        std::string names;
        for (const auto& p : def.params) names += (names.empty() ? "" : ", ") + std::string(p.name);
        return src_.Error(
            a.keyword_range,
            std::string(def.name) + ": unknown option '" + a.keyword + "'" +
                (names.empty() ? " (it takes no options)" : " (expected one of: " + names + ")"));
      }
    }
    if (given[idx]) {
      return src_.Error(a.value->range,
                        std::string(def.name) + ": '" + def.params[idx].name + "' given twice");
    }
    given[idx] = true;
    ArgValue& v = (*args)[idx];
    v.present = true;
    v.expr = a.value.get();
    v.range = a.value->range;
    const ParamSpec& p = def.params[idx];
    if (p.kind == ArgKind::kTensor || p.kind == ArgKind::kKey) {
      DETRAIN_ASSIGN_OR_RETURN(v.type, TypeOf(*a.value));
      bool ok = p.kind == ArgKind::kKey ? v.type.kind == ValueKind::kKey : v.type.is_tensor();
      if (!ok) {
        return src_.Error(a.value->range, std::string(def.name) + ": '" + p.name + "' expects " +
                                              KindDescription(p.kind) + ", found " +
                                              v.type.ToString());
      }
    } else if (p.kind == ArgKind::kSchedule && a.value->kind == ExprKind::kCall) {
      const BuiltinDef* sched;
      DETRAIN_ASSIGN_OR_RETURN(std::vector<ArgValue> sargs,
                               BindConfig(*a.value, BuiltinCategory::kSchedule, &sched));
      v.s = ConfigJson(*sched, sargs).dump();
    } else {
      ArgKind k = p.kind == ArgKind::kSchedule ? ArgKind::kFloat : p.kind;
      ParamSpec as_literal{p.name, k, p.default_value};
      DETRAIN_RETURN_IF_ERROR(DecodeLiteral(src_, def.name, as_literal, *a.value, &v));
    }
  }
  for (size_t i = 0; i < n; ++i) {
    if (given[i]) continue;
    const ParamSpec& p = def.params[i];
    if (p.default_value == nullptr) {
      return src_.Error(call.range, std::string(def.name) + ": missing argument '" + p.name +
                                        "' (" + KindDescription(p.kind) + ")");
    }
    (*args)[i].range = call.range;
    ApplyDefault(p, &(*args)[i]);
  }
  CallContext ctx{&src_, &call, def.name, *args};
  return def.rule(ctx);
}

Result<std::vector<ArgValue>> Checker::BindConfig(const Expr& call, BuiltinCategory category,
                                                  const BuiltinDef** def) {
  static constexpr const char* kWhat[] = {"layer",    "initializer", "optimizer",
                                          "schedule", "data source", "setting"};
  const char* what = kWhat[static_cast<int>(category)];
  if (call.kind != ExprKind::kCall && call.kind != ExprKind::kName) {
    return src_.Error(call.range, std::string("expected ") +
                                      (category == BuiltinCategory::kInitializer ? "an " : "a ") +
                                      what + " (one of: " + BuiltinNames(category) + ")");
  }
  *def = FindBuiltin(call.text, category);
  if (*def == nullptr) {
    SourceRange r = call.kind == ExprKind::kCall ? call.callee_range : call.range;
    return src_.Error(r, std::string("unknown ") + what + " '" + call.text +
                             "' (expected one of: " + BuiltinNames(category) + ")");
  }
  std::vector<ArgValue> args;
  DETRAIN_RETURN_IF_ERROR(CheckBuiltinCall(call, **def, &args).status());
  return args;
}

nlohmann::json Checker::ConfigJson(const BuiltinDef& def, const std::vector<ArgValue>& args) {
  nlohmann::json j;
  j["name"] = def.name;
  for (size_t i = 0; i < def.params.size(); ++i) {
    const ArgValue& a = args[i];
    if (!a.present) continue;
    const char* key = def.params[i].name;
    switch (def.params[i].kind) {
      case ArgKind::kInt:
        j[key] = a.i;
        break;
      case ArgKind::kFloat:
        j[key] = a.f;
        break;
      case ArgKind::kBool:
        j[key] = a.b;
        break;
      case ArgKind::kString:
        j[key] = a.s;
        break;
      case ArgKind::kColumn:
        j[key] = ColumnRefJson(a.columns[0]);
        break;
      case ArgKind::kColumns: {
        nlohmann::json list = nlohmann::json::array();
        for (const ColumnRef& c : a.columns) list.push_back(ColumnRefJson(c));
        j[key] = list;
        break;
      }
      case ArgKind::kSchedule:
        if (a.expr != nullptr && a.expr->kind == ExprKind::kCall) {
          j[key] = nlohmann::json::parse(a.s);
        } else {
          j[key] = {{"name", "constant"}, {"value", a.f}};
        }
        break;
      default:
        break;
    }
  }
  return j;
}

}  // namespace detrain::frontend
