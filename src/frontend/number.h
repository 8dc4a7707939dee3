// Number literals of the .dt language (docs/language.md §Lexical structure, "Numbers"): the one
// place their text becomes a value. Conversion is correctly rounded and locale-free
// (std::from_chars). The rule, for every literal:
//   - its magnitude must not exceed the largest finite f32 (3.4028235e+38): every number ends up
//     as, or meets, an f32 value, so `1e39` and `1e999` are errors, never an infinity;
//   - an underflow rounds to nearest as IEEE 754 says (a subnormal, or zero) and is accepted;
//   - an integer must fit int64 (a setting may narrow that range further).
// The text is a lexer number token: digits, an optional '.', an optional exponent; no sign
// (a leading '-' is the negation operator, applied by the caller).
//
// Thread safety: pure functions.
#ifndef DETRAIN_FRONTEND_NUMBER_H_
#define DETRAIN_FRONTEND_NUMBER_H_

#include <cstdint>
#include <string>
#include <string_view>

namespace detrain::frontend {

enum class NumberStatus {
  kOk,
  kOutOfRange,  // too large for the type (never returned for an underflow)
  kMalformed,   // not a number token of that kind (e.g. "0.5" as an integer)
};

// Correctly rounded to f32.
NumberStatus ParseF32(std::string_view text, float* out);
// Correctly rounded to f64, and within f32's finite range (the rule above).
NumberStatus ParseF64(std::string_view text, double* out);
// A decimal integer within [0, max] (max defaults to int64's largest).
NumberStatus ParseI64(std::string_view text, int64_t* out, uint64_t max = INT64_MAX);

// "'1e39' is out of range for f32 (largest finite 3.4028235e+38)"
std::string F32RangeMessage(std::string_view text);
// "'99999999999999999999' is out of range for int64 (largest 9223372036854775807)", or for a
// negated literal "'-9223372036854775809' is out of range for int64 (smallest -9223...808)".
std::string I64RangeMessage(std::string_view text, bool negated = false);

// At most `max` characters of `text`, with "..." in place of the rest: for echoing user text
// (a name, a number, an expression) in a message without copying megabytes into it.
std::string Abbreviate(std::string_view text, size_t max = 64);

}  // namespace detrain::frontend

#endif  // DETRAIN_FRONTEND_NUMBER_H_
