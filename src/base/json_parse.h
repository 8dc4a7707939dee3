// JSON text into nlohmann::json in one pass, in time linear in the text (object keys cost a
// logarithm each), noting keys that an object repeats; and a streaming form for a large
// top-level object, which hands over one member at a time.
//
// Why not nlohmann::json::parse with a parser callback, which is how duplicate keys used to be
// caught: nlohmann's callback parser (3.11.x, json_sax_dom_callback_parser::end_object) scans
// the whole enclosing object or array for a discarded value every time an inner object ends, so
// a safetensors header of n tensor objects took time quadratic in n (17 s at 50,000 empty
// tensors). Both functions here build values with the plain DOM parser's logic on nlohmann's SAX
// interface (public API only), and find a repeated key by a lookup in the object being built.
//
// Thread safety: pure functions.
#ifndef DETRAIN_BASE_JSON_PARSE_H_
#define DETRAIN_BASE_JSON_PARSE_H_

#include <cstddef>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

namespace detrain {

// Parses `text` (one JSON value and nothing after it but whitespace) exactly as
// nlohmann::json::parse(text) does: the same value, and on malformed input the same exception
// (nlohmann::json::parse_error with its byte offset, out_of_range for a number beyond a
// double). For a key an object holds twice the value is the last one, as nlohmann's, and
// *duplicate_key is set to the first such key (in text order); it is left alone otherwise.
nlohmann::json ParseJsonText(std::string_view text, std::optional<std::string>* duplicate_key);

// A key that an object holds twice: the key, and its position, the number of keys (of any
// object, nested ones included) that come before its second occurrence in the text.
struct JsonRepeatedKey {
  std::string key;
  size_t position = 0;
};

// Parses `text` as ParseJsonText does (the same exceptions), but when its value is an object,
// hands each member to `member(key, position, value)` as soon as the member's value ends, in
// text order, and keeps none of them: a reader of a large object holds one member's value at a
// time. `position` counts keys as JsonRepeatedKey does. Keys are passed as they come; a repeat at
// the top level is the caller's to find (it sees every key). A repeat inside a member's value
// sets *repeated_inside (the first one in text order, if it is not set yet). Returns false when
// the value is not an object (it is parsed to the end all the same, and `member` is not called).
bool StreamJsonObject(
    std::string_view text,
    const std::function<void(std::string key, size_t position, nlohmann::json value)>& member,
    std::optional<JsonRepeatedKey>* repeated_inside);

}  // namespace detrain

#endif  // DETRAIN_BASE_JSON_PARSE_H_
