// DSSE v1.0 envelopes (secure-systems-lab/dsse, protocol.md and envelope.md) around in-toto
// Statements v1 (in-toto/attestation spec/v1): the signed form of every attestation detrain
// writes (schemas/attestation.md).
//
// A signature is over PAE(payloadType, payload) — "DSSEv1" SP LEN(type) SP type SP LEN(body) SP
// body, lengths in ASCII decimal — so the exact payload bytes are signed and no JSON
// canonicalisation is involved. The envelope's JSON: {"payload": base64, "payloadType": type,
// "signatures": [{"keyid": id, "sig": base64 DER}]}.
//
// Reading is hostile-input safe: size-limited, parsed by attest::ParseJson (depth, duplicate
// keys), every field's type checked; errors say which field is wrong. The keyid is a hint only:
// a signature is trusted when it verifies under a trusted key, whatever its keyid says.
//
// Thread safety: pure functions.
#ifndef DETRAIN_EVIDENCE_SIGN_DSSE_H_
#define DETRAIN_EVIDENCE_SIGN_DSSE_H_

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "evidence/sign/keys.h"

namespace detrain::sign {

inline constexpr char kInTotoPayloadType[] = "application/vnd.in-toto+json";
inline constexpr char kStatementType[] = "https://in-toto.io/Statement/v1";
// The largest envelope read (its payload base64 inside).
inline constexpr size_t kMaxEnvelopeBytes = size_t{64} << 20;

std::string Pae(std::string_view payload_type, std::string_view payload);

struct Signature {
  std::string keyid;
  std::string sig;  // raw DER bytes
};

struct Envelope {
  std::string payload_type;
  std::string payload;  // raw bytes
  std::vector<Signature> signatures;
};

// Signs PAE(type, payload) with `key`; the signature's keyid is `keyid` (empty: the key's
// securesystemslib keyid, which in-toto's verifiers match signatures by).
Result<Envelope> SignEnvelope(std::string_view payload_type, std::string payload,
                              const PrivateKey& key, const std::string& keyid = "");

nlohmann::json EnvelopeJson(const Envelope& e);
// The envelope's file bytes: its JSON, keys sorted, no whitespace, and a newline.
std::string EnvelopeText(const Envelope& e);
Result<Envelope> ParseEnvelope(std::string_view text);
Result<Envelope> EnvelopeFromJson(const nlohmann::json& j);

// The first of `trusted` under which some signature of `e` verifies; nullptr if none does.
const PublicKey* TrustedSigner(const Envelope& e, const std::vector<PublicKey>& trusted);

// An in-toto Statement v1 and its payload bytes (canonical JSON, schemas/canonical-json.md).
nlohmann::json Statement(nlohmann::json subjects, std::string_view predicate_type,
                         nlohmann::json predicate);
Result<std::string> StatementPayload(const nlohmann::json& statement);

// Parses an in-toto Statement v1 payload: `_type`, `subject` (each with a `digest` object of
// strings) and `predicateType` must be there with their types.
Result<nlohmann::json> ParseStatement(std::string_view payload);

}  // namespace detrain::sign

#endif  // DETRAIN_EVIDENCE_SIGN_DSSE_H_
