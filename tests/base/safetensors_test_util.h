// Helpers of the safetensors tests (safetensors_test.cc, safetensors_scale_test.cc): files with
// hand-written headers. Test-only.
#ifndef DETRAIN_TESTS_BASE_SAFETENSORS_TEST_UTIL_H_
#define DETRAIN_TESTS_BASE_SAFETENSORS_TEST_UTIL_H_

#include <cstdint>
#include <string>
#include <string_view>

namespace detrain::safetensors_test {

// `v` as 8 little-endian bytes (the header length prefix).
inline std::string U64Le(uint64_t v) {
  std::string s;
  for (int i = 0; i < 8; ++i) s.push_back(static_cast<char>(v >> (8 * i)));
  return s;
}

// A file with a hand-written header (no padding) and data.
inline std::string RawFile(std::string_view header, std::string_view data) {
  return U64Le(header.size()) + std::string(header) + std::string(data);
}

}  // namespace detrain::safetensors_test

#endif  // DETRAIN_TESTS_BASE_SAFETENSORS_TEST_UTIL_H_
