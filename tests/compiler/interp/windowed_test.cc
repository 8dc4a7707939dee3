// Windowed ops beyond the basics: dilations, transposed convolution, feature mapping through
// dim_labels (NHWC and NCHW), plus pred and 64-bit integer elementwise ops.
#include <limits>

#include "interp_test_util.h"

namespace detrain::testing {
namespace {

std::vector<float> Conv1d(const std::string& window, const std::vector<float>& x,
                          const std::vector<float>& k, int64_t out) {
  int64_t n = static_cast<int64_t>(x.size()), w = static_cast<int64_t>(k.size());
  std::string xs = "f32[1," + std::to_string(n) + ",1]", ks = "f32[" + std::to_string(w) + ",1,1]";
  return Values<float>(RunHlo("  x = " + xs + " parameter(0)\n  k = " + ks +
                                  " parameter(1)\n  ROOT c = f32[1," + std::to_string(out) +
                                  ",1] convolution(x, k), window={" + window +
                                  "}, dim_labels=b0f_0io->b0f\n",
                              {F32({1, n, 1}, x), F32({w, 1, 1}, k)}));
}

TEST(Windowed, ConvolutionDilations) {
  // lhs_dilate 2 with padding 1: the input becomes [0, 1, 0, 2, 0] (a transposed convolution).
  EXPECT_EQ(Conv1d("size=2 pad=1_1 lhs_dilate=2", {1, 2}, {1, 10}, 4),
            (std::vector<float>{10, 1, 20, 2}));
  // rhs_dilate 2: taps two apart.
  EXPECT_EQ(Conv1d("size=2 rhs_dilate=2", {1, 2, 3, 4}, {1, 10}, 2), (std::vector<float>{31, 42}));
  EXPECT_EQ(Conv1d("size=2 stride=2", {1, 2, 3, 4, 5}, {1, 10}, 2), (std::vector<float>{21, 43}));
}

TEST(Windowed, ConvolutionFeaturesFollowDimLabels) {
  // out[o] = sum_i x[i] * w[i][o]: o0 = 1*1 + 2*3 = 7, o1 = 1*2 + 2*4 = 10.
  auto nhwc = RunHlo(
      "  x = f32[1,1,1,2] parameter(0)\n  k = f32[1,1,2,2] parameter(1)\n"
      "  ROOT c = f32[1,1,1,2] convolution(x, k), window={size=1x1}, dim_labels=b01f_01io->b01f\n",
      {F32({1, 1, 1, 2}, {1, 2}), F32({1, 1, 2, 2}, {1, 2, 3, 4})});
  EXPECT_EQ(Values<float>(nhwc), (std::vector<float>{7, 10}));
  auto nchw = RunHlo(
      "  x = f32[1,2,1,1] parameter(0)\n  k = f32[2,2,1,1] parameter(1)\n"
      "  ROOT c = f32[1,2,1,1] convolution(x, k), window={size=1x1}, dim_labels=bf01_oi01->bf01\n",
      {F32({1, 2, 1, 1}, {1, 2}), F32({2, 2, 1, 1}, {1, 3, 2, 4})});
  EXPECT_EQ(Values<float>(nchw), (std::vector<float>{7, 10}));
}

TEST(Windowed, ReduceWindowDilationAndStride) {
  auto r = RunHlo(
      "  x = f32[5] parameter(0)\n  z = f32[] constant(0)\n"
      "  ROOT s = f32[3] reduce-window(x, z), window={size=2 rhs_dilate=2}, to_apply=add\n",
      {F32({5}, {1, 2, 3, 4, 5})}, kAddF32);
  EXPECT_EQ(Values<float>(r), (std::vector<float>{4, 6, 8}));
  auto b = RunHlo(
      "  x = f32[3] parameter(0)\n  z = f32[] constant(0)\n"
      "  ROOT s = f32[4] reduce-window(x, z), window={size=2 lhs_dilate=2}, to_apply=add\n",
      {F32({3}, {1, 2, 3})}, kAddF32);
  EXPECT_EQ(Values<float>(b), (std::vector<float>{1, 2, 2, 3}));  // over [1, _, 2, _, 3]
}

TEST(Elementwise64, PredAndWideIntegers) {
  auto p = RunHlo(
      "  a = pred[4] constant({false, false, true, true})\n  b = pred[4] constant({false, true, "
      "false, true})\n"
      "  x = pred[4] xor(a, b)\n  o = pred[4] or(a, b)\n  n = pred[4] not(a)\n  m = pred[4] "
      "maximum(a, b)\n"
      "  ROOT t = (pred[4], pred[4], pred[4], pred[4]) tuple(x, o, n, m)\n",
      {});
  EXPECT_EQ(Values<uint8_t>(p.tuple_elements()[0]), (std::vector<uint8_t>{0, 1, 1, 0}));
  EXPECT_EQ(Values<uint8_t>(p.tuple_elements()[1]), (std::vector<uint8_t>{0, 1, 1, 1}));
  EXPECT_EQ(Values<uint8_t>(p.tuple_elements()[2]), (std::vector<uint8_t>{1, 1, 0, 0}));
  EXPECT_EQ(Values<uint8_t>(p.tuple_elements()[3]), (std::vector<uint8_t>{0, 1, 1, 1}));
  auto s = RunHlo(
      "  a = s64[2] constant({9223372036854775807, -5})\n  b = s64[2] constant({1, 2})\n"
      "  ROOT y = s64[2] add(a, b)\n",
      {});
  EXPECT_EQ(Values<int64_t>(s), (std::vector<int64_t>{std::numeric_limits<int64_t>::min(), -3}));
  auto u = RunHlo(
      "  a = u64[2] constant({18446744073709551615, 3})\n  b = u64[2] constant({1, 2})\n"
      "  c = pred[2] compare(a, b), direction=GT\n  f = f32[2] convert(a)\n  d = u64[2] divide(a, "
      "b)\n"
      "  ROOT t = (pred[2], f32[2], u64[2]) tuple(c, f, d)\n",
      {});
  EXPECT_EQ(Values<uint8_t>(u.tuple_elements()[0]), (std::vector<uint8_t>{1, 1}));
  EXPECT_EQ(Values<float>(u.tuple_elements()[1]),
            (std::vector<float>{18446744073709551616.0f, 3.0f}));
  EXPECT_EQ(Values<uint64_t>(u.tuple_elements()[2]),
            (std::vector<uint64_t>{18446744073709551615ull, 1}));
}

}  // namespace
}  // namespace detrain::testing
