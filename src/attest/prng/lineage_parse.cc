// KeyLineage::FromJsonl: reads the JSON Lines format of schemas/key-lineage.md and checks its
// structure (header, sequential ids, parents before children, field types and ranges). Key
// words are kept as recorded; ReplayLineage decides whether they are right. Pure function of
// the text; thread-safe.
#include <limits>
#include <nlohmann/json.hpp>
#include <string>

#include "attest/canonical_json.h"
#include "attest/prng/lineage.h"

namespace detrain::prng {

using Json = nlohmann::json;

class LineageParser {
 public:
  explicit LineageParser(KeyLineage* lineage) : lineage_(lineage) {}

  Status Line(const Json& j) {
    if (!j.is_object() || !j.contains("type") || !j["type"].is_string()) {
      return Bad("expected an object with a string \"type\"");
    }
    const std::string type = j["type"];
    if (type == "node") return Node(j);
    if (type == "use") return Use(j);
    return Bad("unknown record type '" + type + "'");
  }

  Status Bad(const std::string& what) const {
    return DataLoss("key lineage line " + std::to_string(line_) + ": " + what);
  }
  void set_line(size_t line) { line_ = line; }

 private:
  // Unsigned integer field in [0, max].
  Status Unsigned(const Json& j, const char* name, uint64_t max, uint64_t* out) const {
    if (!j.contains(name) || !j[name].is_number_unsigned()) {
      return Bad(std::string("field \"") + name + "\" must be a non-negative integer");
    }
    *out = j[name].get<uint64_t>();
    if (*out > max) return Bad(std::string("field \"") + name + "\" is out of range");
    return Status::Ok();
  }

  Status CheckFields(const Json& j, size_t expected) const {
    if (j.size() != expected) return Bad("unexpected or missing fields in a record");
    return Status::Ok();
  }

  Status Node(const Json& j) {
    LineageNode n;
    uint64_t id = 0;
    DETRAIN_RETURN_IF_ERROR(Unsigned(j, "id", std::numeric_limits<uint64_t>::max(), &id));
    if (id != lineage_->nodes_.size()) {
      return Bad("node id " + std::to_string(id) + " is not the next id " +
                 std::to_string(lineage_->nodes_.size()));
    }
    n.id = id;
    if (!j.contains("op") || !j["op"].is_string()) return Bad("field \"op\" must be a string");
    const std::string op = j["op"];
    if (op != "seed" && op != "fold_in" && op != "split") {
      return Bad("field \"op\": unknown op '" + op + "'");
    }
    if (!j.contains("key") || !j["key"].is_array() || j["key"].size() != 2) {
      return Bad("field \"key\" must be [hi, lo]");
    }
    uint64_t words[2];
    for (int w = 0; w < 2; ++w) {
      const Json& v = j["key"][w];
      if (!v.is_number_unsigned() || v.get<uint64_t>() > 0xFFFFFFFFu) {
        return Bad("field \"key[" + std::to_string(w) +
                   "]\": key words must be integers in [0, 2^32 - 1]");
      }
      words[w] = v.get<uint64_t>();
    }
    n.key = Key{static_cast<uint32_t>(words[0]), static_cast<uint32_t>(words[1])};
    if (!j.contains("argument") || !j["argument"].is_number_integer()) {
      return Bad("field \"argument\" must be an integer");
    }
    if (j["argument"].is_number_unsigned() &&
        j["argument"].get<uint64_t>() > uint64_t{std::numeric_limits<int64_t>::max()}) {
      return Bad("field \"argument\" is out of range");
    }
    n.argument = j["argument"].get<int64_t>();
    if (op == "seed") {
      n.op = LineageOp::kSeed;
      if (!j.contains("parent") || !j["parent"].is_null()) return Bad("a seed has parent null");
      DETRAIN_RETURN_IF_ERROR(CheckFields(j, 6));
    } else {
      uint64_t parent = 0;
      DETRAIN_RETURN_IF_ERROR(Unsigned(j, "parent", std::numeric_limits<uint64_t>::max(), &parent));
      if (parent >= id) return Bad("parent " + std::to_string(parent) + " is not an earlier node");
      n.parent = parent;
      if (op == "fold_in") {
        n.op = LineageOp::kFoldIn;
        if (n.argument < 0 || n.argument > 0xFFFFFFFFll) return Bad("fold_in data is not a uint32");
        DETRAIN_RETURN_IF_ERROR(CheckFields(j, 6));
      } else if (op == "split") {
        n.op = LineageOp::kSplit;
        DETRAIN_RETURN_IF_ERROR(
            Unsigned(j, "count", std::numeric_limits<uint32_t>::max(), &n.count));
        if (n.argument < 0 || static_cast<uint64_t>(n.argument) >= n.count) {
          return Bad("split index is not in [0, count)");
        }
        DETRAIN_RETURN_IF_ERROR(CheckFields(j, 7));
      } else {
        return Bad("unknown op '" + op + "'");
      }
    }
    lineage_->nodes_.push_back(n);
    return Status::Ok();
  }

  Status Use(const Json& j) {
    KeyUse u;
    DETRAIN_RETURN_IF_ERROR(Unsigned(j, "key", std::numeric_limits<uint64_t>::max(), &u.key_id));
    if (u.key_id >= lineage_->nodes_.size()) return Bad("use of a key that is not an earlier node");
    if (!j.contains("purpose") || !j["purpose"].is_string() ||
        j["purpose"].get<std::string>().empty()) {
      return Bad("field \"purpose\" must be a non-empty string");
    }
    DETRAIN_RETURN_IF_ERROR(CheckFields(j, 3));
    u.purpose = j["purpose"];
    u.position = lineage_->nodes_.size();
    lineage_->uses_.push_back(std::move(u));
    return Status::Ok();
  }

  KeyLineage* lineage_;
  size_t line_ = 0;
};

Result<KeyLineage> KeyLineage::FromJsonl(std::string_view text) {
  KeyLineage lineage(Mode::kPartitionable);
  LineageParser parser(&lineage);
  size_t line_no = 0;
  bool have_header = false;
  while (!text.empty()) {
    const size_t end = text.find('\n');
    if (end == std::string_view::npos) {
      parser.set_line(line_no + 1);
      return parser.Bad("the last line is not terminated by a newline (truncated file?)");
    }
    const std::string_view line = text.substr(0, end);
    text.remove_prefix(end + 1);
    parser.set_line(++line_no);
    // attest::ParseJson, not Json::parse: a key given twice is an error, not last-wins.
    Result<Json> parsed = attest::ParseJson(line);
    if (!parsed.ok())
      return parser.Bad("not valid JSON (" + std::string(parsed.status().message()) + ")");
    const Json j = std::move(*parsed);
    if (!have_header) {
      if (!j.is_object() || j.size() != 3 || !j.contains("format") || !j["format"].is_string() ||
          j["format"].get<std::string>() != kLineageFormat || !j.contains("version") ||
          j["version"] != kLineageVersion || !j.contains("mode") || !j["mode"].is_string()) {
        return parser.Bad(
            "expected the header {\"format\":\"detrain-key-lineage\",\"mode\":...,"
            "\"version\":1}");
      }
      auto mode = ParseMode(j["mode"].get<std::string>());
      if (!mode.ok()) return parser.Bad(mode.status().message());
      lineage.mode_ = *mode;
      have_header = true;
      continue;
    }
    DETRAIN_RETURN_IF_ERROR(parser.Line(j));
  }
  if (!have_header) return DataLoss("key lineage is empty (no header line)");
  return lineage;
}

}  // namespace detrain::prng
