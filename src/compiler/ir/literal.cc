// See literal.h.
#include "compiler/ir/literal.h"

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
  if (body.starts_with("nan(0x") && body.ends_with(")") && !negative) {
    std::string_view hex = body.substr(6, body.size() - 7);
    uint32_t bits = 0;
    auto r = std::from_chars(hex.data(), hex.data() + hex.size(), bits, 16);
    if (r.ec != std::errc() || r.ptr != hex.data() + hex.size() || hex.size() != 8 ||
        !std::isnan(std::bit_cast<float>(bits))) {
      return "expected a NaN bit pattern nan(0xXXXXXXXX), got '" + std::string(text) + "'";
    }
    *out = std::bit_cast<float>(bits);
    return "";
  }
  // from_chars rejects a leading '+'; the sign is put back for '-'.
  std::string_view digits = text.front() == '+' ? text.substr(1) : text;
  float v = 0;
  auto r = std::from_chars(digits.data(), digits.data() + digits.size(), v);
  if (r.ptr != digits.data() + digits.size() || digits.empty() ||
      (r.ec != std::errc() && r.ec != std::errc::result_out_of_range)) {
    return "expected an f32 value, got '" + std::string(text) + "'";
  }
  if (r.ec == std::errc::result_out_of_range) {
    // from_chars leaves v unchanged on range errors; decide overflow vs underflow ourselves.
    double d = 0;
    std::from_chars(digits.data(), digits.data() + digits.size(), d);
    v = static_cast<float>(d);
    if (std::fabs(d) < 1) v = negative ? -0.0f : 0.0f;
    if (std::fabs(d) >= 1)
      v = negative ? -std::numeric_limits<float>::infinity()
                   : std::numeric_limits<float>::infinity();
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
