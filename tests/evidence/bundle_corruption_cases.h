// Mutations of one value, object or line, for the corruption suite (bundle_corruption_test.cc):
// a changed value of the same type, type changes, truncations, and JSON text with one object's
// keys reordered or given twice. Canonical JSON otherwise, so that only the intended edit differs.
#ifndef DETRAIN_TESTS_ATTEST_BUNDLE_CORRUPTION_CASES_H_
#define DETRAIN_TESTS_ATTEST_BUNDLE_CORRUPTION_CASES_H_

#include <algorithm>
#include <cctype>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "attest/canonical_json.h"

namespace detrain::tamper_test {

using Ptr = nlohmann::json::json_pointer;

enum class ObjEdit { kNone, kReverse, kDuplicateSame, kDuplicateOther };

// A value of the same type that differs from `v`.
inline nlohmann::json Flip(const nlohmann::json& v) {
  if (v.is_string()) {
    std::string s = v.get<std::string>();
    if (s.empty()) return "x";
    char& c = s[s.size() / 2];
    if (std::isdigit(static_cast<unsigned char>(c))) {
      c = c == '9' ? '0' : static_cast<char>(c + 1);
    } else if (std::islower(static_cast<unsigned char>(c))) {
      c = c == 'z' ? 'a' : static_cast<char>(c + 1);
    } else if (std::isupper(static_cast<unsigned char>(c))) {
      c = c == 'Z' ? 'A' : static_cast<char>(c + 1);
    } else {
      c = 'x';
    }
    return s;
  }
  if (v.is_number_unsigned()) return v.get<uint64_t>() + 1;
  if (v.is_number_integer()) return v.get<int64_t>() + 1;
  if (v.is_number_float()) return v.get<double>() == 0 ? 1.0 : v.get<double>() * 2;
  if (v.is_boolean()) return !v.get<bool>();
  return 0;
}

// Other types in place of `v`: (label, value). Two per value: the same text as another scalar
// type, and null (an array for a null).
inline std::vector<std::pair<std::string, nlohmann::json>> TypeChanges(const nlohmann::json& v) {
  std::vector<std::pair<std::string, nlohmann::json>> out;
  if (v.is_number()) out.emplace_back("number->string", v.dump());
  if (v.is_string()) out.emplace_back("string->number", 7);
  if (v.is_boolean()) out.emplace_back("bool->string", v.dump());
  if (v.is_null()) {
    out.emplace_back("null->array", nlohmann::json::array({v}));
  } else {
    out.emplace_back("->null", nullptr);
  }
  return out;
}

// `v` cut short: half a string, an integer without its last digit, an array without its last
// element; nullopt where that is `v` itself.
inline std::optional<nlohmann::json> Truncated(const nlohmann::json& v) {
  if (v.is_string() && !v.get<std::string>().empty()) {
    return v.get<std::string>().substr(0, v.get<std::string>().size() / 2);
  }
  if (v.is_number_unsigned() && v.get<uint64_t>() >= 10) return v.get<uint64_t>() / 10;
  if (v.is_number_integer() && !v.is_number_unsigned() && v.get<int64_t>() >= 10) {
    return v.get<int64_t>() / 10;
  }
  if (v.is_number_float()) {
    std::string t = attest::FormatJsonNumber(v.get<double>());
    if (t.size() > 2) {
      t.pop_back();
      double d = std::stod(t);
      if (d != v.get<double>()) return d;
    }
  }
  if (v.is_array() && !v.empty()) {
    nlohmann::json a = v;
    a.erase(a.size() - 1);
    return a;
  }
  return std::nullopt;
}

// Canonical JSON text of `j`, but with the object at `target` edited.
inline std::string Dump(const nlohmann::json& j, const Ptr& here, const Ptr& target, ObjEdit edit) {
  if (j.is_object()) {
    std::vector<std::pair<std::string, nlohmann::json>> kv;
    for (auto it = j.begin(); it != j.end(); ++it) kv.emplace_back(it.key(), *it);
    if (here == target && !kv.empty()) {
      if (edit == ObjEdit::kReverse) std::reverse(kv.begin(), kv.end());
      if (edit == ObjEdit::kDuplicateSame) kv.insert(kv.begin() + 1, kv[0]);
      if (edit == ObjEdit::kDuplicateOther)
        kv.insert(kv.begin() + 1, {kv[0].first, Flip(kv[0].second)});
    }
    std::string out = "{";
    for (size_t i = 0; i < kv.size(); ++i) {
      if (i > 0) out += ",";
      out += *attest::CanonicalJson(nlohmann::json(kv[i].first)) + ":";
      out += Dump(kv[i].second, here / kv[i].first, target, edit);
    }
    return out + "}";
  }
  if (j.is_array()) {
    std::string out = "[";
    for (size_t i = 0; i < j.size(); ++i) {
      if (i > 0) out += ",";
      out += Dump(j[i], here / i, target, edit);
    }
    return out + "]";
  }
  return *attest::CanonicalJson(j);
}

// Every scalar (leaves), every array and every object (including the root) of `j` — but of an
// array of more than three elements (files[], stages[], a shape) only the first, the middle and
// the last: the others are records of the same kind.
inline void Walk(const nlohmann::json& j, const Ptr& p, std::vector<Ptr>* leaves,
                 std::vector<Ptr>* arrays, std::vector<Ptr>* objects) {
  if (j.is_object()) {
    objects->push_back(p);
    for (auto it = j.begin(); it != j.end(); ++it) Walk(*it, p / it.key(), leaves, arrays, objects);
  } else if (j.is_array()) {
    arrays->push_back(p);
    std::vector<size_t> picks;
    for (size_t i = 0; i < j.size(); ++i) picks.push_back(i);
    if (j.size() > 3) picks = {0, j.size() / 2, j.size() - 1};
    for (size_t i : picks) Walk(j[i], p / i, leaves, arrays, objects);
  } else {
    leaves->push_back(p);
  }
}

// The path as the verifier's messages spell it: "config.optimizer.b1", "files[3].size".
inline std::string Dotted(const nlohmann::json& doc, const Ptr& p) {
  std::string out;
  const nlohmann::json* j = &doc;
  for (const std::string& token : [&] {
         std::vector<std::string> t;
         for (Ptr q = p; !q.empty(); q = q.parent_pointer()) t.push_back(q.back());
         std::reverse(t.begin(), t.end());
         return t;
       }()) {
    if (j->is_array()) {
      out += "[" + token + "]";
      j = &(*j)[std::stoul(token)];
    } else {
      out += (out.empty() ? "" : ".") + token;
      j = &(*j)[token];
    }
  }
  return out;
}

// The first key on the path ("" for the root).
inline std::string TopKey(const Ptr& p) {
  if (p.empty()) return "";
  Ptr q = p;
  while (!q.parent_pointer().empty()) q = q.parent_pointer();
  return q.back();
}

// The last object key on the path (the name of the field a leaf of an array belongs to).
inline std::string LastKey(const nlohmann::json& doc, const Ptr& p) {
  std::string key;
  const nlohmann::json* j = &doc;
  std::vector<std::string> tokens;
  for (Ptr q = p; !q.empty(); q = q.parent_pointer()) tokens.push_back(q.back());
  std::reverse(tokens.begin(), tokens.end());
  for (const std::string& t : tokens) {
    if (j->is_array()) {
      j = &(*j)[std::stoul(t)];
    } else {
      key = t;
      j = &(*j)[t];
    }
  }
  return key;
}

}  // namespace detrain::tamper_test

#endif  // DETRAIN_TESTS_ATTEST_BUNDLE_CORRUPTION_CASES_H_
