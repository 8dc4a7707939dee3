// Keys, base64 and DSSE envelopes (evidence/sign/keys.h, dsse.h): the DSSE specification's own
// test vector, the key ids the standard verifiers compute, and hostile envelopes and key files.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <fstream>
#include <string>

#include "attest/sha256.h"
#include "base/fs.h"
#include "evidence/sign/dsse.h"
#include "evidence/sign/keys.h"
#include "temp_dir.h"

namespace detrain::sign {
namespace {

using testutil::TempDir;

// secure-systems-lab/dsse protocol.md: the ECDSA P-256 key (X, Y, d given there; this is its
// SubjectPublicKeyInfo) and the signature of PAE("http://example.com/HelloWorld",
// "hello world"), there as raw r||s, here DER-encoded for OpenSSL.
constexpr char kDssePublicKey[] =
    "-----BEGIN PUBLIC KEY-----\n"
    "MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAEZ805D3eqNZywjCI19lInBJOp7YMr\n"
    "CrzAH3CVTAOQ0jgMeCvVTiaRJaRPRDOv8UMs6U4SvKc6pnrIDOoSYI3fdA==\n"
    "-----END PUBLIC KEY-----\n";
constexpr char kDsseType[] = "http://example.com/HelloWorld";
constexpr char kDsseBody[] = "hello world";
constexpr char kDsseSignatureDer[] =
    "MEQCIANyarEBrVbCdjtsaqyOSHJ14qeRk6CdxfhZ2fjvPEo7AiBR6rDAajabZKciJTfUiHqJPcIAriEGAHTVeCUjW2JI"
    "ZA==";

// A key model_signing 1.1.1 signed with, and the hint it wrote and the keyid securesystemslib
// 1.6.0 computed for it (both checked with those packages).
constexpr char kOtherPublicKey[] =
    "-----BEGIN PUBLIC KEY-----\n"
    "MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAErp2GEwqMieFvp9Pgy/2zJN8rT1w2\n"
    "rl+bDrJ2Ve9DOxQ4/bBsdD1XGH+1bP2/eh9lir8ok4EC0TXemCOcHPok7w==\n"
    "-----END PUBLIC KEY-----\n";
constexpr char kOtherHint[] = "2ea1e3c71604bd42262d89b3ba59525b34548a964f6b4dfd6e273c8a4d96b483";
constexpr char kOtherSslibKeyid[] =
    "b475bf401bbf299339660af748a1fae5bd1d34054cf85a8dcdd53627ba3a57fe";

// A P-384 public key (openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-384).
constexpr char kP384PublicKey[] =
    "-----BEGIN PUBLIC KEY-----\n"
    "MHYwEAYHKoZIzj0CAQYFK4EEACIDYgAEiWLHXchtF96yKOkZwVTppGkxybsAVFZx\n"
    "ofdh0apFJBNkKeorf4Ew9GvWUbwzJ/vQcfARXwpmHxIYr55n9RcuI6JFk1iENhNT\n"
    "ykciEa1m+UkdVKDW/pTjR0GPMo6Q0XAE\n"
    "-----END PUBLIC KEY-----\n";

TEST(Base64, Rfc4648Vectors) {
  const std::pair<const char*, const char*> vectors[] = {{"", ""},
                                                         {"f", "Zg=="},
                                                         {"fo", "Zm8="},
                                                         {"foo", "Zm9v"},
                                                         {"foob", "Zm9vYg=="},
                                                         {"fooba", "Zm9vYmE="},
                                                         {"foobar", "Zm9vYmFy"}};
  for (const auto& [plain, encoded] : vectors) {
    EXPECT_EQ(Base64Encode(plain), encoded);
    Result<std::string> back = Base64Decode(encoded);
    ASSERT_TRUE(back.ok()) << encoded;
    EXPECT_EQ(*back, plain);
    // Unpadded is accepted too.
    std::string bare = encoded;
    while (!bare.empty() && bare.back() == '=') bare.pop_back();
    ASSERT_TRUE(Base64Decode(bare).ok()) << bare;
    EXPECT_EQ(*Base64Decode(bare), plain);
  }
}

TEST(Base64, UrlSafeAlphabetAndErrors) {
  const std::string bytes = "\xfb\xff\xbf";
  EXPECT_EQ(Base64Encode(bytes), "+/+/");
  ASSERT_TRUE(Base64Decode("-_-_").ok());
  EXPECT_EQ(*Base64Decode("-_-_"), bytes);
  for (const char* bad : {"Zg=a", "Z", "Zm9v\n", "Zm 9v", "Zg===", "=Zg=", "Zm9v*"}) {
    Result<std::string> r = Base64Decode(bad);
    EXPECT_FALSE(r.ok()) << bad;
    if (!r.ok()) {
      EXPECT_NE(r.status().message().find("base64"), std::string::npos);
    }
  }
}

TEST(Dsse, PaeIsTheSpecificationsBytes) {
  EXPECT_EQ(Pae(kDsseType, kDsseBody), "DSSEv1 29 http://example.com/HelloWorld 11 hello world");
  EXPECT_EQ(Pae("", ""), "DSSEv1 0  0 ");
  EXPECT_EQ(
      Pae(kInTotoPayloadType, R"({"_type":"https://in-toto.io/Statement/v1"})"),
      R"(DSSEv1 28 application/vnd.in-toto+json 43 {"_type":"https://in-toto.io/Statement/v1"})");
}

TEST(Dsse, TheSpecificationsSignatureVerifies) {
  Result<PublicKey> key = PublicKey::FromPem(kDssePublicKey, "dsse vector");
  ASSERT_TRUE(key.ok()) << key.status().message();
  Result<std::string> sig = Base64Decode(kDsseSignatureDer);
  ASSERT_TRUE(sig.ok());
  EXPECT_TRUE(key->Verify(Pae(kDsseType, kDsseBody), *sig));
  EXPECT_FALSE(key->Verify(Pae(kDsseType, "hello world!"), *sig));
  EXPECT_FALSE(key->Verify(Pae("http://example.com/Other", kDsseBody), *sig));
  // The spec's envelope, with the DER signature: parses and verifies under the key.
  const std::string envelope = std::string(R"({"payload":"aGVsbG8gd29ybGQ=","payloadType":")") +
                               kDsseType + R"(","signatures":[{"sig":")" + kDsseSignatureDer +
                               R"("}]})";
  Result<Envelope> e = ParseEnvelope(envelope);
  ASSERT_TRUE(e.ok()) << e.status().message();
  EXPECT_EQ(e->payload, kDsseBody);
  EXPECT_NE(TrustedSigner(*e, {*key}), nullptr);
}

TEST(Keys, IdsAreTheOnesTheStandardVerifiersCompute) {
  Result<PublicKey> key = PublicKey::FromPem(kOtherPublicKey, "model_signing's key");
  ASSERT_TRUE(key.ok()) << key.status().message();
  EXPECT_EQ(key->pem(), kOtherPublicKey);
  EXPECT_EQ(key->id(), kOtherHint);
  EXPECT_EQ(key->sslib_keyid(), kOtherSslibKeyid);
}

TEST(Keys, SignVerifyAndPemRoundTrip) {
  Result<PrivateKey> key = PrivateKey::Generate();
  ASSERT_TRUE(key.ok()) << key.status().message();
  Result<std::string> sig = key->Sign("message");
  ASSERT_TRUE(sig.ok());
  EXPECT_EQ(static_cast<unsigned char>((*sig)[0]), 0x30) << "DER SEQUENCE";
  EXPECT_TRUE(key->public_key().Verify("message", *sig));
  EXPECT_FALSE(key->public_key().Verify("messagf", *sig));
  Result<PrivateKey> other = PrivateKey::Generate();
  ASSERT_TRUE(other.ok());
  EXPECT_FALSE(other->public_key().Verify("message", *sig));
  EXPECT_NE(other->public_key().id(), key->public_key().id());
  Result<std::string> pem = key->Pem();
  ASSERT_TRUE(pem.ok());
  EXPECT_EQ(pem->rfind("-----BEGIN PRIVATE KEY-----\n", 0), 0u);
  Result<PrivateKey> back = PrivateKey::FromPem(*pem, "round trip");
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(back->public_key().id(), key->public_key().id());
  // A truncated or garbage signature is just "no".
  EXPECT_FALSE(key->public_key().Verify("message", sig->substr(0, 10)));
  EXPECT_FALSE(key->public_key().Verify("message", ""));
  EXPECT_FALSE(key->public_key().Verify("message", std::string(72, '\x30')));
}

TEST(Keys, KeygenWritesAPairAndNeverReplacesOne) {
  TempDir dir;
  Result<PrivateKey> key = PrivateKey::Generate();
  ASSERT_TRUE(key.ok());
  const std::string name = dir.Sub("alice");
  ASSERT_TRUE(WriteKeyPair(*key, name).ok());
  struct stat st {};
  ASSERT_EQ(::stat((name + ".key").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  Result<PrivateKey> loaded = LoadPrivateKey(name + ".key");
  ASSERT_TRUE(loaded.ok()) << loaded.status().message();
  Result<PublicKey> pub = LoadPublicKey(name + ".pub");
  ASSERT_TRUE(pub.ok()) << pub.status().message();
  EXPECT_EQ(pub->id(), key->public_key().id());
  EXPECT_EQ(loaded->public_key().id(), key->public_key().id());
  Status again = WriteKeyPair(*key, name);
  EXPECT_FALSE(again.ok());
  EXPECT_NE(again.message().find("never replaces"), std::string::npos);
}

TEST(Keys, BadKeyFilesAreRefusedWithAReason) {
  TempDir dir;
  auto write = [&](const std::string& name, const std::string& text, mode_t mode) {
    const std::string p = dir.Sub(name);
    std::ofstream(p) << text;
    ::chmod(p.c_str(), mode);
    return p;
  };
  Result<PrivateKey> key = PrivateKey::Generate();
  ASSERT_TRUE(key.ok());
  const std::string pem = *key->Pem();
  auto message = [](const auto& r) { return std::string(r.status().message()); };
  // Readable by others: refused, as ssh refuses.
  Result<PrivateKey> open = LoadPrivateKey(write("open.key", pem, 0644));
  ASSERT_FALSE(open.ok());
  EXPECT_NE(message(open).find("chmod 600"), std::string::npos) << message(open);
  // A public key where a private one is expected, and the other way round.
  Result<PrivateKey> pub_as_private = LoadPrivateKey(write("pub.key", kOtherPublicKey, 0600));
  ASSERT_FALSE(pub_as_private.ok());
  EXPECT_NE(message(pub_as_private).find("not an unencrypted PEM private key"), std::string::npos);
  Result<PublicKey> private_as_public = LoadPublicKey(write("priv.pub", pem, 0644));
  ASSERT_FALSE(private_as_public.ok());
  EXPECT_NE(message(private_as_public).find("not a PEM public key"), std::string::npos);
  // Another curve.
  Result<PublicKey> p384 = LoadPublicKey(write("p384.pub", kP384PublicKey, 0644));
  ASSERT_FALSE(p384.ok());
  EXPECT_NE(message(p384).find("secp384r1"), std::string::npos) << message(p384);
  // Empty, garbage, a directory, a FIFO, /dev/zero, a huge file: errors, never a hang.
  EXPECT_FALSE(LoadPublicKey(write("empty.pub", "", 0644)).ok());
  EXPECT_FALSE(LoadPublicKey(write("junk.pub", std::string(1000, '\xff'), 0644)).ok());
  EXPECT_FALSE(LoadPublicKey(dir.path()).ok());
  EXPECT_FALSE(LoadPublicKey("/dev/zero").ok());
  const std::string fifo = dir.Sub("fifo.pub");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0644), 0);
  EXPECT_FALSE(LoadPublicKey(fifo).ok());
  Result<PublicKey> huge =
      LoadPublicKey(write("huge.pub", std::string(kMaxKeyFileBytes + 1, 'A'), 0644));
  ASSERT_FALSE(huge.ok());
  EXPECT_NE(message(huge).find("at most"), std::string::npos);
  EXPECT_FALSE(LoadPublicKey(dir.Sub("absent.pub")).ok());
}

TEST(Dsse, SignedEnvelopeRoundTripsAndDetectsEdits) {
  Result<PrivateKey> key = PrivateKey::Generate();
  Result<PrivateKey> other = PrivateKey::Generate();
  ASSERT_TRUE(key.ok() && other.ok());
  Result<Envelope> e = SignEnvelope(kInTotoPayloadType, R"({"a":1})", *key);
  ASSERT_TRUE(e.ok());
  EXPECT_EQ(e->signatures[0].keyid, key->public_key().sslib_keyid());
  Result<Envelope> back = ParseEnvelope(EnvelopeText(*e));
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(back->payload, R"({"a":1})");
  const std::vector<PublicKey> trusted = {other->public_key(), key->public_key()};
  const PublicKey* who = TrustedSigner(*back, trusted);
  ASSERT_NE(who, nullptr);
  EXPECT_EQ(who->id(), key->public_key().id());
  EXPECT_EQ(TrustedSigner(*back, {other->public_key()}), nullptr) << "wrong key";
  Envelope edited = *back;
  edited.payload = R"({"a":2})";
  EXPECT_EQ(TrustedSigner(edited, trusted), nullptr) << "edited payload";
  edited = *back;
  edited.payload_type = "application/json";
  EXPECT_EQ(TrustedSigner(edited, trusted), nullptr) << "edited payload type";
}

TEST(Dsse, HostileEnvelopesAreErrorsNamingTheField) {
  const std::pair<std::string, const char*> cases[] = {
      {"", "JSON"},
      {"[]", "object"},
      {R"({"payloadType":"t","signatures":[{"sig":"AA=="}]})", "\"payload\""},
      {R"({"payload":"AA==","signatures":[{"sig":"AA=="}]})", "\"payloadType\""},
      {R"({"payload":"AA==","payloadType":"t"})", "signatures"},
      {R"({"payload":"AA==","payloadType":"t","signatures":[]})", "signatures"},
      {R"({"payload":"AA==","payloadType":"t","signatures":[7]})", "signatures[0]"},
      {R"({"payload":"AA==","payloadType":"t","signatures":[{}]})", "\"sig\""},
      {R"({"payload":"AA==","payloadType":"t","signatures":[{"sig":5}]})", "\"sig\""},
      {R"({"payload":"AA==","payloadType":"t","signatures":[{"sig":"AA==","keyid":5}]})",
       "\"keyid\""},
      {R"({"payload":"A*==","payloadType":"t","signatures":[{"sig":"AA=="}]})", "base64"},
      {R"({"payload":1e999,"payloadType":"t","signatures":[{"sig":"AA=="}]})", ""},
      {R"({"payload":"AA==","payload":"AA==","payloadType":"t","signatures":[{"sig":"AA=="}]})",
       "uplicate"},
      {std::string(100000, '[') + std::string(100000, ']'), "deep"},
      {std::string("{\"payload\":\"") + std::string(1, '\0') + "\"}", ""},
  };
  for (const auto& [text, want] : cases) {
    Result<Envelope> e = ParseEnvelope(text);
    ASSERT_FALSE(e.ok()) << text.substr(0, 80);
    EXPECT_NE(e.status().message().find(want), std::string::npos)
        << text.substr(0, 80) << " -> " << e.status().message();
  }
  EXPECT_FALSE(ParseEnvelope(std::string(kMaxEnvelopeBytes + 1, ' ')).ok());
}

TEST(Dsse, StatementsAreCheckedForTheirShape) {
  const std::pair<const char*, const char*> cases[] = {
      {"{", "not JSON"},
      {"[]", "object"},
      {R"({"_type":"https://in-toto.io/Statement/v0.1"})", "_type"},
      {R"({"_type":"https://in-toto.io/Statement/v1","subject":[{"digest":{"sha256":"a"}}]})",
       "predicateType"},
      {R"({"_type":"https://in-toto.io/Statement/v1","predicateType":"p","subject":[]})",
       "subject"},
      {R"({"_type":"https://in-toto.io/Statement/v1","predicateType":"p","subject":[{}]})",
       "digest"},
      {R"({"_type":"https://in-toto.io/Statement/v1","predicateType":"p","subject":[{"digest":{"sha256":1}}]})",
       "sha256"},
      {R"({"_type":"https://in-toto.io/Statement/v1","predicateType":"p","subject":[{"digest":{"sha256":"a"}}],"predicate":[]})",
       "predicate"},
  };
  for (const auto& [text, want] : cases) {
    Result<nlohmann::json> s = ParseStatement(text);
    ASSERT_FALSE(s.ok()) << text;
    EXPECT_NE(s.status().message().find(want), std::string::npos)
        << text << " -> " << s.status().message();
  }
  Result<std::string> payload = StatementPayload(
      Statement(nlohmann::json::array({{{"name", "x"}, {"digest", {{"sha256", "ab"}}}}}), "p",
                nlohmann::json::object()));
  ASSERT_TRUE(payload.ok());
  EXPECT_TRUE(ParseStatement(*payload).ok());
}

}  // namespace
}  // namespace detrain::sign
