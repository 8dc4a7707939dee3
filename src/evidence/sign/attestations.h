// Signed evidence in a bundle's attestation/ directory (schemas/attestation.md):
//
//   training.intoto.json     detrain's training provenance (predicate kTrainingPredicate): the
//                            program, data digests, split, seed, stage chain, final step hash and
//                            how to replay it; subjects: the final weights and manifest.json
//   provenance.intoto.json   SLSA Provenance v1 for the same subjects, build type kBuildType
//   model.sig                an OpenSSF model signing v1.0 signature (Sigstore bundle v0.3, key
//                            method) over final/, for `model_signing verify key`
//   verification.<ID>.intoto.json
//                            a SLSA Verification Summary v1 written by `detrain verify
//                            --sign-key`: what was checked and the verdict; ID is the first 16
//                            hex digits of the verifier's key id
//
// The first three are written by `run --attest --sign-key` once the bundle is finished; every
// one is a DSSE envelope (or, model.sig, a Sigstore bundle around one) signed with ECDSA P-256.
// attestation/ is outside the manifest — the statements name the manifest, so they come after
// it — and the verifier's integrity phase leaves it to CheckAttestations.
//
// Thread safety: functions on different bundles may run concurrently.
#ifndef DETRAIN_EVIDENCE_SIGN_ATTESTATIONS_H_
#define DETRAIN_EVIDENCE_SIGN_ATTESTATIONS_H_

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"
#include "evidence/sign/dsse.h"
#include "evidence/sign/keys.h"

namespace detrain::sign {

inline constexpr char kAttestationDir[] = "attestation";
inline constexpr char kTrainingFile[] = "attestation/training.intoto.json";
inline constexpr char kProvenanceFile[] = "attestation/provenance.intoto.json";
inline constexpr char kModelSignatureFile[] = "attestation/model.sig";
inline constexpr char kVerificationPrefix[] = "attestation/verification.";
inline constexpr char kEnvelopeSuffix[] = ".intoto.json";

inline constexpr char kTrainingPredicate[] = "https://detrain.dev/attestation/training/v1";
inline constexpr char kSlsaProvenance[] = "https://slsa.dev/provenance/v1";
inline constexpr char kVerificationSummary[] = "https://slsa.dev/verification_summary/v1";
inline constexpr char kModelSigningPredicate[] = "https://model_signing/signature/v1.0";
inline constexpr char kBuildType[] = "https://detrain.dev/buildtypes/train/v1";
inline constexpr char kBuilderId[] = "https://detrain.dev/builders/detrain-run/v1";
inline constexpr char kVerifierId[] = "https://detrain.dev/verifiers/detrain-verify/v1";
inline constexpr char kVerificationPolicy[] = "https://detrain.dev/policies/replay/v1";
inline constexpr char kSigstoreBundleType[] = "application/vnd.dev.sigstore.bundle.v0.3+json";

// "attestation/verification.<first 16 hex digits of the key id>.intoto.json".
std::string VerificationFile(const PublicKey& key);

// Who signs: recorded in the statements (never hashed into the bundle).
struct SignerInfo {
  std::string detrain_version;
  std::string git_commit;
  std::string executable_sha256;  // of the running detrain binary; "" when unreadable
};

// The running executable's SHA-256 (/proc/self/exe), or "" where it cannot be read.
std::string ExecutableSha256();

// Writes training.intoto.json, provenance.intoto.json and model.sig into a finished bundle
// (manifest.json present), replacing earlier ones; each file atomically.
Status SignBundle(const std::string& dir, const PrivateKey& key, const SignerInfo& signer);

// One attestation file, as checked.
struct AttestationCheck {
  std::string file;            // relative to the bundle
  std::string predicate_type;  // of its statement
  std::string signer;          // id of the trusted key that verified it; "" if not checked
  std::string detail;          // e.g. "PASSED by detrain 0.9.0 at 2026-12-03T15:20:00Z"
};

struct AttestationReport {
  bool ok = true;
  std::string message;  // the first failure, or a summary
  std::vector<AttestationCheck> checked;
  std::vector<std::string> notes;  // what was not checked, e.g. signatures without trusted keys
};

// Checks every file in the bundle's attestation/ directory: a name this format defines, a DSSE
// envelope (or Sigstore bundle) that parses, an in-toto Statement of the expected type whose
// subjects are this bundle's manifest.json and final weights (model.sig: final/'s files), and —
// with trusted keys — a signature by one of them. With trusted keys and no attestation at all,
// the check fails. `root_digest` is the manifest's, checked by the caller.
AttestationReport CheckAttestations(const std::string& dir, const std::string& root_digest,
                                    const std::vector<PublicKey>& trusted);

// What `detrain verify` concluded, for the verification summary.
struct VerificationFacts {
  bool passed = false;
  std::string message;         // the report's one line
  std::string root_digest;     // the manifest's
  std::string time_verified;   // RFC 3339 UTC
  nlohmann::json checks;       // phases and what each covered (verifier's report)
  std::string archive_name;    // when a packed archive was verified: its file name
  std::string archive_sha256;  // and its SHA-256
  std::vector<AttestationCheck> input_attestations;  // those verified under trusted keys
};

// Writes the verification summary for `dir` (a bundle directory) to `path`, atomically.
Status WriteVerificationSummary(const std::string& dir, const std::string& path,
                                const PrivateKey& key, const SignerInfo& signer,
                                const VerificationFacts& facts);

}  // namespace detrain::sign

#endif  // DETRAIN_EVIDENCE_SIGN_ATTESTATIONS_H_
