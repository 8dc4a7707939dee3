// Signing keys: ECDSA on NIST P-256 with SHA-256, through OpenSSL 3 (DESIGN.md §7; the curve
// OpenSSF model signing's key method and securesystemslib's "ecdsa-sha2-nistp256" scheme
// accept). Signatures are DER-encoded (ASN.1 SEQUENCE of r and s), as both of those verifiers
// expect; OpenSSL's ECDSA is randomised, so two signatures of the same bytes differ.
//
// Files: a private key is PEM PKCS#8 ("BEGIN PRIVATE KEY", unencrypted; SEC 1 "BEGIN EC PRIVATE
// KEY" is read too), written with mode 0600; a public key is PEM SubjectPublicKeyInfo ("BEGIN
// PUBLIC KEY"). A key of another type or curve is an error that says what it is.
//
// A key's id is the lowercase hex SHA-256 of its public key's PEM text as OpenSSL writes it
// (64-column base64, LF line ends): the `hint` OpenSSF model signing puts in a signature
// bundle. DSSE envelopes carry securesystemslib's keyid instead (sslib_keyid()). Either only
// names a key; neither decides whether a signature is trusted (the DSSE rule).
//
// Thread safety: keys are immutable after construction and may be shared across threads.
#ifndef DETRAIN_EVIDENCE_SIGN_KEYS_H_
#define DETRAIN_EVIDENCE_SIGN_KEYS_H_

#include <memory>
#include <string>
#include <string_view>

#include "base/status.h"

namespace detrain::sign {

// The largest key file read (a PEM P-256 key is under 300 bytes).
inline constexpr size_t kMaxKeyFileBytes = 64 * 1024;

class PublicKey {
 public:
  // `origin` names the source in errors (a path).
  static Result<PublicKey> FromPem(std::string_view pem, const std::string& origin);

  // True when `signature` (DER) is a valid signature of `message` by this key.
  bool Verify(std::string_view message, std::string_view signature) const;

  const std::string& pem() const { return pem_; }  // canonical PEM SubjectPublicKeyInfo
  const std::string& id() const { return id_; }    // hex SHA-256 of pem()
  // The keyid securesystemslib (and so in-toto) computes for this key, which its DSSE
  // verifier requires a signature to carry: hex SHA-256 of
  // {"keytype":"ecdsa","keyval":{"public":PEM},"scheme":"ecdsa-sha2-nistp256"} in its
  // canonical JSON (keys sorted, no whitespace, only '"' and '\' escaped: the PEM's line feeds
  // stay raw bytes).
  const std::string& sslib_keyid() const { return sslib_keyid_; }

 private:
  friend class PrivateKey;
  std::shared_ptr<void> key_;  // EVP_PKEY
  std::string pem_, id_, sslib_keyid_;
};

class PrivateKey {
 public:
  static Result<PrivateKey> Generate();
  static Result<PrivateKey> FromPem(std::string_view pem, const std::string& origin);

  // A DER signature of SHA-256(message).
  Result<std::string> Sign(std::string_view message) const;

  const PublicKey& public_key() const { return public_; }
  // PEM PKCS#8, unencrypted.
  Result<std::string> Pem() const;

 private:
  std::shared_ptr<void> key_;  // EVP_PKEY
  PublicKey public_;
};

// Reads a key file: a regular file of at most kMaxKeyFileBytes. A private key readable by group
// or others is refused, as ssh refuses one.
Result<PrivateKey> LoadPrivateKey(const std::string& path);
Result<PublicKey> LoadPublicKey(const std::string& path);

// `detrain keygen -o NAME`: writes NAME.key (mode 0600) and NAME.pub; fails, writing nothing,
// when either exists.
Status WriteKeyPair(const PrivateKey& key, const std::string& name);

// Base64 (RFC 4648 §4, padded) through OpenSSL.
std::string Base64Encode(std::string_view bytes);
// Standard or URL-safe alphabet, padded or not (DSSE verifiers must accept both); no
// whitespace. Errors say what is wrong.
Result<std::string> Base64Decode(std::string_view text);

}  // namespace detrain::sign

#endif  // DETRAIN_EVIDENCE_SIGN_KEYS_H_
