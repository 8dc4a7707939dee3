// XLA's layout ops through the importer (layouts.cc): copy and bitcast between layouts, on the
// interpreter, against hand-computed memory orders.
#include "xla_test_util.h"

namespace detrain::testing {
namespace {

// Layouts say how a value lies in memory: copy never changes the value, and bitcast reads the
// operand's memory in the result's layout. x = [[1, 2, 3], [4, 5, 6]] column-major ({0,1})
// lies in memory as 1 4 2 5 3 6.
TEST(Layouts, CopyIsTheIdentityAndBitcastReadsMemoryOrder) {
  const Literal x = F32({2, 3}, {1, 2, 3, 4, 5, 6});
  EXPECT_EQ(RunXlaF("  x = f32[2,3]{1,0} parameter(0)\n  c = f32[2,3]{0,1} copy(x)\n"
                    "  ROOT r = f32[2,3]{1,0} copy(c)\n",
                    {x}),
            (std::vector<float>{1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(RunXlaF("  x = f32[2,3]{1,0} parameter(0)\n  c = f32[2,3]{0,1} copy(x)\n"
                    "  ROOT b = f32[6]{0} bitcast(c)\n",
                    {x}),
            (std::vector<float>{1, 4, 2, 5, 3, 6}));
  // The other way: memory 1..6 read as a column-major 2x3 is [[1, 3, 5], [2, 4, 6]].
  EXPECT_EQ(RunXlaF("  v = f32[6]{0} parameter(0)\n  ROOT b = f32[2,3]{0,1} bitcast(v)\n",
                    {F32({6}, {1, 2, 3, 4, 5, 6})}),
            (std::vector<float>{1, 3, 5, 2, 4, 6}));
  // A transpose in memory: [3,2]{0,1} holds the same bytes as [2,3]{1,0}.
  EXPECT_EQ(RunXlaF("  x = f32[2,3]{1,0} parameter(0)\n  ROOT b = f32[3,2]{0,1} bitcast(x)\n", {x}),
            (std::vector<float>{1, 4, 2, 5, 3, 6}));
  // Rank 3, {0,2,1}: memory order is dimension 1, then 2, then 0 (minor).
  std::vector<float> y(24);
  for (int i = 0; i < 24; ++i) y[i] = static_cast<float>(i);
  std::vector<float> got =
      RunXlaF("  y = f32[2,3,4]{0,2,1} parameter(0)\n  ROOT b = f32[24]{0} bitcast(y)\n",
              {F32({2, 3, 4}, y)});
  std::vector<float> want;
  for (int j = 0; j < 3; ++j) {
    for (int k = 0; k < 4; ++k) {
      for (int i = 0; i < 2; ++i) want.push_back(static_cast<float>(i * 12 + j * 4 + k));
    }
  }
  EXPECT_EQ(got, want);
}

}  // namespace
}  // namespace detrain::testing
