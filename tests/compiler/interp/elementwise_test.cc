// Elementwise ops on hand-computed values: IEEE corner cases (signed zeros, NaN, ties), the
// correctly rounded math library, integer wrap-around and XLA's division-by-zero rules.
#include <cmath>
#include <limits>

#include "base/math/crmath.h"
#include "interp_test_util.h"

namespace detrain::testing {
namespace {

constexpr float kNan = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();

std::vector<uint32_t> Unary(const std::string& op, const std::vector<float>& x) {
  int64_t n = static_cast<int64_t>(x.size());
  std::string s = "f32[" + std::to_string(n) + "]";
  return Bits(
      RunHlo("  x = " + s + " parameter(0)\n  ROOT y = " + s + " " + op + "(x)\n", {F32({n}, x)}));
}

std::vector<uint32_t> Binary(const std::string& op, const std::vector<float>& a,
                             const std::vector<float>& b) {
  int64_t n = static_cast<int64_t>(a.size());
  std::string s = "f32[" + std::to_string(n) + "]";
  return Bits(RunHlo("  a = " + s + " parameter(0)\n  b = " + s + " parameter(1)\n  ROOT y = " + s +
                         " " + op + "(a, b)\n",
                     {F32({n}, a), F32({n}, b)}));
}

std::vector<int32_t> IntBinary(const std::string& op, const std::vector<int32_t>& a,
                               const std::vector<int32_t>& b) {
  int64_t n = static_cast<int64_t>(a.size());
  std::string s = "s32[" + std::to_string(n) + "]";
  return Values<int32_t>(RunHlo("  a = " + s + " parameter(0)\n  b = " + s +
                                    " parameter(1)\n  ROOT y = " + s + " " + op + "(a, b)\n",
                                {S32({n}, a), S32({n}, b)}));
}

TEST(Elementwise, SignsAndRounding) {
  EXPECT_EQ(Unary("abs", {-0.0f, -2.5f}), (std::vector<uint32_t>{0x0u, BitsOf(2.5f)}));
  EXPECT_EQ(Unary("negate", {0.0f, kNan}), (std::vector<uint32_t>{0x80000000u, 0xffc00000u}));
  EXPECT_EQ(Unary("sign", {-2.0f, -0.0f, 3.0f, kNan}),
            (std::vector<uint32_t>{BitsOf(-1.0f), 0x80000000u, BitsOf(1.0f), 0x7fc00000u}));
  EXPECT_EQ(Unary("floor", {-1.5f, 1.5f}), (std::vector<uint32_t>{BitsOf(-2.0f), BitsOf(1.0f)}));
  EXPECT_EQ(Unary("ceil", {-1.5f, -0.5f}), (std::vector<uint32_t>{BitsOf(-1.0f), 0x80000000u}));
  EXPECT_EQ(Unary("round-nearest-even", {2.5f, 3.5f, -2.5f, 0.5f, -0.4f, 8388609.0f}),
            (std::vector<uint32_t>{BitsOf(2.0f), BitsOf(4.0f), BitsOf(-2.0f), 0x0u, 0x80000000u,
                                   BitsOf(8388609.0f)}));
}

TEST(Elementwise, TranscendentalsAreTheCorrectlyRoundedLibrary) {
  std::vector<float> x = {0.0f, 1.0f, -3.25f, 0.1f, 20.0f};
  struct Case {
    const char* op;
    float (*fn)(float);
  } cases[] = {{"exponential", crmath::Exp}, {"exponential-minus-one", crmath::Expm1},
               {"tanh", crmath::Tanh},       {"logistic", crmath::Logistic},
               {"erf", crmath::Erf},         {"sine", crmath::Sin},
               {"cosine", crmath::Cos}};
  for (const Case& c : cases) {
    std::vector<uint32_t> want;
    for (float v : x) want.push_back(BitsOf(c.fn(v)));
    EXPECT_EQ(Unary(c.op, x), want) << c.op;
  }
  EXPECT_EQ(Unary("exponential", {1.0f})[0], 0x402df854u);  // e, correctly rounded
  EXPECT_EQ(Unary("log", {1.0f, 0.0f, -1.0f})[0], 0u);
  EXPECT_EQ(Unary("log", {0.0f})[0], 0xff800000u);
  EXPECT_EQ(Unary("log-plus-one", {0.0f, -1.0f}), (std::vector<uint32_t>{0u, 0xff800000u}));
  EXPECT_EQ(Unary("sqrt", {2.0f, -0.0f}), (std::vector<uint32_t>{0x3fb504f3u, 0x80000000u}));
  EXPECT_EQ(Unary("rsqrt", {4.0f, 0.0f}), (std::vector<uint32_t>{BitsOf(0.5f), 0x7f800000u}));
  EXPECT_EQ(Binary("power", {2.0f, 4.0f}, {10.0f, 0.5f}),
            (std::vector<uint32_t>{BitsOf(1024.0f), BitsOf(2.0f)}));
}

TEST(Elementwise, FloatArithmetic) {
  EXPECT_EQ(Binary("divide", {1.0f, 1.0f}, {3.0f, 0.0f}),
            (std::vector<uint32_t>{0x3eaaaaabu, 0x7f800000u}));
  EXPECT_EQ(Binary("add", {-0.0f, -0.0f}, {-0.0f, 0.0f}),
            (std::vector<uint32_t>{0x80000000u, 0x0u}));
  EXPECT_EQ(Binary("subtract", {1.0f}, {1.0f}), (std::vector<uint32_t>{0x0u}));
  EXPECT_EQ(Binary("multiply", {1e30f}, {1e10f}), (std::vector<uint32_t>{0x7f800000u}));
  EXPECT_EQ(Binary("remainder", {5.5f, -5.5f}, {2.0f, 2.0f}),
            (std::vector<uint32_t>{BitsOf(1.5f), BitsOf(-1.5f)}));
  // maximum/minimum: NaN propagates, -0 < +0.
  EXPECT_EQ(Binary("maximum", {-0.0f, kNan, 1.0f}, {0.0f, 1.0f, kNan}),
            (std::vector<uint32_t>{0x0u, 0x7fc00000u, 0x7fc00000u}));
  EXPECT_EQ(Binary("minimum", {0.0f, -kInf}, {-0.0f, 3.0f}),
            (std::vector<uint32_t>{0x80000000u, 0xff800000u}));
}

TEST(Elementwise, IntegersWrapAndFollowXlaDivisionRules) {
  constexpr int32_t kMin = std::numeric_limits<int32_t>::min();
  constexpr int32_t kMax = std::numeric_limits<int32_t>::max();
  EXPECT_EQ(IntBinary("add", {kMax}, {1}), (std::vector<int32_t>{kMin}));
  EXPECT_EQ(IntBinary("multiply", {65536}, {65536}), (std::vector<int32_t>{0}));
  EXPECT_EQ(IntBinary("divide", {7, -7, 5, kMin}, {-2, 2, 0, -1}),
            (std::vector<int32_t>{-3, -3, -1, kMin}));
  EXPECT_EQ(IntBinary("remainder", {7, -7, 5, kMin}, {-2, 2, 0, -1}),
            (std::vector<int32_t>{1, -1, 5, 0}));
  EXPECT_EQ(IntBinary("power", {3, 2, -1, 1}, {4, -1, -3, -5}),
            (std::vector<int32_t>{81, 0, -1, 1}));
  EXPECT_EQ(IntBinary("shift-left", {1, 1, 1}, {3, 31, 33}), (std::vector<int32_t>{8, kMin, 0}));
  EXPECT_EQ(IntBinary("shift-right-arithmetic", {-8, -8, 8}, {1, 40, 40}),
            (std::vector<int32_t>{-4, -1, 0}));
  EXPECT_EQ(IntBinary("shift-right-logical", {-8, 8}, {28, 40}), (std::vector<int32_t>{15, 0}));
  EXPECT_EQ(IntBinary("maximum", {-3, 4}, {2, -9}), (std::vector<int32_t>{2, 4}));
  auto u =
      Values<uint32_t>(RunHlo("  a = u32[2] parameter(0)\n  b = u32[2] constant({4, 4})\n"
                              "  ROOT y = u32[2] shift-right-arithmetic(a, b)\n",
                              {U32({2}, {0x80000004u, 4u})}));
  EXPECT_EQ(u, (std::vector<uint32_t>{0xf8000000u, 0u}));
  auto n = Values<int32_t>(
      RunHlo("  a = s32[3] parameter(0)\n  ROOT y = s32[3] not(a)\n", {S32({3}, {0, -1, kMin})}));
  EXPECT_EQ(n, (std::vector<int32_t>{-1, 0, kMax}));
  auto a = Values<int32_t>(
      RunHlo("  a = s32[2] parameter(0)\n  ROOT y = s32[2] abs(a)\n", {S32({2}, {kMin, -5})}));
  EXPECT_EQ(a, (std::vector<int32_t>{kMin, 5}));
}

TEST(Elementwise, CompareIsIeee) {
  auto r = RunHlo(
      "  a = f32[4] parameter(0)\n  b = f32[4] parameter(1)\n"
      "  lt = pred[4] compare(a, b), direction=LT\n  ne = pred[4] compare(a, b), direction=NE\n"
      "  eq = pred[4] compare(a, b), direction=EQ\n  ROOT t = (pred[4], pred[4], pred[4]) "
      "tuple(lt, ne, eq)\n",
      {F32({4}, {1.0f, kNan, -0.0f, 2.0f}), F32({4}, {2.0f, kNan, 0.0f, 1.0f})});
  EXPECT_EQ(Values<uint8_t>(r.tuple_elements()[0]), (std::vector<uint8_t>{1, 0, 0, 0}));
  EXPECT_EQ(Values<uint8_t>(r.tuple_elements()[1]), (std::vector<uint8_t>{1, 1, 0, 1}));
  EXPECT_EQ(Values<uint8_t>(r.tuple_elements()[2]), (std::vector<uint8_t>{0, 0, 1, 0}));
  auto u = RunHlo(
      "  a = u32[1] parameter(0)\n  b = u32[1] parameter(1)\n  ROOT lt = pred[1] compare(a, b), "
      "direction=LT\n",
      {U32({1}, {0xffffffffu}), U32({1}, {1u})});
  EXPECT_EQ(Values<uint8_t>(u), (std::vector<uint8_t>{0}));  // unsigned order
}

TEST(Elementwise, ConvertSaturatesTruncatesAndRoundsToNearestEven) {
  auto r = RunHlo("  x = f32[6] parameter(0)\n  ROOT y = s32[6] convert(x)\n",
                  {F32({6}, {2.9f, -2.9f, kNan, 3e9f, -kInf, -0.0f})});
  EXPECT_EQ(Values<int32_t>(r), (std::vector<int32_t>{2, -2, 0, 2147483647, -2147483647 - 1, 0}));
  auto u = RunHlo("  x = f32[2] parameter(0)\n  ROOT y = u32[2] convert(x)\n",
                  {F32({2}, {-1.0f, 4294967296.0f})});
  EXPECT_EQ(Values<uint32_t>(u), (std::vector<uint32_t>{0u, 4294967295u}));
  auto f = RunHlo("  x = s32[2] parameter(0)\n  ROOT y = f32[2] convert(x)\n",
                  {S32({2}, {16777217, 16777219})});
  EXPECT_EQ(Values<float>(f), (std::vector<float>{16777216.0f, 16777220.0f}));
  auto p = RunHlo("  x = f32[3] parameter(0)\n  ROOT y = pred[3] convert(x)\n",
                  {F32({3}, {0.0f, -0.0f, kNan})});
  EXPECT_EQ(Values<uint8_t>(p), (std::vector<uint8_t>{0, 0, 1}));
  auto w = RunHlo("  x = s64[1] constant({4294967297})\n  ROOT y = s32[1] convert(x)\n", {});
  EXPECT_EQ(Values<int32_t>(w), (std::vector<int32_t>{1}));
  auto b = RunHlo("  x = f32[2] parameter(0)\n  ROOT y = u32[2] bitcast-convert(x)\n",
                  {F32({2}, {1.0f, -0.0f})});
  EXPECT_EQ(Values<uint32_t>(b), (std::vector<uint32_t>{0x3f800000u, 0x80000000u}));
}

TEST(Elementwise, SelectClampIota) {
  auto s = RunHlo(
      "  p = pred[3] constant({true, false, true})\n  a = f32[3] parameter(0)\n  b = f32[3] "
      "parameter(1)\n"
      "  ROOT y = f32[3] select(p, a, b)\n",
      {F32({3}, {1, 2, 3}), F32({3}, {4, 5, 6})});
  EXPECT_EQ(Values<float>(s), (std::vector<float>{1, 5, 3}));
  auto c = RunHlo(
      "  lo = f32[] constant(0)\n  hi = f32[] constant(1)\n  x = f32[4] parameter(0)\n"
      "  ROOT y = f32[4] clamp(lo, x, hi)\n",
      {F32({4}, {-1, 0.5f, 2, kNan})});
  EXPECT_EQ(Bits(c), (std::vector<uint32_t>{0u, BitsOf(0.5f), BitsOf(1.0f), 0x7fc00000u}));
  auto i = RunHlo("  ROOT y = s32[2,3] iota(), iota_dimension=1\n", {});
  EXPECT_EQ(Values<int32_t>(i), (std::vector<int32_t>{0, 1, 2, 0, 1, 2}));
  auto f = RunHlo("  ROOT y = f32[2,2] iota(), iota_dimension=0\n", {});
  EXPECT_EQ(Values<float>(f), (std::vector<float>{0, 0, 1, 1}));
}

TEST(Elementwise, Threefry2x32KnownAnswers) {
  // Random123 / JAX known-answer vectors (20 rounds), docs/ir.md "Random numbers".
  auto r = RunHlo(
      "  k0 = u32[3] parameter(0)\n  k1 = u32[3] parameter(1)\n  x0 = u32[3] parameter(2)\n"
      "  x1 = u32[3] parameter(3)\n"
      "  ROOT t = (u32[3], u32[3]) custom-call(k0, k1, x0, x1), "
      "custom_call_target=\"detrain.threefry2x32\"\n",
      {U32({3}, {0, 0xffffffffu, 0x13198a2eu}), U32({3}, {0, 0xffffffffu, 0x03707344u}),
       U32({3}, {0, 0xffffffffu, 0x243f6a88u}), U32({3}, {0, 0xffffffffu, 0x85a308d3u})});
  EXPECT_EQ(Values<uint32_t>(r.tuple_elements()[0]),
            (std::vector<uint32_t>{0x6b200159u, 0x1cb996fcu, 0xc4923a9cu}));
  EXPECT_EQ(Values<uint32_t>(r.tuple_elements()[1]),
            (std::vector<uint32_t>{0x99ba4efeu, 0xbb002be7u, 0x483df7a0u}));
}

}  // namespace
}  // namespace detrain::testing
