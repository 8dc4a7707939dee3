// See sha256.h. A failure inside OpenSSL's SHA-256 (allocation, provider missing) is an
// unrecoverable environment fault, so it aborts with a message rather than returning a wrong
// digest.
#include "attest/sha256.h"

#include <openssl/evp.h>

#include <cstdio>
#include <cstdlib>

namespace detrain::attest {
namespace {

[[noreturn]] void Die(const char* what) {
  std::fprintf(stderr, "detrain: OpenSSL SHA-256 failure in %s\n", what);
  std::abort();
}

// SHA-256 fetched from the default provider once. EVP_sha256() makes EVP_DigestInit_ex fetch the
// algorithm again on every call (under a global lock): most of the cost of hashing a small input,
// and a digest of a state of a million empty tensors hashes three small inputs per tensor.
// EVP_MD_fetch is thread-safe and so is a function-local static's initialization; the handle
// lives as long as the process.
const EVP_MD* Sha256Md() {
  static const EVP_MD* const md = [] {
    EVP_MD* m = EVP_MD_fetch(nullptr, "SHA256", nullptr);
    if (m == nullptr) Die("EVP_MD_fetch");
    return m;
  }();
  return md;
}

}  // namespace

struct Sha256::EvpContext {
  EVP_MD_CTX* md = nullptr;
};

Sha256::Sha256() : ctx_(new EvpContext) {
  ctx_->md = EVP_MD_CTX_new();
  if (ctx_->md == nullptr) Die("EVP_MD_CTX_new");
  Reset();
}

Sha256::~Sha256() {
  EVP_MD_CTX_free(ctx_->md);
  delete ctx_;
}

void Sha256::Reset() {
  if (EVP_DigestInit_ex(ctx_->md, Sha256Md(), nullptr) != 1) Die("EVP_DigestInit_ex");
}

void Sha256::Update(const void* data, size_t size) {
  if (size == 0) return;
  if (EVP_DigestUpdate(ctx_->md, data, size) != 1) Die("EVP_DigestUpdate");
}

Digest256 Sha256::Final() {
  Digest256 out;
  unsigned int len = 0;
  if (EVP_DigestFinal_ex(ctx_->md, out.data(), &len) != 1 || len != out.size()) {
    Die("EVP_DigestFinal_ex");
  }
  return out;
}

std::string HexEncode(const uint8_t* data, size_t size) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string hex(2 * size, '0');
  for (size_t i = 0; i < size; ++i) {
    hex[2 * i] = kDigits[data[i] >> 4];
    hex[2 * i + 1] = kDigits[data[i] & 15];
  }
  return hex;
}

std::string Sha256::ToHex(const Digest256& digest) {
  return HexEncode(digest.data(), digest.size());
}

bool ParseDigestHex(std::string_view hex, Digest256* out) {
  if (hex.size() != 64) return false;
  auto nibble = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  for (size_t i = 0; i < 32; ++i) {
    int hi = nibble(hex[2 * i]), lo = nibble(hex[2 * i + 1]);
    if (hi < 0 || lo < 0) return false;
    (*out)[i] = static_cast<uint8_t>(hi << 4 | lo);
  }
  return true;
}

Digest256 Sha256Of(std::string_view bytes) {
  Sha256 h;
  h.Update(bytes);
  return h.Final();
}

std::string Sha256Hex(std::string_view bytes) { return Sha256::ToHex(Sha256Of(bytes)); }

}  // namespace detrain::attest
