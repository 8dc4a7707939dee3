// See attestations.h. The statements (training provenance, SLSA Provenance, the model-signing
// statement and the verification summary) are built from the bundle's manifest and files and
// signed as DSSE envelopes; the checks rebuild each statement's subjects and find its signer.
#include "evidence/sign/attestations.h"

#include <algorithm>
#include <map>
#include <set>

#include "attest/canonical_json.h"
#include "attest/dir_digest.h"
#include "attest/merkle.h"
#include "attest/sha256.h"
#include "base/file_io.h"
#include "base/fs.h"
#include "base/thread_pool.h"
#include "evidence/bundle/bundle_format.h"
#include "evidence/bundle/bundle_reader.h"

namespace detrain::sign {
namespace {

using nlohmann::json;

Result<std::string> PathSha256(const std::string& path) {
  ThreadPool pool(1);
  DETRAIN_ASSIGN_OR_RETURN(attest::FileDigests d, attest::DigestFile(path, pool));
  return attest::Sha256::ToHex(d.sha256);
}

// The SHA-256 of a bundle's file (bundle/bundle_reader.h's rules: no link is followed).
Result<std::string> FileSha256(const std::string& dir, const std::string& name) {
  DETRAIN_RETURN_IF_ERROR(bundle::BundleFileSize(dir, name).status());
  return PathSha256(JoinPath(dir, name));
}

Result<json> ReadJsonFile(const std::string& dir, const std::string& name) {
  DETRAIN_ASSIGN_OR_RETURN(std::string text,
                           bundle::ReadBundleFile(dir, name, bundle::kMaxJsonFileBytes));
  Result<json> j = attest::ParseJson(text);
  if (!j.ok()) return InvalidArgument(name + ": " + j.status().message());
  if (!j->is_object()) return InvalidArgument(name + ": not a JSON object");
  return std::move(*j);
}

// A member of a JSON object, or null.
const json& Member(const json& o, const char* name) {
  static const json kNull;
  if (!o.is_object()) return kNull;
  auto it = o.find(name);
  return it == o.end() ? kNull : *it;
}

std::string StringMember(const json& o, const char* name) {
  const json& m = Member(o, name);
  return m.is_string() ? m.get<std::string>() : std::string();
}

// What every statement about a bundle names: its manifest and final weights, by digest.
struct BundleFacts {
  json manifest;
  std::string root_digest;
  std::string manifest_sha256;
  std::string weights_sha256;
};

Result<BundleFacts> ReadBundleFacts(const std::string& dir) {
  BundleFacts f;
  DETRAIN_ASSIGN_OR_RETURN(f.manifest, ReadJsonFile(dir, bundle::kManifest));
  f.root_digest = StringMember(f.manifest, "root_digest");
  if (f.root_digest.empty()) return InvalidArgument("manifest.json has no root_digest");
  DETRAIN_ASSIGN_OR_RETURN(f.manifest_sha256, FileSha256(dir, bundle::kManifest));
  DETRAIN_ASSIGN_OR_RETURN(f.weights_sha256, FileSha256(dir, bundle::kFinalWeights));
  return f;
}

json Subjects(const BundleFacts& f) {
  return json::array({
      {{"name", bundle::kFinalWeights}, {"digest", {{"sha256", f.weights_sha256}}}},
      {{"name", bundle::kManifest},
       {"digest", {{"sha256", f.manifest_sha256}}},
       {"annotations", {{"root_digest", f.root_digest}}}},
  });
}

json Descriptor(const std::string& name, const std::string& sha256) {
  return {{"name", name}, {"digest", {{"sha256", sha256}}}};
}

json Producer(const SignerInfo& s) {
  json p = {{"detrain", s.detrain_version}, {"git_commit", s.git_commit}};
  if (!s.executable_sha256.empty()) p["executable_sha256"] = s.executable_sha256;
  return p;
}

Result<json> TrainingPredicate(const std::string& dir, const BundleFacts& f,
                               const SignerInfo& signer) {
  const json& m = f.manifest;
  DETRAIN_ASSIGN_OR_RETURN(json data_record, ReadJsonFile(dir, bundle::kDataRecord));
  DETRAIN_ASSIGN_OR_RETURN(std::string data_sha, FileSha256(dir, bundle::kDataRecord));
  DETRAIN_ASSIGN_OR_RETURN(std::string steps_sha, FileSha256(dir, bundle::kSteps));
  DETRAIN_ASSIGN_OR_RETURN(std::string lineage_sha, FileSha256(dir, bundle::kLineage));
  const json& data = Member(m, "data");
  json stages = json::array();
  for (const json& s : Member(m, "stages")) {
    stages.push_back({{"number", Member(s, "number")},
                      {"stage", Member(s, "stage")},
                      {"file", std::string(bundle::kStagesDir) + "/" + StringMember(s, "file")},
                      {"sha256", Member(s, "sha256")}});
  }
  json p = {
      {"format_version", 1},
      {"bundle",
       {{"format", Member(m, "format")},
        {"format_version", Member(m, "format_version")},
        {"root_digest", f.root_digest},
        {"status", Member(m, "status")}}},
      {"program", Member(m, "program")},
      {"data",
       {{"files", Member(data, "files")},
        {"rows", Member(data, "rows")},
        {"train_rows", Member(data, "train_rows")},
        {"validation_rows", Member(data, "validation_rows")},
        {"record", Descriptor(bundle::kDataRecord, data_sha)},
        {"split", Member(data_record, "split")}}},
      {"seed", Member(Member(Member(m, "config"), "train"), "seed")},
      {"config", Member(m, "config")},
      {"run", Member(m, "run")},
      {"stages", std::move(stages)},
      {"steps",
       {{"count", Member(Member(m, "steps"), "count")},
        {"genesis", Member(Member(m, "steps"), "genesis")},
        {"state_digest", Member(Member(m, "steps"), "state_digest")},
        {"log", Descriptor(bundle::kSteps, steps_sha)}}},
      {"lineage", Descriptor(bundle::kLineage, lineage_sha)},
      {"final", Member(m, "final")},
      {"replay",
       {{"command", "detrain verify BUNDLE"},
        {"procedure",
         "integrity (every file's digest, the step chain, checkpoints, final weights), "
         "recompile (every stage from the bundled program and data), replay (every step, "
         "compared bit for bit with its record): schemas/bundle.md, Verification"}}},
      {"producer", Producer(signer)},
  };
  if (m.contains("executables")) p["executables"] = m["executables"];
  return p;
}

Result<json> SlsaPredicate(const std::string& dir, const BundleFacts& f, const SignerInfo& signer) {
  const json& m = f.manifest;
  DETRAIN_ASSIGN_OR_RETURN(std::string config_json, attest::CanonicalJson(Member(m, "config")));
  json data_files = json::array();
  json resolved = json::array();
  const json& program = Member(m, "program");
  resolved.push_back(Descriptor(StringMember(program, "path"), StringMember(program, "sha256")));
  for (const json& file : Member(Member(m, "data"), "files")) {
    const std::string path = StringMember(file, "path"), sha = StringMember(file, "sha256");
    data_files.push_back({{"path", path}, {"sha256", sha}});
    resolved.push_back(Descriptor("data/" + path, sha));
  }
  json byproducts = json::array();
  for (const json& s : Member(m, "stages")) {
    byproducts.push_back(Descriptor(std::string(bundle::kStagesDir) + "/" + StringMember(s, "file"),
                                    StringMember(s, "sha256")));
  }
  DETRAIN_ASSIGN_OR_RETURN(std::string steps_sha, FileSha256(dir, bundle::kSteps));
  DETRAIN_ASSIGN_OR_RETURN(std::string lineage_sha, FileSha256(dir, bundle::kLineage));
  byproducts.push_back(Descriptor(bundle::kSteps, steps_sha));
  byproducts.push_back(Descriptor(bundle::kLineage, lineage_sha));
  json builder = {{"id", kBuilderId}, {"version", {{"detrain", signer.detrain_version}}}};
  if (!signer.executable_sha256.empty()) {
    json dep = Descriptor("detrain", signer.executable_sha256);
    dep["annotations"] = {{"git_commit", signer.git_commit}};
    builder["builderDependencies"] = json::array({dep});
  }
  return json{
      {"buildDefinition",
       {{"buildType", kBuildType},
        {"externalParameters",
         {{"program",
           {{"path", StringMember(program, "path")}, {"sha256", StringMember(program, "sha256")}}},
          {"data", std::move(data_files)},
          {"seed", Member(Member(Member(m, "config"), "train"), "seed")},
          {"config_sha256", attest::Sha256Hex(config_json)},
          {"run", Member(m, "run")}}},
        {"resolvedDependencies", std::move(resolved)}}},
      {"runDetails",
       {{"builder", std::move(builder)},
        {"metadata", {{"invocationId", "detrain-bundle:sha256:" + f.root_digest}}},
        {"byproducts", std::move(byproducts)}}},
  };
}

// The OpenSSF model signing statement over final/ (schemas/attestation.md §4).
Result<json> ModelSigningStatement(const std::string& dir) {
  ThreadPool pool(1);
  DETRAIN_ASSIGN_OR_RETURN(attest::DirectoryDigest d,
                           attest::DigestDirectory(JoinPath(dir, "final"), pool));
  if (d.oms_file_count != d.files.size()) {
    return InvalidArgument("final/ holds a path model signing leaves out (.git*)");
  }
  json resources = json::array();
  for (const attest::FileEntryDigest& e : d.files) {
    resources.push_back(
        {{"name", e.path}, {"algorithm", "sha256"}, {"digest", attest::Sha256::ToHex(e.sha256)}});
  }
  json predicate = {
      {"serialization",
       {{"method", "files"},
        {"hash_type", "sha256"},
        {"allow_symlinks", false},
        {"ignore_paths", json::array()}}},
      {"resources", std::move(resources)},
  };
  return Statement(json::array({Descriptor("final", attest::Sha256::ToHex(d.oms_root))}),
                   kModelSigningPredicate, std::move(predicate));
}

Result<std::string> SigstoreBundleText(const json& statement, const PrivateKey& key) {
  DETRAIN_ASSIGN_OR_RETURN(std::string payload, StatementPayload(statement));
  // model_signing writes an empty keyid and names the key by the hint.
  DETRAIN_ASSIGN_OR_RETURN(Envelope e, SignEnvelope(kInTotoPayloadType, payload, key, ""));
  e.signatures[0].keyid.clear();
  json bundle = {
      {"mediaType", kSigstoreBundleType},
      {"verificationMaterial",
       {{"publicKey", {{"hint", key.public_key().id()}}}, {"tlogEntries", json::array()}}},
      {"dsseEnvelope", EnvelopeJson(e)},
  };
  return bundle.dump() + "\n";
}

Result<std::string> SignedStatement(const json& statement, const PrivateKey& key) {
  DETRAIN_ASSIGN_OR_RETURN(std::string payload, StatementPayload(statement));
  DETRAIN_ASSIGN_OR_RETURN(Envelope e, SignEnvelope(kInTotoPayloadType, std::move(payload), key));
  return EnvelopeText(e);
}

Status WriteAttestation(const std::string& dir, const std::string& name, const std::string& text) {
  DETRAIN_RETURN_IF_ERROR(MakeDirs(JoinPath(dir, kAttestationDir)));
  return WriteFileAtomic(JoinPath(dir, name), text);
}

}  // namespace

std::string VerificationFile(const PublicKey& key) {
  return std::string(kVerificationPrefix) + key.id().substr(0, 16) + kEnvelopeSuffix;
}

std::string ExecutableSha256() {
  Result<std::string> sha = PathSha256("/proc/self/exe");
  return sha.ok() ? *sha : std::string();
}

Status SignBundle(const std::string& dir, const PrivateKey& key, const SignerInfo& signer) {
  DETRAIN_ASSIGN_OR_RETURN(BundleFacts f, ReadBundleFacts(dir));
  DETRAIN_ASSIGN_OR_RETURN(json training, TrainingPredicate(dir, f, signer));
  DETRAIN_ASSIGN_OR_RETURN(json slsa, SlsaPredicate(dir, f, signer));
  DETRAIN_ASSIGN_OR_RETURN(json oms, ModelSigningStatement(dir));
  DETRAIN_ASSIGN_OR_RETURN(
      std::string training_text,
      SignedStatement(Statement(Subjects(f), kTrainingPredicate, training), key));
  DETRAIN_ASSIGN_OR_RETURN(std::string slsa_text,
                           SignedStatement(Statement(Subjects(f), kSlsaProvenance, slsa), key));
  DETRAIN_ASSIGN_OR_RETURN(std::string oms_text, SigstoreBundleText(oms, key));
  DETRAIN_RETURN_IF_ERROR(WriteAttestation(dir, kTrainingFile, training_text));
  DETRAIN_RETURN_IF_ERROR(WriteAttestation(dir, kProvenanceFile, slsa_text));
  return WriteAttestation(dir, kModelSignatureFile, oms_text);
}

// ---- checking -------------------------------------------------------------------------------

namespace {

// Whether a statement's subjects are exactly this bundle's manifest and final weights (with,
// for a verification summary, possibly a packed archive as well); else why not. The manifest
// is compared first: a statement about another run differs there before anywhere else.
std::string SubjectMismatch(const json& statement, const BundleFacts& f, bool allow_archive) {
  std::map<std::string, const json*> named;
  int others = 0;
  for (const json& s : statement["subject"]) {
    const std::string name = StringMember(s, "name");
    if (name != bundle::kManifest && name != bundle::kFinalWeights) {
      if (allow_archive && others++ == 0) continue;  // the packed archive that was verified
      return "names a subject \"" + name + "\" that is not part of a bundle";
    }
    if (!named.emplace(name, &s).second) return "names " + name + " twice";
  }
  for (const char* name : {bundle::kManifest, bundle::kFinalWeights}) {
    if (named.count(name) == 0) return std::string("does not name ") + name + " among its subjects";
  }
  const json& m = *named[bundle::kManifest];
  const std::string msha = StringMember(Member(m, "digest"), "sha256");
  const std::string root = StringMember(Member(m, "annotations"), "root_digest");
  if (msha != f.manifest_sha256 || root != f.root_digest) {
    return "is about another bundle: its manifest.json has sha256 " + msha + " (root digest " +
           (root.empty() ? std::string("not named") : root) + "); this bundle's has " +
           f.manifest_sha256 + " (root digest " + f.root_digest + ")";
  }
  const std::string wsha = StringMember(Member(*named[bundle::kFinalWeights], "digest"), "sha256");
  if (wsha != f.weights_sha256) {
    return std::string("is about other final weights: ") + bundle::kFinalWeights + " with sha256 " +
           wsha + "; this bundle's have " + f.weights_sha256;
  }
  return "";
}

// Why a signed envelope is not trusted, or "" with *signer set.
std::string SignatureProblem(const Envelope& e, const std::vector<PublicKey>& trusted,
                             std::string* signer) {
  if (const PublicKey* k = TrustedSigner(e, trusted)) {
    *signer = k->id();
    return "";
  }
  for (const Signature& s : e.signatures) {
    for (const PublicKey& k : trusted) {
      if (!s.keyid.empty() && (s.keyid == k.id() || s.keyid == k.sslib_keyid())) {
        return "its signature does not verify under trusted key " + k.id().substr(0, 16) +
               " (the statement or the signature was changed after signing)";
      }
    }
  }
  std::string ids;
  for (const Signature& s : e.signatures) {
    if (!s.keyid.empty()) ids += (ids.empty() ? "" : ", ") + s.keyid.substr(0, 16);
  }
  return "no trusted key (--trusted-key) verifies its signature" +
         (ids.empty() ? std::string() : "; it names key " + ids + " (key id or in-toto keyid)");
}

struct Checker {
  const std::string& dir;
  const BundleFacts& facts;
  const std::vector<PublicKey>& trusted;
  AttestationReport& report;

  bool Fail(const std::string& file, const std::string& why) {
    report.ok = false;
    report.message = file + ": " + why;
    return false;
  }

  // A DSSE envelope in file `name` whose statement has `type`.
  bool CheckEnvelopeFile(const std::string& name, const char* type, json* statement_out,
                         AttestationCheck* check) {
    Result<std::string> text = bundle::ReadBundleFile(dir, name, kMaxEnvelopeBytes);
    if (!text.ok()) return Fail(name, text.status().message());
    Result<Envelope> e = ParseEnvelope(*text);
    if (!e.ok()) return Fail(name, "not a DSSE envelope: " + e.status().message());
    return CheckEnvelope(name, *e, type, statement_out, check);
  }

  bool CheckEnvelope(const std::string& name, const Envelope& e, const char* type,
                     json* statement_out, AttestationCheck* check) {
    if (e.payload_type != kInTotoPayloadType) {
      return Fail(
          name, "payload type \"" + e.payload_type + "\"; expected \"" + kInTotoPayloadType + "\"");
    }
    if (!trusted.empty()) {
      std::string why = SignatureProblem(e, trusted, &check->signer);
      if (!why.empty()) return Fail(name, why);
    }
    Result<json> statement = ParseStatement(e.payload);
    if (!statement.ok()) return Fail(name, statement.status().message());
    const std::string got = (*statement)["predicateType"].get<std::string>();
    if (got != type) {
      return Fail(name, "predicate type \"" + got + "\"; this file holds \"" + type + "\"");
    }
    check->file = name;
    check->predicate_type = got;
    *statement_out = std::move(*statement);
    return true;
  }

  bool CheckRunStatement(const std::string& name, const char* type) {
    AttestationCheck check;
    json statement;
    if (!CheckEnvelopeFile(name, type, &statement, &check)) return false;
    std::string why = SubjectMismatch(statement, facts, false);
    if (!why.empty()) return Fail(name, "a signed statement that " + why);
    report.checked.push_back(check);
    return true;
  }

  bool CheckModelSignature(const std::string& name) {
    Result<std::string> text = bundle::ReadBundleFile(dir, name, kMaxEnvelopeBytes);
    if (!text.ok()) return Fail(name, text.status().message());
    Result<json> j = attest::ParseJson(*text);
    if (!j.ok()) return Fail(name, "not JSON: " + j.status().message());
    if (StringMember(*j, "mediaType") != kSigstoreBundleType) {
      return Fail(name, std::string("not a Sigstore bundle (\"mediaType\" must be \"") +
                            kSigstoreBundleType + "\")");
    }
    const json& hint = Member(Member(Member(*j, "verificationMaterial"), "publicKey"), "hint");
    if (!hint.is_string()) {
      return Fail(name, "no \"verificationMaterial.publicKey.hint\": not a key-method signature");
    }
    Result<Envelope> e = EnvelopeFromJson(Member(*j, "dsseEnvelope"));
    if (!e.ok()) return Fail(name, "\"dsseEnvelope\": " + e.status().message());
    AttestationCheck check;
    json statement;
    if (!CheckEnvelope(name, *e, kModelSigningPredicate, &statement, &check)) return false;
    if (!check.signer.empty() && hint.get<std::string>() != check.signer) {
      return Fail(name, "its key hint " + hint.get<std::string>().substr(0, 16) +
                            " is not the key that signed it (" + check.signer.substr(0, 16) + ")");
    }
    Result<json> expected = ModelSigningStatement(dir);
    if (!expected.ok()) return Fail(name, expected.status().message());
    const json& got_resources = Member(Member(statement, "predicate"), "resources");
    const json& want_resources = (*expected)["predicate"]["resources"];
    if (got_resources != want_resources) {
      std::map<std::string, std::string> got, want;
      for (const json& r : got_resources) got[StringMember(r, "name")] = StringMember(r, "digest");
      for (const json& r : want_resources)
        want[StringMember(r, "name")] = StringMember(r, "digest");
      for (const auto& [file, sha] : want) {
        auto it = got.find(file);
        if (it == got.end()) return Fail(name, "final/" + file + " is not signed");
        if (it->second != sha) {
          return Fail(name, "final/" + file + " has sha256 " + sha + "; the signature covers " +
                                it->second + " (the weights were changed after signing)");
        }
      }
      for (const auto& [file, sha] : got) {
        if (want.count(file) == 0) return Fail(name, "signs final/" + file + ", which is absent");
      }
      return Fail(name, "its resources differ from final/'s files");
    }
    if (statement["subject"] != (*expected)["subject"]) {
      return Fail(name, "its subject is not final/'s root digest " +
                            StringMember((*expected)["subject"][0]["digest"], "sha256"));
    }
    if (Member(Member(statement, "predicate"), "serialization") !=
        (*expected)["predicate"]["serialization"]) {
      return Fail(name,
                  "a serialization other than detrain's (files, sha256, no symlinks, "
                  "nothing ignored)");
    }
    report.checked.push_back(check);
    return true;
  }

  bool CheckVerificationSummary(const std::string& name) {
    AttestationCheck check;
    json statement;
    if (!CheckEnvelopeFile(name, kVerificationSummary, &statement, &check)) return false;
    std::string why = SubjectMismatch(statement, facts, true);
    if (!why.empty()) return Fail(name, "a verification summary that " + why);
    const json& p = Member(statement, "predicate");
    const std::string uri = StringMember(p, "resourceUri");
    if (uri != "detrain-bundle:sha256:" + facts.root_digest) {
      return Fail(name, "a verification summary of resource \"" + uri +
                            "\"; this bundle is detrain-bundle:sha256:" + facts.root_digest);
    }
    const std::string result = StringMember(p, "verificationResult");
    if (result != "PASSED" && result != "FAILED") {
      return Fail(name, "verificationResult \"" + result + "\"; expected PASSED or FAILED");
    }
    // The attestations it relied on must still be the ones in the bundle.
    for (const json& in : Member(p, "inputAttestations")) {
      const std::string file = StringMember(in, "uri");
      const std::string sha = StringMember(Member(in, "digest"), "sha256");
      if (file.rfind("attestation/", 0) != 0 || file.find("..") != std::string::npos) {
        return Fail(name, "names input attestation \"" + file + "\" outside attestation/");
      }
      Result<std::string> now = FileSha256(dir, file);
      if (!now.ok()) return Fail(name, "relied on " + file + ", which is absent");
      if (*now != sha) {
        return Fail(name,
                    "relied on " + file + " with sha256 " + sha + "; the file now has " + *now);
      }
    }
    check.detail = result + " by detrain " +
                   StringMember(Member(Member(p, "verifier"), "version"), "detrain") + " at " +
                   StringMember(p, "timeVerified");
    report.checked.push_back(check);
    return true;
  }
};

bool IsVerificationName(const std::string& name) {
  const std::string prefix = kVerificationPrefix, suffix = kEnvelopeSuffix;
  if (name.size() != prefix.size() + 16 + suffix.size()) return false;
  if (name.compare(0, prefix.size(), prefix) != 0) return false;
  if (name.compare(name.size() - suffix.size(), suffix.size(), suffix) != 0) return false;
  for (size_t i = prefix.size(); i < prefix.size() + 16; ++i) {
    const char c = name[i];
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

}  // namespace

AttestationReport CheckAttestations(const std::string& dir, const std::string& root_digest,
                                    const std::vector<PublicKey>& trusted) {
  AttestationReport report;
  const std::string adir = JoinPath(dir, kAttestationDir);
  std::vector<std::string> names;
  if (PathExists(adir)) {
    Result<std::vector<std::string>> listed = ListFiles(adir);
    if (!listed.ok()) {
      report.ok = false;
      report.message = listed.status().message();
      return report;
    }
    for (const std::string& n : *listed) names.push_back(std::string(kAttestationDir) + "/" + n);
  }
  if (names.empty()) {
    if (!trusted.empty()) {
      report.ok = false;
      report.message =
          "no attestation: the bundle is not signed (run --attest --sign-key), yet trusted keys "
          "were given";
    } else {
      report.message = "no attestations";
    }
    return report;
  }
  Result<BundleFacts> facts = ReadBundleFacts(dir);
  if (!facts.ok()) {
    report.ok = false;
    report.message = facts.status().message();
    return report;
  }
  if (facts->root_digest != root_digest) {
    report.ok = false;
    report.message = "manifest.json changed while it was checked";
    return report;
  }
  Checker c{dir, *facts, trusted, report};
  for (const std::string& name : names) {
    bool ok = true;
    if (name == kTrainingFile) {
      ok = c.CheckRunStatement(name, kTrainingPredicate);
    } else if (name == kProvenanceFile) {
      ok = c.CheckRunStatement(name, kSlsaProvenance);
    } else if (name == kModelSignatureFile) {
      ok = c.CheckModelSignature(name);
    } else if (IsVerificationName(name)) {
      ok = c.CheckVerificationSummary(name);
    } else {
      ok = c.Fail(name, "not an attestation this bundle format defines (schemas/attestation.md)");
    }
    if (!ok) return report;
  }
  if (trusted.empty()) {
    report.notes.push_back(std::to_string(report.checked.size()) +
                           " attestation(s) read, their subjects this bundle; signatures not "
                           "checked (no --trusted-key)");
    report.message = report.notes.back();
  } else {
    report.message = std::to_string(report.checked.size()) +
                     " attestation(s) signed by trusted keys, about this bundle";
  }
  return report;
}

Status WriteVerificationSummary(const std::string& dir, const std::string& path,
                                const PrivateKey& key, const SignerInfo& signer,
                                const VerificationFacts& facts) {
  DETRAIN_ASSIGN_OR_RETURN(BundleFacts f, ReadBundleFacts(dir));
  if (f.root_digest != facts.root_digest) {
    return FailedPrecondition("manifest.json changed during verification");
  }
  json subjects = Subjects(f);
  if (!facts.archive_sha256.empty()) {
    subjects.push_back(Descriptor(facts.archive_name, facts.archive_sha256));
  }
  json inputs = json::array();
  for (const AttestationCheck& a : facts.input_attestations) {
    DETRAIN_ASSIGN_OR_RETURN(std::string sha, FileSha256(dir, a.file));
    inputs.push_back({{"uri", a.file}, {"digest", {{"sha256", sha}}}});
  }
  // SLSA Build L1 (provenance exists): claimed only where the provenance was verified.
  json levels = json::array();
  for (const AttestationCheck& a : facts.input_attestations) {
    if (facts.passed && a.predicate_type == kSlsaProvenance) levels.push_back("SLSA_BUILD_LEVEL_1");
  }
  json predicate = {
      {"verifier", {{"id", kVerifierId}, {"version", {{"detrain", signer.detrain_version}}}}},
      {"timeVerified", facts.time_verified},
      {"resourceUri", "detrain-bundle:sha256:" + f.root_digest},
      {"policy", {{"uri", kVerificationPolicy}}},
      {"inputAttestations", std::move(inputs)},
      {"verificationResult", facts.passed ? "PASSED" : "FAILED"},
      {"verifiedLevels", std::move(levels)},
      {"slsaVersion", "1.0"},
      {"detrain_checks", facts.checks},
      {"detrain_message", facts.message},
      {"detrain_verifier", Producer(signer)},
  };
  DETRAIN_ASSIGN_OR_RETURN(
      std::string text,
      SignedStatement(Statement(std::move(subjects), kVerificationSummary, predicate), key));
  DETRAIN_RETURN_IF_ERROR(MakeDirs(DirName(path)));
  return WriteFileAtomic(path, text);
}

}  // namespace detrain::sign
