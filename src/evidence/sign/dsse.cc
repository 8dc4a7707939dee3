// See dsse.h: PAE, signing an envelope, reading one field by field (each error names the
// field), and in-toto Statement v1 payloads.
#include "evidence/sign/dsse.h"

#include "attest/canonical_json.h"

namespace detrain::sign {

using nlohmann::json;

std::string Pae(std::string_view payload_type, std::string_view payload) {
  std::string out = "DSSEv1 ";
  out += std::to_string(payload_type.size());
  out += ' ';
  out += payload_type;
  out += ' ';
  out += std::to_string(payload.size());
  out += ' ';
  out += payload;
  return out;
}

Result<Envelope> SignEnvelope(std::string_view payload_type, std::string payload,
                              const PrivateKey& key, const std::string& keyid) {
  Envelope e;
  e.payload_type = std::string(payload_type);
  e.payload = std::move(payload);
  DETRAIN_ASSIGN_OR_RETURN(std::string sig, key.Sign(Pae(e.payload_type, e.payload)));
  e.signatures.push_back({keyid.empty() ? key.public_key().sslib_keyid() : keyid, std::move(sig)});
  return e;
}

json EnvelopeJson(const Envelope& e) {
  json sigs = json::array();
  for (const Signature& s : e.signatures) {
    sigs.push_back({{"keyid", s.keyid}, {"sig", Base64Encode(s.sig)}});
  }
  return {{"payload", Base64Encode(e.payload)},
          {"payloadType", e.payload_type},
          {"signatures", std::move(sigs)}};
}

std::string EnvelopeText(const Envelope& e) { return EnvelopeJson(e).dump() + "\n"; }

Result<Envelope> EnvelopeFromJson(const json& j) {
  if (!j.is_object()) return InvalidArgument("a DSSE envelope must be a JSON object");
  auto string_field = [&](const json& o, const char* name, const std::string& where,
                          bool required) -> Result<std::string> {
    auto it = o.find(name);
    if (it == o.end()) {
      if (!required) return std::string();
      return InvalidArgument(where + "has no \"" + name + "\"");
    }
    if (!it->is_string()) return InvalidArgument(where + "\"" + name + "\" is not a string");
    return it->get<std::string>();
  };
  Envelope e;
  DETRAIN_ASSIGN_OR_RETURN(e.payload_type, string_field(j, "payloadType", "the envelope ", true));
  DETRAIN_ASSIGN_OR_RETURN(std::string payload, string_field(j, "payload", "the envelope ", true));
  Result<std::string> decoded = Base64Decode(payload);
  if (!decoded.ok()) return InvalidArgument("\"payload\": " + decoded.status().message());
  e.payload = std::move(*decoded);
  auto sigs = j.find("signatures");
  if (sigs == j.end() || !sigs->is_array() || sigs->empty()) {
    return InvalidArgument("the envelope has no \"signatures\" (a non-empty array)");
  }
  for (size_t i = 0; i < sigs->size(); ++i) {
    const json& s = (*sigs)[i];
    const std::string where = "\"signatures[" + std::to_string(i) + "]\" ";
    if (!s.is_object()) return InvalidArgument(where + "is not an object");
    Signature sig;
    // keyid may be absent or null (older producers); it is only a hint.
    if (auto k = s.find("keyid"); k != s.end() && !k->is_null()) {
      if (!k->is_string()) return InvalidArgument(where + "\"keyid\" is not a string");
      sig.keyid = k->get<std::string>();
    }
    DETRAIN_ASSIGN_OR_RETURN(std::string text, string_field(s, "sig", where, true));
    Result<std::string> raw = Base64Decode(text);
    if (!raw.ok()) return InvalidArgument(where + "\"sig\": " + raw.status().message());
    sig.sig = std::move(*raw);
    e.signatures.push_back(std::move(sig));
  }
  return e;
}

Result<Envelope> ParseEnvelope(std::string_view text) {
  if (text.size() > kMaxEnvelopeBytes) {
    return InvalidArgument("larger than " + std::to_string(kMaxEnvelopeBytes) +
                           " bytes; not a detrain attestation");
  }
  DETRAIN_ASSIGN_OR_RETURN(json j, attest::ParseJson(text));
  return EnvelopeFromJson(j);
}

const PublicKey* TrustedSigner(const Envelope& e, const std::vector<PublicKey>& trusted) {
  const std::string pae = Pae(e.payload_type, e.payload);
  for (const PublicKey& key : trusted) {
    for (const Signature& s : e.signatures) {
      if (key.Verify(pae, s.sig)) return &key;
    }
  }
  return nullptr;
}

json Statement(json subjects, std::string_view predicate_type, json predicate) {
  return {{"_type", kStatementType},
          {"subject", std::move(subjects)},
          {"predicateType", std::string(predicate_type)},
          {"predicate", std::move(predicate)}};
}

Result<std::string> StatementPayload(const json& statement) {
  return attest::CanonicalJson(statement);
}

Result<json> ParseStatement(std::string_view payload) {
  Result<json> j = attest::ParseJson(payload);
  if (!j.ok()) return InvalidArgument("the payload is not JSON: " + j.status().message());
  if (!j->is_object()) return InvalidArgument("the payload is not a JSON object");
  auto type = j->find("_type");
  if (type == j->end() || !type->is_string() || *type != kStatementType) {
    return InvalidArgument(std::string("the payload is not an in-toto Statement v1 (\"_type\" ") +
                           "must be \"" + kStatementType + "\")");
  }
  auto pt = j->find("predicateType");
  if (pt == j->end() || !pt->is_string()) {
    return InvalidArgument("the statement has no \"predicateType\" string");
  }
  auto subjects = j->find("subject");
  if (subjects == j->end() || !subjects->is_array() || subjects->empty()) {
    return InvalidArgument("the statement has no \"subject\" (a non-empty array)");
  }
  for (size_t i = 0; i < subjects->size(); ++i) {
    const json& s = (*subjects)[i];
    const std::string where = "\"subject[" + std::to_string(i) + "]\" ";
    if (!s.is_object()) return InvalidArgument(where + "is not an object");
    auto d = s.find("digest");
    if (d == s.end() || !d->is_object() || d->empty()) {
      return InvalidArgument(where + "has no \"digest\" object");
    }
    for (const auto& [algo, value] : d->items()) {
      if (!value.is_string()) {
        return InvalidArgument(where + "digest \"" + algo + "\" is not a string");
      }
    }
    if (auto n = s.find("name"); n != s.end() && !n->is_string()) {
      return InvalidArgument(where + "\"name\" is not a string");
    }
  }
  auto p = j->find("predicate");
  if (p != j->end() && !p->is_object()) {
    return InvalidArgument("the statement's \"predicate\" is not an object");
  }
  return std::move(*j);
}

}  // namespace detrain::sign
