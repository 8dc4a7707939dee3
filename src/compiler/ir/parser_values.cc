// Shapes, literals and attribute values for the parser (see parser_internal.h).
#include <cctype>
#include <charconv>
#include <optional>
#include <vector>

#include "compiler/ir/parser_internal.h"

namespace detrain::ir::parser_internal {
namespace {

constexpr int64_t kMaxConstantElements = int64_t{1} << 26;

constexpr std::string_view kIgnoredAttrs[] = {"api_version",
                                              "backend_config",
                                              "channel_id",
                                              "control-predecessors",
                                              "custom_call_has_side_effect",
                                              "frontend_attributes",
                                              "indices_are_sorted",
                                              "metadata",
                                              "operand_precision",
                                              "origin",
                                              "output_to_operand_aliasing",
                                              "result_accuracy",
                                              "schedule",
                                              "sharding",
                                              "statistics",
                                              "unique_indices"};
constexpr std::string_view kDefaultOnlyAttrs[] = {"batch_group_count", "feature_group_count",
                                                  "type"};

Result<std::vector<int64_t>> ParseIntList(Cursor& cur, std::string_view what) {
  DETRAIN_RETURN_IF_ERROR(cur.Expect("{", "to open " + std::string(what)));
  std::vector<int64_t> values;
  if (cur.TryConsume("}")) return values;
  do {
    DETRAIN_ASSIGN_OR_RETURN(int64_t v, cur.ReadInt("in " + std::string(what)));
    values.push_back(v);
  } while (cur.TryConsume(","));
  DETRAIN_RETURN_IF_ERROR(cur.Expect("}", "to close " + std::string(what)));
  return values;
}

// Splits "a_bxc_d" style text: outer separator 'x', inner '_'.
Result<std::vector<std::vector<int64_t>>> SplitDims(Cursor& cur, SourceLoc loc,
                                                    const std::string& text,
                                                    std::string_view what) {
  std::vector<std::vector<int64_t>> out;
  if (text.empty()) return out;  // a rank-0 window or padding
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t x = text.find('x', pos);
    if (x == std::string::npos) x = text.size();
    std::string part = text.substr(pos, x - pos);
    std::vector<int64_t> nums;
    size_t p = 0;
    while (p <= part.size()) {
      size_t u = part.find('_', p);
      if (u == std::string::npos) u = part.size();
      std::string num = part.substr(p, u - p);
      int64_t v = 0;
      auto r = std::from_chars(num.data(), num.data() + num.size(), v);
      if (num.empty() || r.ec != std::errc() || r.ptr != num.data() + num.size()) {
        return Cursor::ErrorAt(loc, "malformed " + std::string(what) + " '" + text.substr(0, 64) +
                                        "' (each value an int64)");
      }
      nums.push_back(v);
      p = u + 1;
    }
    out.push_back(nums);
    pos = x + 1;
  }
  return out;
}

Status ParsePadding(Cursor& cur, AttrValue* value) {
  SourceLoc loc = cur.Loc();
  cur.SkipSpace();
  loc = cur.Loc();
  std::string text = cur.ReadRun("-0123456789_x");
  DETRAIN_ASSIGN_OR_RETURN(auto dims,
                           SplitDims(cur, loc, text, "padding (expected lo_hi[_interior]x...)"));
  for (const auto& d : dims) {
    if (d.size() != 2 && d.size() != 3) {
      return Cursor::ErrorAt(
          loc, "malformed padding '" + text + "' (expected lo_hi[_interior] per dimension)");
    }
    value->padding.push_back({d[0], d[1], d.size() == 3 ? d[2] : 0});
  }
  return Status::Ok();
}

Status ParseWindow(Cursor& cur, AttrValue* value) {
  DETRAIN_RETURN_IF_ERROR(cur.Expect("{", "to open a window"));
  std::vector<WindowDim>& w = value->window;
  while (!cur.TryConsume("}")) {
    SourceLoc loc = cur.Loc();
    std::string field = cur.ReadWord();
    DETRAIN_RETURN_IF_ERROR(cur.Expect("=", "after window field '" + field + "'"));
    cur.SkipSpace();
    loc = cur.Loc();
    std::string text = cur.ReadRun("-0123456789_x");
    DETRAIN_ASSIGN_OR_RETURN(auto dims, SplitDims(cur, loc, text, "window " + field));
    if (field == "size") w.resize(dims.size());
    if (w.size() != dims.size()) {
      return Cursor::ErrorAt(loc, "window " + field + " has " + std::to_string(dims.size()) +
                                      " dimensions; size= must come first and have as many");
    }
    for (size_t i = 0; i < dims.size(); ++i) {
      size_t want = field == "pad" ? 2 : 1;
      if (dims[i].size() != want) return Cursor::ErrorAt(loc, "malformed window " + field);
      if (field == "size")
        w[i].size = dims[i][0];
      else if (field == "stride")
        w[i].stride = dims[i][0];
      else if (field == "lhs_dilate")
        w[i].lhs_dilate = dims[i][0];
      else if (field == "rhs_dilate")
        w[i].rhs_dilate = dims[i][0];
      else if (field == "pad")
        w[i].pad_lo = dims[i][0], w[i].pad_hi = dims[i][1];
      else
        return Cursor::ErrorAt(loc, "unsupported window field '" + field +
                                        "' (expected size, stride, pad, lhs_dilate, rhs_dilate)");
    }
  }
  return Status::Ok();
}

Status ParseSlice(Cursor& cur, AttrValue* value) {
  DETRAIN_RETURN_IF_ERROR(cur.Expect("{", "to open a slice"));
  if (cur.TryConsume("}")) return Status::Ok();
  do {
    DETRAIN_RETURN_IF_ERROR(cur.Expect("[", "to open a slice dimension [start:limit:stride]"));
    SliceDim d;
    DETRAIN_ASSIGN_OR_RETURN(d.start, cur.ReadInt("slice start"));
    DETRAIN_RETURN_IF_ERROR(cur.Expect(":", "after slice start"));
    DETRAIN_ASSIGN_OR_RETURN(d.limit, cur.ReadInt("slice limit"));
    if (cur.TryConsume(":")) {
      DETRAIN_ASSIGN_OR_RETURN(d.stride, cur.ReadInt("slice stride"));
    }
    DETRAIN_RETURN_IF_ERROR(cur.Expect("]", "to close a slice dimension"));
    value->slice.push_back(d);
  } while (cur.TryConsume(","));
  return cur.Expect("}", "to close a slice");
}

std::string ReadElementToken(Cursor& cur) {
  cur.SkipSpace();
  std::string tok =
      cur.ReadRun("0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.+-_");
  if (tok.ends_with("nan") && cur.PeekRaw() == '(') {
    tok += cur.ReadRun("(");
    tok += cur.ReadRun("0123456789abcdefxABCDEF");
    if (cur.PeekRaw() == ')' && cur.TryConsume(")")) tok += ')';
  }
  return tok;
}

Status ParseLiteralLevel(Cursor& cur, Literal& lit, int dim, int64_t* index) {
  const auto& dims = lit.shape().dims();
  if (dim == static_cast<int>(dims.size())) {
    cur.SkipSpace();
    SourceLoc loc = cur.Loc();
    std::string tok = ReadElementToken(cur);
    if (tok.empty()) return cur.Error("expected a constant element value, found " + cur.Found());
    std::string err = ParseElement(tok, lit, (*index)++);
    if (!err.empty()) return Cursor::ErrorAt(loc, err);
    return Status::Ok();
  }
  DETRAIN_RETURN_IF_ERROR(cur.Expect("{", "to open dimension " + std::to_string(dim) +
                                              " of a constant of shape " + lit.shape().ToString()));
  for (int64_t i = 0; i < dims[static_cast<size_t>(dim)]; ++i) {
    if (i) DETRAIN_RETURN_IF_ERROR(cur.Expect(",", "between constant elements"));
    DETRAIN_RETURN_IF_ERROR(ParseLiteralLevel(cur, lit, dim + 1, index));
  }
  return cur.Expect("}", "after " + std::to_string(dims[static_cast<size_t>(dim)]) +
                             " elements of dimension " + std::to_string(dim) +
                             " of a constant of shape " + lit.shape().ToString());
}

}  // namespace

bool LookingAtShape(Cursor& cur, const ParserHooks* hooks) {
  std::string_view rest = cur.Rest();
  size_t n = 0;
  while (n < rest.size() && std::isalnum(static_cast<unsigned char>(rest[n]))) ++n;
  if (n >= rest.size() || rest[n] != '[') return false;
  const std::string_view name = rest.substr(0, n);
  return ElementTypeFromName(name).has_value() ||
         (hooks != nullptr && hooks->ForeignElementType(name).has_value());
}

namespace {

// A plain layout `{2,0,1}` (minor to major), for an array of `rank`: the permutation, or
// nothing when it is not one (tiles, memory spaces, element sizes after ':').
std::optional<std::vector<int64_t>> PlainLayout(std::string_view text, size_t rank) {
  if (text.size() < 2 || text.front() != '{' || text.back() != '}') return std::nullopt;
  std::vector<int64_t> m2m;
  std::vector<bool> seen(rank, false);
  std::string_view body = text.substr(1, text.size() - 2);
  while (!body.empty()) {
    size_t n = 0;
    int64_t d = 0;
    while (n < body.size() && n < 3 && body[n] >= '0' && body[n] <= '9')
      d = d * 10 + (body[n++] - '0');
    if (n == 0 || d >= static_cast<int64_t>(rank) || seen[static_cast<size_t>(d)]) {
      return std::nullopt;
    }
    seen[static_cast<size_t>(d)] = true;
    m2m.push_back(d);
    body.remove_prefix(n);
    if (body.empty()) break;
    if (body.front() != ',') return std::nullopt;
    body.remove_prefix(1);
  }
  if (m2m.size() != rank) return std::nullopt;
  return m2m;
}

// "pred, s32, u32, s64, u64, f32" and the hooks' types, the last after "or".
std::string ElementTypeList(const ParserHooks* hooks) {
  std::vector<std::string_view> names = {
#define TYPE(e, s, t, k, st) s,
#include "compiler/ir/element_types.def"
#undef TYPE
  };
  if (hooks != nullptr) {
    for (std::string_view n : hooks->ForeignElementTypeNames()) names.push_back(n);
  }
  std::string list;
  for (size_t i = 0; i < names.size(); ++i) {
    list += i == 0 ? "" : i + 1 == names.size() ? " or " : ", ";
    list += names[i];
  }
  return list;
}

Result<Shape> ParseShapeAt(Cursor& cur, int depth, const ParserHooks* hooks, ShapeText* text) {
  if (cur.LookingAt("(")) {
    if (depth >= kMaxNestingDepth) {
      return cur.Error("tuple shape nests deeper than " + std::to_string(kMaxNestingDepth) +
                       " levels");
    }
    cur.Next();
    ShapeText element_text;  // a tuple notes only whether some element has another layout
    std::vector<Shape> elements;
    if (!cur.TryConsume(")")) {
      do {
        DETRAIN_ASSIGN_OR_RETURN(Shape e, ParseShapeAt(cur, depth + 1, hooks, &element_text));
        elements.push_back(std::move(e));
      } while (cur.TryConsume(","));
      DETRAIN_RETURN_IF_ERROR(cur.Expect(")", "to close a tuple shape"));
    }
    if (text != nullptr && element_text.other_layout) text->other_layout = true;
    return Shape::Tuple(std::move(elements));
  }
  cur.SkipSpace();
  SourceLoc loc = cur.Loc();
  std::string type_name = cur.ReadRun("abcdefghijklmnopqrstuvwxyz0123456789");
  auto type = ElementTypeFromName(type_name);
  if (!type && hooks != nullptr) {
    type = hooks->ForeignElementType(type_name);  // bf16 held as f32 (xla_import)
    if (type && text != nullptr) text->foreign_type = type_name;
  }
  if (!type) {
    return Cursor::ErrorAt(loc, "expected a shape (" + ElementTypeList(hooks) +
                                    " element type), found '" + type_name.substr(0, 24) + "'");
  }
  DETRAIN_RETURN_IF_ERROR(cur.Expect("[", "after the element type of a shape"));
  std::vector<int64_t> dims;
  if (!cur.TryConsume("]")) {
    do {
      if (cur.LookingAt("<=") || cur.LookingAt("?")) {
        return cur.Error("dynamic dimensions are not supported; shapes are static");
      }
      if (dims.size() == static_cast<size_t>(kMaxRank)) {
        return cur.Error("shape has more than " + std::to_string(kMaxRank) + " dimensions");
      }
      DETRAIN_ASSIGN_OR_RETURN(int64_t d, cur.ReadInt("dimension size"));
      if (d < 0) return cur.Error("dimension sizes must be non-negative");
      dims.push_back(d);
    } while (cur.TryConsume(","));
    DETRAIN_RETURN_IF_ERROR(cur.Expect("]", "to close the dimensions of a shape"));
  }
  Shape shape(*type, std::move(dims));
  auto count = shape.CheckedElementCount();
  if (!count.ok()) return Cursor::ErrorAt(loc, count.status().message());
  if (cur.PeekRaw() == '{') {  // a layout: detrain's arrays are row-major, so only noted
    const std::string_view rest = cur.Rest();
    const std::string_view layout = rest.substr(0, rest.find('}') + 1);  // layouts hold no braces
    DETRAIN_RETURN_IF_ERROR(cur.SkipValue());
    std::string row_major = "{";
    for (int64_t d = static_cast<int64_t>(shape.dims().size()) - 1; d >= 0; --d) {
      row_major += std::to_string(d) + (d > 0 ? "," : "");
    }
    row_major += "}";
    if (text != nullptr && layout != row_major) {
      text->other_layout = true;
      text->minor_to_major =
          PlainLayout(layout, shape.dims().size()).value_or(std::vector<int64_t>{});
    }
  }
  return shape;
}

}  // namespace

Result<Shape> ParseShape(Cursor& cur, const ParserHooks* hooks, ShapeText* text) {
  return ParseShapeAt(cur, 0, hooks, text);
}

Result<Literal> ParseLiteral(Cursor& cur, const Shape& shape) {
  if (shape.is_tuple()) return cur.Error("tuple constants are not supported");
  if (shape.ElementCount() > kMaxConstantElements) {
    return cur.Error("constants are limited to 2^26 elements; pass large arrays as parameters");
  }
  Literal lit(shape);
  int64_t index = 0;
  DETRAIN_RETURN_IF_ERROR(ParseLiteralLevel(cur, lit, 0, &index));
  return lit;
}

Status ParseAttrValue(Cursor& cur, Attr attr, AttrValue* value, std::string* comp_name) {
  std::string what = "for attribute " + std::string(AttrName(attr));
  switch (AttrKindOf(attr)) {
    case AttrKind::kInt: {
      DETRAIN_ASSIGN_OR_RETURN(value->i, cur.ReadInt(what));
      return Status::Ok();
    }
    case AttrKind::kInts: {
      DETRAIN_ASSIGN_OR_RETURN(value->ints, ParseIntList(cur, what));
      return Status::Ok();
    }
    case AttrKind::kIntLists: {
      DETRAIN_RETURN_IF_ERROR(cur.Expect("{", "to open " + what));
      if (cur.TryConsume("}")) return Status::Ok();
      do {
        DETRAIN_ASSIGN_OR_RETURN(auto list, ParseIntList(cur, what));
        value->lists.push_back(std::move(list));
      } while (cur.TryConsume(","));
      return cur.Expect("}", "to close " + what);
    }
    case AttrKind::kString: {
      DETRAIN_ASSIGN_OR_RETURN(value->s, cur.ReadString());
      return Status::Ok();
    }
    case AttrKind::kDimLabels: {
      cur.SkipSpace();
      SourceLoc loc = cur.Loc();
      value->s = cur.ReadRun("abcdefghijklmnopqrstuvwxyz0123456789_->");
      auto dims = ParseDimLabels(value->s);
      if (!dims.ok()) return Cursor::ErrorAt(loc, dims.status().message());
      return Status::Ok();
    }
    case AttrKind::kDirection: {
      SourceLoc loc = (cur.SkipSpace(), cur.Loc());
      std::string word = cur.ReadWord();
      auto d = DirectionFromName(word);
      if (!d)
        return Cursor::ErrorAt(
            loc, "expected a direction (EQ, NE, LT, LE, GT, GE), found '" + word + "'");
      value->direction = *d;
      return Status::Ok();
    }
    case AttrKind::kComputation: {
      *comp_name = cur.ReadName();
      if (comp_name->empty())
        return cur.Error("expected a computation name " + what + ", found " + cur.Found());
      return Status::Ok();
    }
    case AttrKind::kFusionKind: {
      SourceLoc loc = (cur.SkipSpace(), cur.Loc());
      value->s = cur.ReadWord();
      if (!IsFusionKind(value->s)) {
        return Cursor::ErrorAt(
            loc,
            "expected a fusion kind (kLoop, kInput, kOutput, kCustom), found '" + value->s + "'");
      }
      return Status::Ok();
    }
    case AttrKind::kSlice:
      return ParseSlice(cur, value);
    case AttrKind::kPadding:
      return ParsePadding(cur, value);
    case AttrKind::kWindow:
      return ParseWindow(cur, value);
  }
  return Status::Ok();
}

ForeignAttr ClassifyForeignAttr(std::string_view name) {
  for (std::string_view n : kIgnoredAttrs) {
    if (n == name) return ForeignAttr::kIgnore;
  }
  for (std::string_view n : kDefaultOnlyAttrs) {
    if (n == name) return ForeignAttr::kDefaultOnly;
  }
  return ForeignAttr::kUnknown;
}

}  // namespace detrain::ir::parser_internal
