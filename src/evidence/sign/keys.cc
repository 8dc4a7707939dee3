// See keys.h. ECDSA P-256 through OpenSSL 3's EVP interface: PEM keys read (the curve checked)
// and written, both key ids from the public PEM, signing and verifying; base64 for DSSE (the
// URL-safe alphabet is accepted on input).
#include "evidence/sign/keys.h"

#include <openssl/bio.h>
#include <openssl/core_names.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <sys/stat.h>

#include <cstdio>
#include <cstring>
#include <vector>

#include "attest/sha256.h"
#include "base/file_io.h"
#include "base/fs.h"

namespace detrain::sign {
namespace {

std::shared_ptr<void> Own(EVP_PKEY* key) {
  return std::shared_ptr<void>(key, [](void* k) { EVP_PKEY_free(static_cast<EVP_PKEY*>(k)); });
}
EVP_PKEY* Raw(const std::shared_ptr<void>& key) { return static_cast<EVP_PKEY*>(key.get()); }

struct BioDeleter {
  void operator()(BIO* b) const { BIO_free(b); }
};
using BioPtr = std::unique_ptr<BIO, BioDeleter>;

struct MdCtxDeleter {
  void operator()(EVP_MD_CTX* c) const { EVP_MD_CTX_free(c); }
};
using MdCtxPtr = std::unique_ptr<EVP_MD_CTX, MdCtxDeleter>;

// OpenSSL's last error as text, and the queue cleared.
std::string OpenSslError() {
  unsigned long e = ERR_get_error();
  ERR_clear_error();
  if (e == 0) return "unknown OpenSSL error";
  char buf[256];
  ERR_error_string_n(e, buf, sizeof(buf));
  return buf;
}

// Never prompts for a passphrase: an encrypted key is refused instead.
extern "C" int NoPassphrase(char*, int, int, void*) { return -1; }

std::string BioText(BIO* bio) {
  char* data = nullptr;
  long n = BIO_get_mem_data(bio, &data);
  return n > 0 ? std::string(data, static_cast<size_t>(n)) : std::string();
}

// The key must be EC on P-256.
Status CheckP256(EVP_PKEY* key, const std::string& origin) {
  if (!EVP_PKEY_is_a(key, "EC")) {
    return InvalidArgument(origin + ": a " + std::string(EVP_PKEY_get0_type_name(key)) +
                           " key; detrain signs with ECDSA on P-256 (detrain keygen)");
  }
  char group[64] = {};
  size_t len = 0;
  if (EVP_PKEY_get_utf8_string_param(key, OSSL_PKEY_PARAM_GROUP_NAME, group, sizeof(group), &len) !=
      1) {
    ERR_clear_error();
    return InvalidArgument(origin + ": an EC key without a named curve; expected P-256");
  }
  if (std::strcmp(group, "prime256v1") != 0 && std::strcmp(group, "P-256") != 0) {
    return InvalidArgument(origin + ": an EC key on " + std::string(group) +
                           "; detrain signs with ECDSA on P-256 (detrain keygen)");
  }
  return Status::Ok();
}

Result<std::string> PublicPem(EVP_PKEY* key) {
  BioPtr bio(BIO_new(BIO_s_mem()));
  if (!bio || PEM_write_bio_PUBKEY(bio.get(), key) != 1) {
    return Internal("encoding a public key: " + OpenSslError());
  }
  return BioText(bio.get());
}

Result<std::string> ReadKeyFile(const std::string& path) {
  DETRAIN_ASSIGN_OR_RETURN(uint64_t size, RegularFileSize(path));
  if (size > kMaxKeyFileBytes) {
    return InvalidArgument(path + ": " + std::to_string(size) + " bytes; a key file is at most " +
                           std::to_string(kMaxKeyFileBytes));
  }
  return ReadFile(path);
}

}  // namespace

Result<PublicKey> PublicKey::FromPem(std::string_view pem, const std::string& origin) {
  if (pem.size() > kMaxKeyFileBytes) return InvalidArgument(origin + ": not a PEM public key");
  BioPtr bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
  EVP_PKEY* raw = bio ? PEM_read_bio_PUBKEY(bio.get(), nullptr, NoPassphrase, nullptr) : nullptr;
  if (raw == nullptr) {
    ERR_clear_error();
    return InvalidArgument(origin +
                           ": not a PEM public key (expected \"-----BEGIN PUBLIC KEY-----\", as "
                           "detrain keygen writes NAME.pub)");
  }
  PublicKey k;
  k.key_ = Own(raw);
  DETRAIN_RETURN_IF_ERROR(CheckP256(raw, origin));
  DETRAIN_ASSIGN_OR_RETURN(k.pem_, PublicPem(raw));
  k.id_ = attest::Sha256Hex(k.pem_);
  // A PEM holds no quote or backslash, so it goes into securesystemslib's canonical JSON as is.
  k.sslib_keyid_ = attest::Sha256Hex(R"({"keytype":"ecdsa","keyval":{"public":")" + k.pem_ +
                                     R"("},"scheme":"ecdsa-sha2-nistp256"})");
  return k;
}

bool PublicKey::Verify(std::string_view message, std::string_view signature) const {
  MdCtxPtr ctx(EVP_MD_CTX_new());
  bool ok =
      ctx && EVP_DigestVerifyInit(ctx.get(), nullptr, EVP_sha256(), nullptr, Raw(key_)) == 1 &&
      EVP_DigestVerify(ctx.get(), reinterpret_cast<const unsigned char*>(signature.data()),
                       signature.size(), reinterpret_cast<const unsigned char*>(message.data()),
                       message.size()) == 1;
  ERR_clear_error();  // a bad signature leaves errors on the queue
  return ok;
}

Result<PrivateKey> PrivateKey::Generate() {
  EVP_PKEY* raw = EVP_PKEY_Q_keygen(nullptr, nullptr, "EC", "P-256");
  if (raw == nullptr) return Internal("generating a P-256 key: " + OpenSslError());
  PrivateKey k;
  k.key_ = Own(raw);
  DETRAIN_ASSIGN_OR_RETURN(std::string pem, PublicPem(raw));
  DETRAIN_ASSIGN_OR_RETURN(k.public_, PublicKey::FromPem(pem, "the generated key"));
  return k;
}

Result<PrivateKey> PrivateKey::FromPem(std::string_view pem, const std::string& origin) {
  if (pem.size() > kMaxKeyFileBytes) return InvalidArgument(origin + ": not a PEM private key");
  BioPtr bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
  EVP_PKEY* raw =
      bio ? PEM_read_bio_PrivateKey(bio.get(), nullptr, NoPassphrase, nullptr) : nullptr;
  if (raw == nullptr) {
    ERR_clear_error();
    return InvalidArgument(origin +
                           ": not an unencrypted PEM private key (expected \"-----BEGIN PRIVATE "
                           "KEY-----\", as detrain keygen writes NAME.key)");
  }
  PrivateKey k;
  k.key_ = Own(raw);
  DETRAIN_RETURN_IF_ERROR(CheckP256(raw, origin));
  DETRAIN_ASSIGN_OR_RETURN(std::string public_pem, PublicPem(raw));
  DETRAIN_ASSIGN_OR_RETURN(k.public_, PublicKey::FromPem(public_pem, origin));
  return k;
}

Result<std::string> PrivateKey::Sign(std::string_view message) const {
  MdCtxPtr ctx(EVP_MD_CTX_new());
  size_t len = 0;
  const auto* m = reinterpret_cast<const unsigned char*>(message.data());
  if (!ctx || EVP_DigestSignInit(ctx.get(), nullptr, EVP_sha256(), nullptr, Raw(key_)) != 1 ||
      EVP_DigestSign(ctx.get(), nullptr, &len, m, message.size()) != 1) {
    return Internal("signing: " + OpenSslError());
  }
  std::string sig(len, '\0');
  if (EVP_DigestSign(ctx.get(), reinterpret_cast<unsigned char*>(sig.data()), &len, m,
                     message.size()) != 1) {
    return Internal("signing: " + OpenSslError());
  }
  sig.resize(len);
  return sig;
}

Result<std::string> PrivateKey::Pem() const {
  BioPtr bio(BIO_new(BIO_s_mem()));
  if (!bio ||
      PEM_write_bio_PrivateKey(bio.get(), Raw(key_), nullptr, nullptr, 0, nullptr, nullptr) != 1) {
    return Internal("encoding a private key: " + OpenSslError());
  }
  return BioText(bio.get());
}

Result<PrivateKey> LoadPrivateKey(const std::string& path) {
  DETRAIN_ASSIGN_OR_RETURN(std::string pem, ReadKeyFile(path));
  DETRAIN_ASSIGN_OR_RETURN(PrivateKey key, PrivateKey::FromPem(pem, path));
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0 && (st.st_mode & 077) != 0) {
    char mode[8];
    std::snprintf(mode, sizeof(mode), "%04o", static_cast<unsigned>(st.st_mode & 07777));
    return InvalidArgument(path + ": mode " + mode +
                           "; a private key must be readable by its owner only (chmod 600 " + path +
                           ")");
  }
  return key;
}

Result<PublicKey> LoadPublicKey(const std::string& path) {
  DETRAIN_ASSIGN_OR_RETURN(std::string pem, ReadKeyFile(path));
  return PublicKey::FromPem(pem, path);
}

Status WriteKeyPair(const PrivateKey& key, const std::string& name) {
  const std::string private_path = name + ".key", public_path = name + ".pub";
  for (const std::string& p : {private_path, public_path}) {
    if (PathExists(p)) return InvalidArgument(p + ": exists; detrain keygen never replaces a key");
  }
  DETRAIN_ASSIGN_OR_RETURN(std::string pem, key.Pem());
  DETRAIN_RETURN_IF_ERROR(WriteFileAtomic(private_path, pem, 0600));
  Status s = WriteFileAtomic(public_path, key.public_key().pem(), 0644);
  if (!s.ok()) {
    (void)RemoveFile(private_path);  // a lone private key is no use; nothing half-made stays
    return s;
  }
  return Status::Ok();
}

std::string Base64Encode(std::string_view bytes) {
  std::string out(4 * ((bytes.size() + 2) / 3) + 1, '\0');
  int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                          reinterpret_cast<const unsigned char*>(bytes.data()),
                          static_cast<int>(bytes.size()));
  out.resize(static_cast<size_t>(n));
  return out;
}

Result<std::string> Base64Decode(std::string_view text) {
  // The largest text decoded: envelopes are read whole, and base64 of 64 MiB is plenty.
  constexpr size_t kMaxText = size_t{96} << 20;
  if (text.size() > kMaxText) return InvalidArgument("base64 text longer than 96 MiB");
  std::string s(text);
  size_t pad = 0;
  while (!s.empty() && s.back() == '=' && pad < 2) {
    s.pop_back();
    ++pad;
  }
  for (size_t i = 0; i < s.size(); ++i) {
    char& c = s[i];
    if (c == '-') c = '+';
    if (c == '_') c = '/';
    const bool ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
                    c == '+' || c == '/';
    if (!ok) {
      return InvalidArgument(
          "not base64: byte " + std::to_string(i) + " is " +
          (c == '=' ? std::string("padding before the end")
                    : "0x" + attest::HexEncode(reinterpret_cast<const uint8_t*>(&c), 1)));
    }
  }
  if (s.size() % 4 == 1) return InvalidArgument("not base64: a length of 4n+1 characters");
  if (pad > 0 && (s.size() + pad) % 4 != 0) return InvalidArgument("not base64: wrong padding");
  const size_t missing = (4 - s.size() % 4) % 4;
  s.append(missing, '=');
  std::string out(s.size() / 4 * 3, '\0');
  int n =
      EVP_DecodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                      reinterpret_cast<const unsigned char*>(s.data()), static_cast<int>(s.size()));
  if (n < 0) return InvalidArgument("not base64");
  // EVP_DecodeBlock counts the padding as zero bytes.
  out.resize(static_cast<size_t>(n) - missing);
  return out;
}

}  // namespace detrain::sign
