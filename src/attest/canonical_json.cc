// See canonical_json.h and schemas/canonical-json.md.
#include "attest/canonical_json.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <optional>
#include <set>
#include <string>

#include "base/json_parse.h"

namespace detrain::attest {
namespace {

void AppendString(std::string_view s, std::string& out) {
  static constexpr char kHex[] = "0123456789abcdef";
  out += '"';
  for (unsigned char c : s) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\b':
        out += "\\b";
        break;
      case '\f':
        out += "\\f";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (c < 0x20) {
          out += "\\u00";
          out += kHex[c >> 4];
          out += kHex[c & 15];
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  out += '"';
}

Status Append(const nlohmann::json& v, std::string& out) {
  using Type = nlohmann::json::value_t;
  switch (v.type()) {
    case Type::null:
      out += "null";
      return Status::Ok();
    case Type::boolean:
      out += v.get<bool>() ? "true" : "false";
      return Status::Ok();
    case Type::number_integer:
      out += std::to_string(v.get<int64_t>());
      return Status::Ok();
    case Type::number_unsigned:
      out += std::to_string(v.get<uint64_t>());
      return Status::Ok();
    case Type::number_float: {
      double d = v.get<double>();
      if (!std::isfinite(d)) return InvalidArgument("canonical JSON cannot hold NaN or infinity");
      out += FormatJsonNumber(d);
      return Status::Ok();
    }
    case Type::string: {
      const auto& s = v.get_ref<const std::string&>();
      if (!IsValidUtf8(s)) return InvalidArgument("canonical JSON string is not valid UTF-8");
      AppendString(s, out);
      return Status::Ok();
    }
    case Type::array: {
      out += '[';
      bool first = true;
      for (const auto& e : v) {
        if (!first) out += ',';
        first = false;
        DETRAIN_RETURN_IF_ERROR(Append(e, out));
      }
      out += ']';
      return Status::Ok();
    }
    case Type::object: {
      // nlohmann::json objects are std::map<std::string, ...>: iteration is bytewise key order.
      out += '{';
      bool first = true;
      for (auto it = v.begin(); it != v.end(); ++it) {
        if (!first) out += ',';
        first = false;
        if (!IsValidUtf8(it.key())) return InvalidArgument("canonical JSON key is not valid UTF-8");
        AppendString(it.key(), out);
        out += ':';
        DETRAIN_RETURN_IF_ERROR(Append(it.value(), out));
      }
      out += '}';
      return Status::Ok();
    }
    case Type::binary:
      return InvalidArgument("canonical JSON cannot hold binary values");
    case Type::discarded:
      return InvalidArgument("canonical JSON cannot hold a discarded value");
  }
  return Internal("unknown JSON value type");
}

}  // namespace

std::string FormatJsonNumber(double value) {
  if (value == 0) return "0";  // also -0, as ECMAScript prints it
  // Shortest round-trip digits and exponent, from std::to_chars in scientific form.
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof(buf), value, std::chars_format::scientific);
  std::string sci(buf, res.ptr);
  std::string sign;
  if (sci[0] == '-') {
    sign = "-";
    sci.erase(0, 1);
  }
  size_t e_pos = sci.find('e');
  std::string digits = sci.substr(0, e_pos);
  digits.erase(std::remove(digits.begin(), digits.end(), '.'), digits.end());
  int exp10 = std::stoi(sci.substr(e_pos + 1));
  int k = static_cast<int>(digits.size());
  int n = exp10 + 1;  // value = 0.d1d2...dk * 10^n, as in ECMA-262 Number::toString
  std::string out;
  if (k <= n && n <= 21) {
    out = digits + std::string(static_cast<size_t>(n - k), '0');
  } else if (0 < n && n <= 21) {
    out = digits.substr(0, static_cast<size_t>(n)) + "." + digits.substr(static_cast<size_t>(n));
  } else if (-6 < n && n <= 0) {
    out = "0." + std::string(static_cast<size_t>(-n), '0') + digits;
  } else {
    std::string e = (n - 1 >= 0 ? "+" : "-") + std::to_string(std::abs(n - 1));
    out = digits.substr(0, 1);
    if (k > 1) out += "." + digits.substr(1);
    out += "e" + e;
  }
  return sign + out;
}

bool IsValidUtf8(std::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    size_t len;
    uint32_t cp;
    if (c < 0x80) {
      ++i;
      continue;
    }
    if ((c & 0xE0) == 0xC0) {
      len = 2;
      cp = c & 0x1F;
    } else if ((c & 0xF0) == 0xE0) {
      len = 3;
      cp = c & 0x0F;
    } else if ((c & 0xF8) == 0xF0) {
      len = 4;
      cp = c & 0x07;
    } else
      return false;
    if (i + len > s.size()) return false;
    for (size_t j = 1; j < len; ++j) {
      unsigned char cc = static_cast<unsigned char>(s[i + j]);
      if ((cc & 0xC0) != 0x80) return false;
      cp = (cp << 6) | (cc & 0x3F);
    }
    static constexpr uint32_t kMin[5] = {0, 0, 0x80, 0x800, 0x10000};
    if (cp < kMin[len] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return false;
    i += len;
  }
  return true;
}

Result<std::string> CanonicalJson(const nlohmann::json& value) {
  std::string out;
  DETRAIN_RETURN_IF_ERROR(Append(value, out));
  return out;
}

namespace {

// The byte offset where `text` nests arrays and objects deeper than kMaxJsonDepth, or npos.
// The parser itself is iterative, but copying, comparing, destroying and printing a parsed value
// recurse once per level, so hostile input (100000 '[') would overflow the stack later.
size_t TooDeepAt(std::string_view text) {
  size_t depth = 0;
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\') {
        ++i;
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > kMaxJsonDepth) return i;
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  return std::string_view::npos;
}

}  // namespace

namespace {

// Runs `parse` (which parses `text` with base/json_parse.h) under ParseJson's checks: the depth
// limit first, then its errors for malformed JSON, then the first repeated key.
template <typename Parse>
Status CheckedParse(std::string_view text, const Parse& parse) {
  if (size_t at = TooDeepAt(text); at != std::string_view::npos) {
    return InvalidArgument("invalid JSON at byte " + std::to_string(at) +
                           ": arrays and objects nested more than " +
                           std::to_string(kMaxJsonDepth) + " deep");
  }
  std::optional<std::string> duplicate;
  try {
    parse(&duplicate);
  } catch (const nlohmann::json::parse_error& e) {
    return InvalidArgument("invalid JSON at byte " + std::to_string(e.byte) + ": " + e.what());
  } catch (const nlohmann::json::exception& e) {
    // Not only parse_error: a number too large for a double ("1e400") throws out_of_range.
    return InvalidArgument(std::string("invalid JSON: ") + e.what());
  }
  if (duplicate.has_value()) {
    return InvalidArgument("invalid JSON: duplicate object key \"" + *duplicate + "\"");
  }
  return Status::Ok();
}

}  // namespace

Result<nlohmann::json> ParseJson(std::string_view text) {
  nlohmann::json j;
  DETRAIN_RETURN_IF_ERROR(CheckedParse(
      text, [&](std::optional<std::string>* duplicate) { j = ParseJsonText(text, duplicate); }));
  return j;
}

Result<std::optional<nlohmann::json>> ParseJsonMember(std::string_view text, std::string_view key,
                                                      bool* is_object) {
  std::optional<nlohmann::json> kept;
  *is_object = false;
  DETRAIN_RETURN_IF_ERROR(CheckedParse(text, [&](std::optional<std::string>* duplicate) {
    std::optional<JsonRepeatedKey> repeat;  // the first, by position in the text
    std::set<std::string> top;
    auto member = [&](std::string k, size_t position, nlohmann::json value) {
      if (k == key) kept = std::move(value);  // of a repeated key the last, as ParseJson's
      auto [it, inserted] = top.insert(std::move(k));
      if (!inserted && !repeat.has_value()) repeat = JsonRepeatedKey{*it, position};
    };
    std::optional<JsonRepeatedKey> inside;
    *is_object = StreamJsonObject(text, member, &inside);
    if (inside.has_value() && (!repeat.has_value() || inside->position < repeat->position)) {
      repeat = std::move(inside);
    }
    if (repeat.has_value()) *duplicate = repeat->key;
  }));
  if (!*is_object) return std::optional<nlohmann::json>();
  return kept;
}

}  // namespace detrain::attest
