// XLA's select-and-scatter (max-pooling's gradient) through the importer's expansion
// (select_and_scatter.cc), on the interpreter, against JAX's values.
#include <limits>

#include "xla_test_util.h"

namespace detrain::testing {
namespace {

// select-and-scatter, max-pooling's gradient, expanded by the importer (select_and_scatter.cc).
// The expected values are jax 0.10.2's _select_and_scatter_add with select=ge on the same input.
const std::string kSelectGe =
    "ge {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n"
    "  ROOT c = pred[] compare(a, b), direction=GE\n}\n";

TEST(Windowed, SelectAndScatterIsXlas) {
  // Overlapping windows of 3: ties keep the first element, and the element picked by two
  // windows receives both values.
  auto overlap = RunXla(
      "  x = f32[5] parameter(0)\n  s = f32[3] parameter(1)\n  z = f32[] constant(0)\n"
      "  ROOT r = f32[5] select-and-scatter(x, s, z), window={size=3}, select=ge, scatter=add\n",
      {F32({5}, {1, 3, 2, 3, 1}), F32({3}, {10, 20, 30})}, kSelectGe + kAddF32);
  EXPECT_EQ(Values<float>(overlap), (std::vector<float>{0, 30, 0, 30, 0}));
  // 2x2 pooling with stride 2: ties, NaN (a NaN is replaced by what follows it, and replaces
  // what precedes it, as XLA's GE compare decides) and negative values.
  const float nan = std::numeric_limits<float>::quiet_NaN();
  auto pool = RunXla(
      "  x = f32[4,4] parameter(0)\n  s = f32[2,2] parameter(1)\n  z = f32[] constant(0)\n"
      "  ROOT r = f32[4,4] select-and-scatter(x, s, z), window={size=2x2 stride=2x2}, "
      "select=ge, scatter=add\n",
      {F32({4, 4}, {1, 5, 2, 2, 5, 0, 2, 2, nan, 1, -1, -3, 2, nan, -2, -1}),
       F32({2, 2}, {1, 2, 3, 4})},
      kSelectGe + kAddF32);
  EXPECT_EQ(Values<float>(pool),
            (std::vector<float>{0, 1, 2, 0, 0, 0, 0, 0, 0, 0, 4, 0, 0, 3, 0, 0}));
  // A nonzero init value reaches every element, picked or not.
  auto init = RunXla(
      "  x = f32[4] parameter(0)\n  s = f32[2] parameter(1)\n  z = f32[] constant(0.5)\n"
      "  ROOT r = f32[4] select-and-scatter(x, s, z), window={size=2 stride=2}, select=ge, "
      "scatter=add\n",
      {F32({4}, {1, 2, 4, 3}), F32({2}, {10, 20})}, kSelectGe + kAddF32);
  EXPECT_EQ(Values<float>(init), (std::vector<float>{0.5f, 10.5f, 20.5f, 0.5f}));
}

}  // namespace
}  // namespace detrain::testing
