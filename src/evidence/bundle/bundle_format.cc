// See bundle_format.h.
#include "evidence/bundle/bundle_format.h"

#include <charconv>
#include <cstdio>
#include <cstring>

#include "attest/canonical_json.h"

namespace detrain::bundle {
namespace {

using attest::Digest256;
using nlohmann::json;

bool ParseHexBytes(std::string_view hex, size_t size, std::string* out) {
  if (hex.size() != 2 * size) return false;
  out->clear();
  for (size_t i = 0; i < size; ++i) {
    unsigned v = 0;
    auto r = std::from_chars(hex.data() + 2 * i, hex.data() + 2 * i + 2, v, 16);
    if (r.ec != std::errc() || r.ptr != hex.data() + 2 * i + 2) return false;
    if (hex[2 * i] >= 'A' && hex[2 * i] <= 'F') return false;  // lowercase only
    if (hex[2 * i + 1] >= 'A' && hex[2 * i + 1] <= 'F') return false;
    out->push_back(static_cast<char>(v));
  }
  return true;
}

// Field readers that never throw: each names the field in its error.
class Fields {
 public:
  Fields(const json& j, std::string where) : j_(j), where_(std::move(where)) {}
  Status Object() const {
    return j_.is_object() ? Status::Ok() : DataLoss(where_ + ": expected a JSON object");
  }
  const json* Get(const char* key) const {
    auto it = j_.find(key);
    return it == j_.end() ? nullptr : &*it;
  }
  Status Int(const char* key, int64_t* out) const {
    const json* v = Get(key);
    if (v == nullptr || !v->is_number_integer()) return Bad(key, "an integer");
    *out = v->is_number_unsigned() && v->get<uint64_t>() > INT64_MAX ? -1 : v->get<int64_t>();
    if (*out < 0) return Bad(key, "a non-negative integer");
    return Status::Ok();
  }
  Status Hex(const char* key, size_t size, std::string* out) const {
    const json* v = Get(key);
    if (v == nullptr || !v->is_string() || !ParseHexBytes(v->get<std::string>(), size, out)) {
      return Bad(key, std::to_string(2 * size) + " lowercase hex digits");
    }
    return Status::Ok();
  }
  Status Digest(const char* key, Digest256* out) const {
    std::string raw;
    DETRAIN_RETURN_IF_ERROR(Hex(key, 32, &raw));
    std::memcpy(out->data(), raw.data(), 32);
    return Status::Ok();
  }
  Status Bits(const char* key, uint32_t* out) const {
    std::string raw;
    DETRAIN_RETURN_IF_ERROR(Hex(key, 4, &raw));
    *out = 0;
    for (char c : raw) *out = (*out << 8) | static_cast<unsigned char>(c);
    return Status::Ok();
  }
  Status Bad(const char* key, const std::string& expected) const {
    return DataLoss(where_ + ": field \"" + key + "\": expected " + expected);
  }

 private:
  const json& j_;
  std::string where_;
};

}  // namespace

std::string CheckpointPath(int64_t steps_done) {
  char name[64];
  std::snprintf(name, sizeof(name), "%s/step-%08lld.safetensors", kCheckpointsDir,
                static_cast<long long>(steps_done));
  return name;
}

std::optional<int64_t> CheckpointStepsOf(std::string_view path) {
  std::string_view prefix = "checkpoints/step-", suffix = ".safetensors";
  if (path.size() != prefix.size() + 8 + suffix.size() || path.substr(0, prefix.size()) != prefix ||
      path.substr(prefix.size() + 8) != suffix) {
    return std::nullopt;
  }
  int64_t v = 0;
  std::string_view digits = path.substr(prefix.size(), 8);
  auto r = std::from_chars(digits.data(), digits.data() + 8, v);
  if (r.ec != std::errc() || r.ptr != digits.data() + 8) return std::nullopt;
  return v;
}

std::string_view DigestPolicyName(attest::DigestPolicy policy) {
  switch (policy) {
    case attest::DigestPolicy::kXxh3:
      return "xxh3-128";
    case attest::DigestPolicy::kXxh3Chunked:
      return "xxh3-128-chunked";
    case attest::DigestPolicy::kSha256:
      break;
  }
  return "sha256";
}

Result<attest::DigestPolicy> ParseDigestPolicy(std::string_view name) {
  if (name == "xxh3-128") return attest::DigestPolicy::kXxh3;
  if (name == "xxh3-128-chunked") return attest::DigestPolicy::kXxh3Chunked;
  if (name == "sha256") return attest::DigestPolicy::kSha256;
  return InvalidArgument("unknown step digest '" + std::string(name) +
                         "' (expected xxh3-128, xxh3-128-chunked or sha256)");
}

std::string Hex(const Digest256& d) { return attest::HexEncode(d.data(), d.size()); }
std::string Hex(std::string_view raw) {
  return attest::HexEncode(reinterpret_cast<const uint8_t*>(raw.data()), raw.size());
}
std::string BitsHex(uint32_t bits) {
  char s[9];
  std::snprintf(s, sizeof(s), "%08x", bits);
  return s;
}
json StepRecordJson(const StepRecord& r) {
  json j = {{"step", r.step},
            {"epoch", r.epoch},
            {"batch", Hex(r.batch)},
            {"key", {r.key_hi, r.key_lo}},
            {"learning_rate", static_cast<double>(FloatOfBits(r.learning_rate_bits))},
            {"learning_rate_bits", BitsHex(r.learning_rate_bits)},
            {"loss", static_cast<double>(FloatOfBits(r.loss_bits))},
            {"loss_bits", BitsHex(r.loss_bits)},
            {"state", Hex(r.state)},
            {"hash", Hex(r.hash)}};
  json tensors = json::object();
  for (const auto& [name, digest] : r.tensors) tensors[name] = Hex(digest);
  j["tensors"] = tensors;
  if (r.params_root.has_value()) {
    j["roots"] = {{"params", Hex(*r.params_root)}, {"optimizer", Hex(*r.optimizer_root)}};
  }
  if (r.eval_loss_bits.has_value()) {
    json e = {{"loss", static_cast<double>(FloatOfBits(*r.eval_loss_bits))},
              {"loss_bits", BitsHex(*r.eval_loss_bits)}};
    if (r.eval_accuracy_bits.has_value()) {
      e["accuracy"] = static_cast<double>(FloatOfBits(*r.eval_accuracy_bits));
      e["accuracy_bits"] = BitsHex(*r.eval_accuracy_bits);
    }
    j["eval"] = e;
  }
  return j;
}

Result<StepRecord> ParseStepRecord(const json& j, attest::DigestPolicy policy) {
  Fields f(j, "step record");
  DETRAIN_RETURN_IF_ERROR(f.Object());
  StepRecord r;
  const size_t size = attest::DigestSize(policy);
  DETRAIN_RETURN_IF_ERROR(f.Int("step", &r.step));
  Fields g(j, "step record " + std::to_string(r.step));
  DETRAIN_RETURN_IF_ERROR(g.Int("epoch", &r.epoch));
  DETRAIN_RETURN_IF_ERROR(g.Digest("batch", &r.batch));
  const json* key = g.Get("key");
  if (key == nullptr || !key->is_array() || key->size() != 2 || !(*key)[0].is_number_unsigned() ||
      !(*key)[1].is_number_unsigned() || (*key)[0].get<uint64_t>() > UINT32_MAX ||
      (*key)[1].get<uint64_t>() > UINT32_MAX) {
    return g.Bad("key", "two 32-bit unsigned integers");
  }
  r.key_hi = static_cast<uint32_t>((*key)[0].get<uint64_t>());
  r.key_lo = static_cast<uint32_t>((*key)[1].get<uint64_t>());
  DETRAIN_RETURN_IF_ERROR(g.Bits("learning_rate_bits", &r.learning_rate_bits));
  DETRAIN_RETURN_IF_ERROR(g.Bits("loss_bits", &r.loss_bits));
  DETRAIN_RETURN_IF_ERROR(g.Hex("state", size, &r.state));
  DETRAIN_RETURN_IF_ERROR(g.Digest("hash", &r.hash));
  const json* tensors = g.Get("tensors");
  if (tensors == nullptr || !tensors->is_object()) return g.Bad("tensors", "an object");
  for (auto it = tensors->begin(); it != tensors->end(); ++it) {
    std::string raw;
    if (!it->is_string() || !ParseHexBytes(it->get<std::string>(), size, &raw)) {
      return g.Bad(("tensors." + it.key()).c_str(),
                   "a digest of " + std::to_string(2 * size) + " lowercase hex digits");
    }
    r.tensors.emplace_back(it.key(), raw);
  }
  if (const json* roots = g.Get("roots")) {
    Fields rf(*roots, "step record " + std::to_string(r.step) + " roots");
    DETRAIN_RETURN_IF_ERROR(rf.Object());
    Digest256 p{}, o{};
    DETRAIN_RETURN_IF_ERROR(rf.Digest("params", &p));
    DETRAIN_RETURN_IF_ERROR(rf.Digest("optimizer", &o));
    r.params_root = p;
    r.optimizer_root = o;
  }
  if (const json* eval = g.Get("eval")) {
    Fields ef(*eval, "step record " + std::to_string(r.step) + " eval");
    DETRAIN_RETURN_IF_ERROR(ef.Object());
    uint32_t bits = 0;
    DETRAIN_RETURN_IF_ERROR(ef.Bits("loss_bits", &bits));
    r.eval_loss_bits = bits;
    if (ef.Get("accuracy_bits") != nullptr) {
      DETRAIN_RETURN_IF_ERROR(ef.Bits("accuracy_bits", &bits));
      r.eval_accuracy_bits = bits;
    }
  }
  // The readable copies must agree with the bits they repeat.
  auto copy_ok = [](const json* v, uint32_t bits) {
    return v != nullptr && v->is_number() &&
           BitsOfFloat(static_cast<float>(v->get<double>())) == bits;
  };
  if (!copy_ok(g.Get("loss"), r.loss_bits)) return g.Bad("loss", "the value of loss_bits");
  if (!copy_ok(g.Get("learning_rate"), r.learning_rate_bits)) {
    return g.Bad("learning_rate", "the value of learning_rate_bits");
  }
  if (const json* eval = g.Get("eval")) {
    Fields ef(*eval, "step record " + std::to_string(r.step) + " eval");
    if (!copy_ok(ef.Get("loss"), *r.eval_loss_bits))
      return ef.Bad("loss", "the value of loss_bits");
    if (r.eval_accuracy_bits.has_value() && !copy_ok(ef.Get("accuracy"), *r.eval_accuracy_bits)) {
      return ef.Bad("accuracy", "the value of accuracy_bits");
    }
  }
  return r;
}

json StepsHeaderJson(const Digest256& genesis, attest::DigestPolicy policy) {
  return {{"format", kStepsFormat},
          {"format_version", kFormatVersion},
          {"genesis", Hex(genesis)},
          {"state_digest", DigestPolicyName(policy)}};
}

Result<ParsedSteps> ParseSteps(std::string_view text) {
  ParsedSteps out;
  size_t eol = text.find('\n');
  if (eol == std::string_view::npos) {
    return DataLoss("steps.jsonl line 1: no complete header line");
  }
  Result<json> parsed = attest::ParseJson(text.substr(0, eol));
  if (!parsed.ok())
    return DataLoss("steps.jsonl line 1 (header): " + std::string(parsed.status().message()));
  const json header = std::move(*parsed);
  Fields h(header, "steps.jsonl line 1 (header)");
  DETRAIN_RETURN_IF_ERROR(h.Object());
  const json* format = h.Get("format");
  const json* policy = h.Get("state_digest");
  int64_t version = 0;
  if (format == nullptr || *format != kStepsFormat) return h.Bad("format", "\"detrain.steps\"");
  DETRAIN_RETURN_IF_ERROR(h.Int("format_version", &version));
  if (version != kFormatVersion) {
    return h.Bad("format_version",
                 std::to_string(kFormatVersion) + ", found " + std::to_string(version));
  }
  if (policy == nullptr || !policy->is_string()) return h.Bad("state_digest", "a string");
  Result<attest::DigestPolicy> p = ParseDigestPolicy(policy->get<std::string>());
  if (!p.ok()) return h.Bad("state_digest", "xxh3-128, xxh3-128-chunked or sha256");
  out.policy = *p;
  DETRAIN_RETURN_IF_ERROR(h.Digest("genesis", &out.genesis));
  size_t pos = eol + 1;
  out.valid_bytes = pos;
  int64_t line = 1;
  while (pos < text.size()) {
    ++line;
    size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) {
      out.error = "line " + std::to_string(line) + " is incomplete (no newline)";
      out.error_line = line;
      break;
    }
    Result<json> j = attest::ParseJson(text.substr(pos, end - pos));
    Result<StepRecord> r =
        j.ok() ? ParseStepRecord(*j, out.policy) : Result<StepRecord>(j.status());
    if (!r.ok()) {
      out.error = std::string(r.status().message());
      out.error_line = line;
      break;
    }
    out.records.push_back(std::move(*r));
    pos = end + 1;
    out.valid_bytes = pos;
  }
  return out;
}

Result<std::string> CanonicalLine(const json& j) {
  DETRAIN_ASSIGN_OR_RETURN(std::string text, attest::CanonicalJson(j));
  return text + "\n";
}

Result<std::string> ManifestRootDigest(const json& manifest) {
  if (!manifest.is_object()) return DataLoss("manifest: expected a JSON object");
  json body = manifest;
  body.erase("root_digest");
  DETRAIN_ASSIGN_OR_RETURN(std::string text, attest::CanonicalJson(body));
  return attest::Sha256Hex(text);
}

}  // namespace detrain::bundle
