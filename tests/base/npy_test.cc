// Hostile .npy headers (base/npy.h ParseNpy): each must be an error, never undefined behaviour.
// The cases come from the npy fuzzer (tests/fuzz/npy_fuzz.cc; its inputs are kept in
// tests/fuzz/crashes/npy/).
#include "base/npy.h"

#include <gtest/gtest.h>

#include <string>

#include "base/budget.h"

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

// The array's data is a tensor: at the one-tensor budget it parses, one byte past it is an error
// that names the shape, the dtype and --max-memory. Both overloads agree.
TEST(NpyHostile, DataIsCheckedAgainstTheBudget) {
  const std::string bytes = NpyWithShape("(2,)", std::string(8, '\x01'));
  SetMemoryBudget({8, 8});
  Result<NpyArray> view = ParseNpy(std::string_view(bytes));
  Result<NpyArray> moved = ParseNpy(std::string(bytes));
  ASSERT_TRUE(view.ok()) << view.status().message();
  ASSERT_TRUE(moved.ok()) << moved.status().message();
  EXPECT_EQ(view->data, std::string(8, '\x01'));
  EXPECT_EQ(moved->data, view->data);
  EXPECT_EQ(moved->shape, view->shape);
  SetMemoryBudget({7, 7});
  Result<NpyArray> past = ParseNpy(std::string(bytes));
  SetMemoryBudget({0, 0});  // the default again
  ASSERT_FALSE(past.ok());
  EXPECT_EQ(past.status().code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(past.status().message(),
            "an .npy array of shape (2,) and dtype <f4 needs 8 B, more than the one-tensor memory "
            "budget of 7 B (raise it with --max-memory SIZE, e.g. --max-memory 64G)");
}

}  // namespace
}  // namespace detrain
