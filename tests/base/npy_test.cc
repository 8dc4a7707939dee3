// Hostile .npy headers (base/npy.h ParseNpy): each must be an error, never undefined behaviour.
// The cases come from the npy fuzzer (tests/fuzz/npy_fuzz.cc; its inputs are kept in
// tests/fuzz/crashes/npy/).
#include "base/npy.h"

#include <gtest/gtest.h>

#include <string>

namespace detrain {
namespace {

// A version-1 .npy file of `shape` (the tuple's text) and `data`, header padded to 64 bytes.
std::string NpyWithShape(const std::string& shape, const std::string& data) {
  std::string header = "{'descr': '<f4', 'fortran_order': False, 'shape': " + shape + ", }";
  while ((10 + header.size() + 1) % 64 != 0) header += ' ';
  header += '\n';
  std::string bytes = "\x93NUMPY\x01";
  bytes += '\0';
  bytes += static_cast<char>(header.size() & 0xff);
  bytes += static_cast<char>(header.size() >> 8);
  return bytes + header + data;
}

TEST(NpyHostile, DimensionProductThatOverflowsIsAnError) {
  // Each dimension is within the 2^48 per-dimension limit; their product overflows int64.
  auto r = ParseNpy(NpyWithShape("(1100000, 100000000000000, 2)", "abcd"));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kDataLoss);
  EXPECT_NE(r.status().message().find("too large"), std::string::npos) << r.status().message();
}

TEST(NpyHostile, ProductJustOverTheLimitIsAnError) {
  auto r = ParseNpy(NpyWithShape("(16777216, 16777217)", ""));  // 2^48 + 2^24 elements
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kDataLoss);
}

TEST(NpyHostile, ZeroDimensionBeforeAHugeOneIsAnEmptyArray) {
  auto r = ParseNpy(NpyWithShape("(0, 281474976710656)", ""));  // 0 x 2^48
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_TRUE(r->data.empty());
}

}  // namespace
}  // namespace detrain
