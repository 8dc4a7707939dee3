// The signed attestations of a bundle (evidence/sign/attestations.h) through the verifier: signed
// bundles verify under a trusted key, and every rejection the issue names has its own message —
// wrong key, edited payload, edited weights, a valid signature over another bundle, a replayed
// old verification summary — as do unknown files, links and unsigned bundles.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "base/file_io.h"
#include "base/fs.h"
#include "evidence/bundle/attested_run.h"
#include "evidence/bundle/bundle_format.h"
#include "evidence/sign/attestations.h"
#include "evidence/verify/verifier.h"
#include "temp_dir.h"

namespace detrain::sign {
namespace {

using nlohmann::json;
using testutil::TempDir;

const std::string kTiny =
    std::string(DETRAIN_SOURCE_DIR) + "/tests/evidence/testdata/tiny/train.dt";
const SignerInfo kSigner{"test", "0000000", ""};

void MakeBundle(const std::string& dir, int64_t steps) {
  bundle::RunOptions o;
  o.program = kTiny;
  o.output_dir = dir;
  o.steps = steps;
  o.detrain_version = "test";
  Result<bundle::RunSummary> r = bundle::RunAttested(o);
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_TRUE(r->complete);
}

std::string Read(const std::string& path) {
  Result<std::string> r = ReadFile(path);
  EXPECT_TRUE(r.ok()) << r.status().message();
  return r.ok() ? *r : "";
}

void Write(const std::string& path, const std::string& bytes) {
  ASSERT_TRUE(WriteFileAtomic(path, bytes).ok());
}

void Copy(const std::string& from, const std::string& to) {
  std::filesystem::remove_all(to);
  std::filesystem::copy(from, to, std::filesystem::copy_options::recursive);
}

class Attestations : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new TempDir("detrain_sign_test");
    alice_ = new PrivateKey(*PrivateKey::Generate());
    bob_ = new PrivateKey(*PrivateKey::Generate());
    MakeBundle(dir_->Sub("a"), 16);
    MakeBundle(dir_->Sub("b"), 12);  // another run: another manifest, other weights
    ASSERT_TRUE(SignBundle(dir_->Sub("a"), *alice_, kSigner).ok());
    ASSERT_TRUE(SignBundle(dir_->Sub("b"), *alice_, kSigner).ok());
  }
  static void TearDownTestSuite() {
    delete alice_;
    delete bob_;
    delete dir_;
  }
  void SetUp() override {
    work_ = std::make_unique<TempDir>("detrain_sign_case");
    a_ = work_->Sub("a");
    b_ = work_->Sub("b");
    Copy(dir_->Sub("a"), a_);
    Copy(dir_->Sub("b"), b_);
  }

  static verify::VerifyReport Verify(const std::string& dir, std::vector<PublicKey> trusted,
                                     bool replay = false) {
    verify::VerifyOptions o;
    o.bundle = dir;
    o.replay = replay;
    o.recompile = replay;
    o.integrity_threads = 2;
    o.trusted_keys = std::move(trusted);
    return verify::VerifyBundle(o);
  }
  static std::string RootOf(const std::string& dir) {
    return json::parse(Read(JoinPath(dir, "manifest.json")))["root_digest"].get<std::string>();
  }
  // Fails with a message holding `want`, in the signatures phase.
  static void ExpectRejected(const std::string& dir, std::vector<PublicKey> trusted,
                             const std::string& want) {
    verify::VerifyReport r = Verify(dir, std::move(trusted));
    EXPECT_EQ(r.outcome, verify::Outcome::kFailed) << r.message;
    EXPECT_NE(r.message.find(want), std::string::npos) << r.message;
    ASSERT_FALSE(r.phases.empty());
    EXPECT_EQ(r.phases.back().name, "signatures") << r.message;
  }

  static TempDir* dir_;
  static PrivateKey* alice_;
  static PrivateKey* bob_;
  std::unique_ptr<TempDir> work_;
  std::string a_, b_;
};

TempDir* Attestations::dir_ = nullptr;
PrivateKey* Attestations::alice_ = nullptr;
PrivateKey* Attestations::bob_ = nullptr;

TEST_F(Attestations, ASignedBundleVerifiesUnderItsKey) {
  verify::VerifyReport r = Verify(a_, {bob_->public_key(), alice_->public_key()}, true);
  ASSERT_EQ(r.outcome, verify::Outcome::kVerified) << r.message;
  ASSERT_EQ(r.attestations.size(), 3u);
  for (const AttestationCheck& c : r.attestations) {
    EXPECT_EQ(c.signer, alice_->public_key().id()) << c.file;
  }
  EXPECT_EQ(r.attestations[0].predicate_type, kModelSigningPredicate);
  EXPECT_EQ(r.attestations[1].predicate_type, kSlsaProvenance);
  EXPECT_EQ(r.attestations[2].predicate_type, kTrainingPredicate);
}

TEST_F(Attestations, TheStatementsSayWhatTheIssueAsks) {
  auto statement = [&](const char* file) {
    Result<Envelope> e = ParseEnvelope(Read(JoinPath(a_, file)));
    EXPECT_TRUE(e.ok());
    return json::parse(e->payload);
  };
  const json manifest = json::parse(Read(JoinPath(a_, "manifest.json")));
  const json t = statement(kTrainingFile);
  EXPECT_EQ(t["subject"].size(), 2u);
  EXPECT_EQ(t["subject"][0]["name"], "final/weights.safetensors");
  EXPECT_EQ(t["subject"][1]["annotations"]["root_digest"], manifest["root_digest"]);
  const json& p = t["predicate"];
  EXPECT_EQ(p["program"], manifest["program"]);
  EXPECT_EQ(p["data"]["files"], manifest["data"]["files"]);
  EXPECT_TRUE(p["data"]["split"].contains("train_index_sha256"));
  EXPECT_EQ(p["seed"], manifest["config"]["train"]["seed"]);
  EXPECT_EQ(p["stages"].size(), manifest["stages"].size());
  EXPECT_EQ(p["final"]["step_hash"], manifest["final"]["step_hash"]);
  EXPECT_EQ(p["replay"]["command"], "detrain verify BUNDLE");
  const json s = statement(kProvenanceFile);
  EXPECT_EQ(s["predicate"]["buildDefinition"]["buildType"], kBuildType);
  EXPECT_EQ(s["predicate"]["buildDefinition"]["externalParameters"]["seed"],
            manifest["config"]["train"]["seed"]);
  EXPECT_EQ(s["predicate"]["runDetails"]["builder"]["id"], kBuilderId);
  EXPECT_EQ(s["subject"], t["subject"]);
  // model.sig: a Sigstore bundle whose statement's root is final/'s.
  const json sig = json::parse(Read(JoinPath(a_, kModelSignatureFile)));
  EXPECT_EQ(sig["mediaType"], kSigstoreBundleType);
  EXPECT_EQ(sig["verificationMaterial"]["publicKey"]["hint"], alice_->public_key().id());
  // Private keys never enter a bundle.
  const std::string key_pem = *alice_->Pem();
  const std::string body = key_pem.substr(28, 40);  // some of its base64
  const std::vector<std::string> files = *ListFiles(a_);
  for (const std::string& f : files) {
    EXPECT_EQ(Read(JoinPath(a_, f)).find(body), std::string::npos) << f;
  }
}

TEST_F(Attestations, WithoutTrustedKeysTheSubjectsAreStillChecked) {
  verify::VerifyReport r = Verify(a_, {});
  ASSERT_EQ(r.outcome, verify::Outcome::kVerified) << r.message;
  EXPECT_NE(r.message.find("signatures not checked"), std::string::npos) << r.message;
  Copy(JoinPath(b_, kTrainingFile), JoinPath(a_, kTrainingFile));
  r = Verify(a_, {});
  EXPECT_EQ(r.outcome, verify::Outcome::kFailed);
  EXPECT_NE(r.message.find("another bundle"), std::string::npos) << r.message;
}

TEST_F(Attestations, WrongKeyIsRejected) {
  ExpectRejected(a_, {bob_->public_key()}, "no trusted key (--trusted-key) verifies");
}

TEST_F(Attestations, AnEditedPayloadIsRejected) {
  const std::string path = JoinPath(a_, kProvenanceFile);
  Result<Envelope> e = ParseEnvelope(Read(path));
  ASSERT_TRUE(e.ok());
  const size_t at = e->payload.find("\"seed\":");
  ASSERT_NE(at, std::string::npos);
  e->payload.insert(at + 7, "1");  // another seed, same signature
  Write(path, EnvelopeText(*e));
  ExpectRejected(a_, {alice_->public_key()}, "does not verify under trusted key");
}

TEST_F(Attestations, EditedWeightsAreRejected) {
  const std::string path = JoinPath(a_, bundle::kFinalWeights);
  std::string w = Read(path);
  w[w.size() - 1] ^= 1;
  Write(path, w);
  // The verifier stops at integrity already (the weights are the state's bytes); the model
  // signature, checked on its own, names the file.
  verify::VerifyReport r = Verify(a_, {alice_->public_key()});
  EXPECT_EQ(r.outcome, verify::Outcome::kFailed);
  AttestationReport a = CheckAttestations(a_, RootOf(a_), {alice_->public_key()});
  EXPECT_FALSE(a.ok);
  EXPECT_NE(a.message.find("attestation/model.sig: final/weights.safetensors has sha256"),
            std::string::npos)
      << a.message;
  EXPECT_NE(a.message.find("changed after signing"), std::string::npos) << a.message;
}

TEST_F(Attestations, AValidSignatureOverAnotherBundleIsRejected) {
  Copy(JoinPath(b_, kTrainingFile), JoinPath(a_, kTrainingFile));
  ExpectRejected(a_, {alice_->public_key()},
                 "attestation/training.intoto.json: a signed statement that is about another "
                 "bundle");
  Copy(JoinPath(b_, kModelSignatureFile), JoinPath(a_, kModelSignatureFile));
  AttestationReport r = CheckAttestations(a_, RootOf(a_), {alice_->public_key()});
  EXPECT_FALSE(r.ok);
  EXPECT_NE(r.message.find("attestation/model.sig"), std::string::npos) << r.message;
}

TEST_F(Attestations, AReplayedOldVerificationSummaryIsRejected) {
  VerificationFacts facts;
  facts.passed = true;
  facts.message = "verified";
  facts.time_verified = "2026-12-03T00:00:00Z";
  facts.checks = json::object();
  // B's summary, signed and valid, placed in A.
  facts.root_digest = RootOf(b_);
  const std::string name = VerificationFile(bob_->public_key());
  ASSERT_TRUE(WriteVerificationSummary(b_, JoinPath(b_, name), *bob_, kSigner, facts).ok());
  ASSERT_EQ(Verify(b_, {alice_->public_key(), bob_->public_key()}).outcome,
            verify::Outcome::kVerified);
  Copy(JoinPath(b_, name), JoinPath(a_, name));
  ExpectRejected(a_, {alice_->public_key(), bob_->public_key()},
                 "a verification summary that is about another bundle");
  // A's own summary, relying on attestations since replaced by a new signing: stale.
  facts.root_digest = RootOf(a_);
  AttestationCheck input{kTrainingFile, kTrainingPredicate, alice_->public_key().id(), ""};
  facts.input_attestations = {input};
  ASSERT_TRUE(WriteVerificationSummary(a_, JoinPath(a_, name), *bob_, kSigner, facts).ok());
  ASSERT_EQ(Verify(a_, {alice_->public_key(), bob_->public_key()}).outcome,
            verify::Outcome::kVerified);
  ASSERT_TRUE(SignBundle(a_, *alice_, kSigner).ok());  // new signatures (ECDSA is randomised)
  ExpectRejected(a_, {alice_->public_key(), bob_->public_key()},
                 "relied on attestation/training.intoto.json with sha256");
}

TEST_F(Attestations, TheVerificationSummaryRecordsTheVerdict) {
  VerificationFacts facts;
  facts.passed = false;
  facts.message = "step 3: loss differs";
  facts.root_digest = RootOf(a_);
  facts.time_verified = "2026-12-03T10:00:00Z";
  facts.checks = {{"replay", {{"from_step", 0}, {"to_step", 16}}}};
  facts.input_attestations = {{kProvenanceFile, kSlsaProvenance, alice_->public_key().id(), ""}};
  const std::string path = JoinPath(a_, VerificationFile(bob_->public_key()));
  ASSERT_TRUE(WriteVerificationSummary(a_, path, *bob_, kSigner, facts).ok());
  Result<Envelope> e = ParseEnvelope(Read(path));
  ASSERT_TRUE(e.ok());
  ASSERT_NE(TrustedSigner(*e, {bob_->public_key()}), nullptr);
  const json s = json::parse(e->payload);
  EXPECT_EQ(s["predicateType"], kVerificationSummary);
  const json& p = s["predicate"];
  EXPECT_EQ(p["verificationResult"], "FAILED");
  EXPECT_EQ(p["verifiedLevels"], json::array()) << "no level for a failed verification";
  EXPECT_EQ(p["resourceUri"], "detrain-bundle:sha256:" + RootOf(a_));
  EXPECT_EQ(p["timeVerified"], "2026-12-03T10:00:00Z");
  EXPECT_EQ(p["verifier"]["id"], kVerifierId);
  EXPECT_EQ(p["inputAttestations"][0]["uri"], kProvenanceFile);
  EXPECT_EQ(p["detrain_checks"]["replay"]["to_step"], 16);
  // The summary is checked too: a FAILED verdict is still a valid statement.
  verify::VerifyReport r = Verify(a_, {alice_->public_key(), bob_->public_key()});
  ASSERT_EQ(r.outcome, verify::Outcome::kVerified) << r.message;
  EXPECT_NE(r.attestations.back().detail.find("FAILED"), std::string::npos);
}

TEST_F(Attestations, UnknownFilesLinksAndJunkAreRejected) {
  {
    Write(JoinPath(a_, "attestation/extra.json"), "{}");
    ExpectRejected(a_, {}, "attestation/extra.json: not an attestation this bundle format");
    std::filesystem::remove(JoinPath(a_, "attestation/extra.json"));
  }
  {
    ASSERT_EQ(::symlink("/etc/passwd", JoinPath(a_, "attestation/evil").c_str()), 0);
    verify::VerifyReport r = Verify(a_, {});
    EXPECT_NE(r.outcome, verify::Outcome::kVerified);
    EXPECT_NE(r.message.find("attestation/evil: not a regular file or directory (a symbolic link)"),
              std::string::npos)
        << r.message;
    std::filesystem::remove(JoinPath(a_, "attestation/evil"));
  }
  for (const std::string& junk : {std::string(), std::string("{"), std::string(5000, '['),
                                  std::string("{\"payload\":\"\\u0000\"}")}) {
    Write(JoinPath(a_, kTrainingFile), junk);
    ExpectRejected(a_, {}, "attestation/training.intoto.json: not a DSSE envelope");
  }
}

TEST_F(Attestations, TrustedKeysWithoutAttestationsFail) {
  std::filesystem::remove_all(JoinPath(a_, kAttestationDir));
  ExpectRejected(a_, {alice_->public_key()}, "the bundle is not signed");
  verify::VerifyReport r = Verify(a_, {});
  EXPECT_EQ(r.outcome, verify::Outcome::kVerified) << r.message;
  for (const verify::PhaseReport& p : r.phases) EXPECT_NE(p.name, "signatures");
}

TEST_F(Attestations, AnotherPredicateUnderAKnownNameIsRejected) {
  // A valid, trusted envelope of the provenance under the training statement's name.
  Copy(JoinPath(a_, kProvenanceFile), JoinPath(a_, kTrainingFile));
  ExpectRejected(a_, {alice_->public_key()}, "predicate type \"https://slsa.dev/provenance/v1\"");
}

}  // namespace
}  // namespace detrain::sign
