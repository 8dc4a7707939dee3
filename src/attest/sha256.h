// SHA-256 through OpenSSL's EVP interface (no hand-written hash code; DESIGN.md §4).
//
// Sha256 is a streaming hasher: Update() any number of times, then Final() once. Hex output is
// lowercase. Thread safety: one Sha256 object per thread; the free functions are thread-safe.
#ifndef DETRAIN_ATTEST_SHA256_H_
#define DETRAIN_ATTEST_SHA256_H_

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

namespace detrain::attest {

using Digest256 = std::array<uint8_t, 32>;

class Sha256 {
 public:
  Sha256();
  ~Sha256();
  Sha256(const Sha256&) = delete;
  Sha256& operator=(const Sha256&) = delete;

  void Update(const void* data, size_t size);
  void Update(std::string_view bytes) { Update(bytes.data(), bytes.size()); }
  // Returns the digest; the object must not be used afterwards except through Reset().
  Digest256 Final();
  std::string HexDigest() { return ToHex(Final()); }
  void Reset();

  static std::string ToHex(const Digest256& digest);

 private:
  struct EvpContext;
  EvpContext* ctx_;
};

Digest256 Sha256Of(std::string_view bytes);
std::string Sha256Hex(std::string_view bytes);

// Lowercase hex of any bytes.
std::string HexEncode(const uint8_t* data, size_t size);
// Parses 64 hex digits (either case); false on anything else.
bool ParseDigestHex(std::string_view hex, Digest256* out);

}  // namespace detrain::attest

#endif  // DETRAIN_ATTEST_SHA256_H_
