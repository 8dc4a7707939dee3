// See number.h.
#include "frontend/number.h"

#include <charconv>
#include <cmath>
#include <limits>
#include <system_error>

namespace detrain::frontend {
namespace {

// std::from_chars reports result_out_of_range both when the value is too large and when it
// rounds to zero. The decimal exponent of the first significant digit tells which: a number
// whose first significant digit is at or left of the point has magnitude >= 1.
bool MagnitudeAtLeastOne(std::string_view text) {
  size_t i = 0;
  int64_t point_digits = 0;  // significant position of the first nonzero digit, relative to '.'
  bool seen_point = false;
  bool found = false;
  int64_t lead = 0;  // digits of the integer part after the first nonzero digit
  for (; i < text.size() && text[i] != 'e' && text[i] != 'E'; ++i) {
    char c = text[i];
    if (c == '.') {
      seen_point = true;
      continue;
    }
    if (!found && c != '0') {
      found = true;
      point_digits = seen_point ? -(lead + 1) : 0;
    }
    if (!found && seen_point) ++lead;  // leading zeros after the point
    if (found && !seen_point) ++point_digits;
  }
  if (!found) return false;  // zero: never out of range anyway
  // point_digits > 0: the first digit is left of the point (10^(point_digits-1) <= |x|).
  int64_t exp = 0;
  if (i < text.size()) {
    ++i;
    bool negative = i < text.size() && text[i] == '-';
    if (i < text.size() && (text[i] == '+' || text[i] == '-')) ++i;
    for (; i < text.size(); ++i) {
      exp = std::min<int64_t>(exp * 10 + (text[i] - '0'), int64_t{1} << 40);  // saturates
    }
    if (negative) exp = -exp;
  }
  int64_t decimal_exponent = (point_digits > 0 ? point_digits - 1 : point_digits) + exp;
  return decimal_exponent >= 0;
}

template <typename T>
NumberStatus ParseFloating(std::string_view text, T* out) {
  T v = 0;
  auto r = std::from_chars(text.data(), text.data() + text.size(), v);
  if (text.empty() || r.ptr != text.data() + text.size()) return NumberStatus::kMalformed;
  if (r.ec == std::errc::result_out_of_range) {
    if (MagnitudeAtLeastOne(text)) return NumberStatus::kOutOfRange;
    v = 0;  // rounds to zero: accepted, as IEEE 754 rounding to nearest gives
  } else if (r.ec != std::errc()) {
    return NumberStatus::kMalformed;
  }
  *out = v;
  return NumberStatus::kOk;
}

}  // namespace

NumberStatus ParseF32(std::string_view text, float* out) { return ParseFloating(text, out); }

NumberStatus ParseF64(std::string_view text, double* out) {
  double v;
  NumberStatus s = ParseFloating(text, &v);
  if (s != NumberStatus::kOk) return s;
  if (std::fabs(v) > static_cast<double>(std::numeric_limits<float>::max())) {
    // Beyond f32's largest finite value: an error when it would also round to infinity in f32.
    float f;
    if (ParseF32(text, &f) != NumberStatus::kOk) return NumberStatus::kOutOfRange;
  }
  *out = v;
  return NumberStatus::kOk;
}

NumberStatus ParseI64(std::string_view text, int64_t* out, uint64_t max) {
  uint64_t v = 0;
  auto r = std::from_chars(text.data(), text.data() + text.size(), v);
  if (text.empty() || r.ptr != text.data() + text.size()) return NumberStatus::kMalformed;
  if (r.ec == std::errc::result_out_of_range) return NumberStatus::kOutOfRange;
  if (r.ec != std::errc()) return NumberStatus::kMalformed;
  if (v > max) return NumberStatus::kOutOfRange;
  *out = static_cast<int64_t>(v);
  return NumberStatus::kOk;
}

std::string F32RangeMessage(std::string_view text) {
  return "'" + Abbreviate(text) + "' is out of range for f32 (largest finite 3.4028235e+38)";
}

std::string I64RangeMessage(std::string_view text, bool negated) {
  if (negated) {
    return "'-" + Abbreviate(text) + "' is out of range for int64 (smallest -9223372036854775808)";
  }
  return "'" + Abbreviate(text) + "' is out of range for int64 (largest 9223372036854775807)";
}

std::string Abbreviate(std::string_view text, size_t max) {
  if (text.size() <= max) return std::string(text);
  return std::string(text.substr(0, max)) + "...";
}

}  // namespace detrain::frontend
