// See literal.h.
#include "compiler/ir/literal.h"

#include <algorithm>
#include <bit>
#include <charconv>
#include <cmath>
#include <limits>
#include <system_error>

namespace detrain::ir {

Literal::Literal(const Shape& shape) : shape_(shape) {
  if (shape.is_tuple()) {
    for (const Shape& e : shape.tuple_elements()) tuple_.emplace_back(e);
  } else {
    bytes_.assign(static_cast<size_t>(shape.ElementCount() * ElementTypeByteSize(shape.type())),
                  '\0');
  }
}

Literal Literal::Tuple(std::vector<Literal> elements) {
  std::vector<Shape> shapes;
  for (const Literal& e : elements) shapes.push_back(e.shape());
  Literal lit;
  lit.shape_ = Shape::Tuple(std::move(shapes));
  lit.tuple_ = std::move(elements);
  return lit;
}

bool Literal::BitwiseEqual(const Literal& other) const {
  if (!(shape_ == other.shape_) || bytes_ != other.bytes_) return false;
  for (size_t i = 0; i < tuple_.size(); ++i) {
    if (!tuple_[i].BitwiseEqual(other.tuple_[i])) return false;
  }
  return true;
}

std::string Literal::ToString() const {
  if (shape_.is_tuple()) {
    std::string s = "(";
    for (size_t i = 0; i < tuple_.size(); ++i) s += (i ? ", " : "") + tuple_[i].ToString();
    return s + ")";
  }
  return shape_.ToString() + " " + FormatLiteralValues(*this);
}

std::string FormatF32(float value) {
  uint32_t bits = std::bit_cast<uint32_t>(value);
  if (std::isnan(value)) {
    if (bits == 0x7fc00000u) return "nan";
    char buf[24];
    std::snprintf(buf, sizeof(buf), "nan(0x%08x)", bits);
    return buf;
  }
  if (std::isinf(value)) return value > 0 ? "inf" : "-inf";
  char buf[32];
  auto res = std::to_chars(buf, buf + sizeof(buf), value);
  return std::string(buf, res.ptr);
}

std::string FormatElement(const Literal& lit, int64_t i) {
  return DispatchElementType(lit.shape().type(), [&](auto tag) -> std::string {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_same_v<T, float>) {
      return FormatF32(lit.Get<float>(i));
    } else if constexpr (std::is_same_v<T, uint8_t>) {
      return lit.Get<uint8_t>(i) ? "true" : "false";
    } else {
      return std::to_string(lit.Get<T>(i));
    }
  });
}

namespace {

// True if the nonzero decimal `digits` ([-+]d*[.d*][e[-+]d+]) has magnitude >= 1: then a
// from_chars range error is an overflow, else an underflow (f32 covers [1e-38, 3e38]).
bool MagnitudeAtLeastOne(std::string_view digits) {
  size_t i = 0;
  if (i < digits.size() && (digits[i] == '-' || digits[i] == '+')) ++i;
  int64_t lead = 0;  // decimal exponent of the leading nonzero digit, before the e-part
  bool found = false, point = false;
  int64_t int_digits = 0, frac_pos = 0;
  for (; i < digits.size() && digits[i] != 'e' && digits[i] != 'E'; ++i) {
    if (digits[i] == '.') {
      point = true;
      continue;
    }
    if (point) ++frac_pos;
    if (!point && found) ++int_digits;
    if (!found && digits[i] != '0') {
      found = true;
      lead = point ? -frac_pos : 0;
    }
  }
  if (found && lead == 0) lead = int_digits;  // digits after the leading one, before the point
  int64_t exponent = 0;
  if (i < digits.size()) {
    std::string_view e = digits.substr(i + 1);
    bool neg = !e.empty() && e.front() == '-';
    if (!e.empty() && (e.front() == '-' || e.front() == '+')) e.remove_prefix(1);
    for (char c : e) exponent = std::min<int64_t>(exponent * 10 + (c - '0'), int64_t{1} << 40);
    if (neg) exponent = -exponent;
  }
  return lead + exponent >= 0;
}

// The f32 spellings (docs/ir.md §4): `inf`, `nan`, `nan(0xXXXXXXXX)` with the full 32-bit pattern
// (XLA's `-nan` too), or a decimal rounded to nearest per IEEE 754. A finite decimal that rounds
// beyond the largest finite f32 is an error, as in XLA's parser; one that underflows becomes the
// nearest subnormal or a signed zero.
std::string ParseF32(std::string_view text, float* out) {
  bool negative = !text.empty() && text.front() == '-';
  std::string_view body = text;
  if (!body.empty() && (body.front() == '-' || body.front() == '+')) body.remove_prefix(1);
  if (body == "inf") {
    *out =
        negative ? -std::numeric_limits<float>::infinity() : std::numeric_limits<float>::infinity();
    return "";
  }
  if (body == "nan") {
    *out = std::bit_cast<float>(negative ? 0xffc00000u : 0x7fc00000u);
    return "";
  }
  if (body.starts_with("nan(")) {
    std::string_view hex =
        body.ends_with(")") && body.size() >= 7 ? body.substr(6, body.size() - 7) : "";
    uint32_t bits = 0;
    auto r = std::from_chars(hex.data(), hex.data() + hex.size(), bits, 16);
    if (text != body || !body.starts_with("nan(0x") || hex.size() != 8 || r.ec != std::errc() ||
        r.ptr != hex.data() + hex.size() || !std::isnan(std::bit_cast<float>(bits))) {
      return "expected a NaN spelled nan, -nan or nan(0xXXXXXXXX) with the full 32-bit pattern, "
             "got '" +
             std::string(text) + "'";
    }
    *out = std::bit_cast<float>(bits);
    return "";
  }
  // from_chars rejects a leading '+'; the sign is put back for '-'.
  std::string_view digits = !text.empty() && text.front() == '+' ? text.substr(1) : text;
  float v = 0;
  auto r = std::from_chars(digits.data(), digits.data() + digits.size(), v);
  // Other spellings of the specials ("infinity", "NaN") are from_chars's, not the IR's.
  bool special = r.ec == std::errc() && !std::isfinite(v);
  if (r.ptr != digits.data() + digits.size() || digits.empty() || special ||
      (r.ec != std::errc() && r.ec != std::errc::result_out_of_range)) {
    return "expected an f32 value, got '" + std::string(text) + "'";
  }
  if (r.ec == std::errc::result_out_of_range) {
    // from_chars reports a range error only when the rounded value is 0 or infinite.
    if (MagnitudeAtLeastOne(digits)) {
      return "value " + std::string(text) +
             " is out of range for f32 (beyond its largest finite value; write inf for infinity)";
    }
    v = negative ? -0.0f : 0.0f;
  }
  *out = v;
  return "";
}

template <typename T>
std::string ParseInt(std::string_view text, T* out) {
  std::string_view digits = !text.empty() && text.front() == '+' ? text.substr(1) : text;
  auto r = std::from_chars(digits.data(), digits.data() + digits.size(), *out);
  if (r.ec != std::errc() || r.ptr != digits.data() + digits.size() || digits.empty()) {
    return "expected an integer value in range, got '" + std::string(text) + "'";
  }
  return "";
}

}  // namespace

std::string ParseElement(std::string_view text, Literal& lit, int64_t i) {
  return DispatchElementType(lit.shape().type(), [&](auto tag) -> std::string {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_same_v<T, float>) {
      float v = 0;
      std::string err = ParseF32(text, &v);
      if (err.empty()) lit.Set<float>(i, v);
      return err;
    } else if constexpr (std::is_same_v<T, uint8_t>) {
      if (text == "true" || text == "1") {
        lit.Set<uint8_t>(i, 1);
      } else if (text == "false" || text == "0") {
        lit.Set<uint8_t>(i, 0);
      } else {
        return "expected a pred value (true or false), got '" + std::string(text) + "'";
      }
      return "";
    } else {
      T v{};
      std::string err = ParseInt(text, &v);
      if (err.empty()) lit.Set<T>(i, v);
      return err;
    }
  });
}

namespace {

void FormatLevel(const Literal& lit, int dim, int64_t* index, std::string* out) {
  const auto& dims = lit.shape().dims();
  if (dim == static_cast<int>(dims.size())) {
    *out += FormatElement(lit, (*index)++);
    return;
  }
  *out += '{';
  for (int64_t i = 0; i < dims[static_cast<size_t>(dim)]; ++i) {
    if (i) *out += ", ";
    FormatLevel(lit, dim + 1, index, out);
  }
  *out += '}';
}

}  // namespace

std::string FormatLiteralValues(const Literal& lit) {
  std::string out;
  int64_t index = 0;
  FormatLevel(lit, 0, &index, &out);
  return out;
}

}  // namespace detrain::ir
