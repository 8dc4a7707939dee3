// Canonical JSON for everything detrain hashes (schemas/canonical-json.md).
//
// Modelled on RFC 8785 (JCS): object members sorted, no insignificant whitespace, UTF-8 output,
// minimal string escaping, and numbers in ECMAScript's shortest round-trip form. One deliberate
// difference: integers that nlohmann/json holds as int64/uint64 are printed exactly (seeds,
// sizes and counters must not pass through a double). Keys are sorted by their UTF-8 bytes,
// which is Unicode code point order (JCS sorts by UTF-16 code units; the two differ only when
// one key has a code point above U+FFFF where another has one in U+E000..U+FFFF).
//
// Thread safety: pure functions.
#ifndef DETRAIN_ATTEST_CANONICAL_JSON_H_
#define DETRAIN_ATTEST_CANONICAL_JSON_H_

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "base/status.h"

namespace detrain::attest {

// Fails on NaN or infinite numbers and on strings that are not valid UTF-8.
Result<std::string> CanonicalJson(const nlohmann::json& value);

// Parses JSON text; errors give the byte offset and what was expected. Duplicate object keys
// are rejected (canonical input never has them, and accepting them would hide tampering), and so
// are numbers out of a double's range and nesting deeper than kMaxJsonDepth (a parsed value is
// copied, compared and printed recursively). Never throws.
inline constexpr size_t kMaxJsonDepth = 256;
Result<nlohmann::json> ParseJson(std::string_view text);

// ParseJson for a large object of which one member is wanted (a safetensors header's
// "__metadata__", beside a million tensors): the same checks and errors, but the members are
// parsed one at a time (base/json_parse.h) and all but `key` dropped, so memory stays that of
// the largest member and time linear. Returns the member's value, or nullopt when the object has
// no such member; *is_object is false (and the result nullopt) when the text is not an object.
Result<std::optional<nlohmann::json>> ParseJsonMember(std::string_view text, std::string_view key,
                                                      bool* is_object);

// ECMAScript Number::toString for a finite double: shortest digits that round-trip.
std::string FormatJsonNumber(double value);

// True when `s` is well-formed UTF-8 (no overlongs, no surrogates, <= U+10FFFF).
bool IsValidUtf8(std::string_view s);

}  // namespace detrain::attest

#endif  // DETRAIN_ATTEST_CANONICAL_JSON_H_
