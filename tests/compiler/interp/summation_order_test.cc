// The canonical summation orders (DESIGN.md §2, docs/ir.md), each checked with inputs for which
// any other order gives different bits.
#include <cmath>

#include "compiler/ir/parser.h"
#include "interp_test_util.h"

namespace detrain::testing {
namespace {

// a = 1 + 2^-12: a*a = 1 + 2^-11 + 2^-24 is not representable (it rounds to 1 + 2^-11).
const float kA = 1.0f + std::ldexp(1.0f, -12);
const float kB = -(1.0f + std::ldexp(1.0f, -11));
const float kTiny = std::ldexp(1.0f, -24);

TEST(SummationOrder, DotIsOneFmaChainPerOutputInAscendingK) {
  // k=0: 1 * b = b exactly; k=1: fmaf(a, a, b) = 2^-24 exactly.
  // Without fma: round(a*a) + b = 0. Descending k: fmaf(1, b, round(a*a)) = 0.
  auto r = RunHlo(
      "  l = f32[1,2] parameter(0)\n  r = f32[2,1] parameter(1)\n"
      "  ROOT d = f32[1,1] dot(l, r), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n",
      {F32({1, 2}, {1.0f, kA}), F32({2, 1}, {kB, kA})});
  EXPECT_EQ(Bits(r), (std::vector<uint32_t>{BitsOf(kTiny)}));
}

TEST(SummationOrder, DotWithBatchAndTwoContractingDimsIsRowMajorOverThem) {
  // lhs [batch 2, 1, 2] contracting {1,2} (k = 2 elements), batch 0 holds the order-sensitive
  // chain.
  auto r = RunHlo(
      "  l = f32[2,1,2] parameter(0)\n  r = f32[2,1,2] parameter(1)\n"
      "  ROOT d = f32[2] dot(l, r), lhs_batch_dims={0}, rhs_batch_dims={0}, "
      "lhs_contracting_dims={1,2}, rhs_contracting_dims={1,2}\n",
      {F32({2, 1, 2}, {1.0f, kA, 2, 3}), F32({2, 1, 2}, {kB, kA, 4, 5})});
  EXPECT_EQ(Bits(r), (std::vector<uint32_t>{BitsOf(kTiny), BitsOf(23.0f)}));
}

Literal Reduce128(const std::vector<float>& values) {
  int64_t n = static_cast<int64_t>(values.size());
  std::string s = "f32[" + std::to_string(n) + "]";
  return RunHlo("  x = " + s +
                    " parameter(0)\n  z = f32[] constant(0)\n"
                    "  ROOT r = f32[] reduce(x, z), dimensions={0}, to_apply=add\n",
                {F32({n}, values)}, kAddF32);
}

TEST(SummationOrder, ReduceUses64ElementLeavesThenAPairwiseTree) {
  // x[0] = 1e8, x[1..63] = 1, x[64..127] = 1 (float spacing at 1e8 is 8).
  //   64-leaf + tree: leaf0 = 1e8 (each +1 is lost), leaf1 = 64  -> 100000064
  //   left to right:  every +1 is lost                            -> 100000000
  //   pairwise from single elements: 1e8 + 62 -> 100000064, + 64 -> 100000128
  std::vector<float> x(128, 1.0f);
  x[0] = 1e8f;
  EXPECT_EQ(Values<float>(Reduce128(x)), (std::vector<float>{100000064.0f}));
}

TEST(SummationOrder, ReduceCarriesAnOddLeafUpUnchanged) {
  // 150 elements = leaves of 64, 64, 22: (L0 + L1) + L2 = (1e8 - 1e8) + 1 = 1; L0 + (L1 + L2) = 0.
  std::vector<float> x(150, 0.0f);
  x[0] = 1e8f;
  x[64] = -1e8f;
  x[128] = 1.0f;
  EXPECT_EQ(Values<float>(Reduce128(x)), (std::vector<float>{1.0f}));
}

TEST(SummationOrder, ReduceOverSeveralDimensionsVisitsThemRowMajor) {
  // Reduce [2,2,2] over {0,2} for each middle index: order x[0,j,0], x[0,j,1], x[1,j,0], x[1,j,1].
  auto r = RunHlo(
      "  x = f32[2,2,2] parameter(0)\n  z = f32[] constant(0)\n"
      "  ROOT r = f32[2] reduce(x, z), dimensions={2,0}, to_apply=add\n",
      {F32({2, 2, 2}, {1e8f, 1, 5, 6, 1, -1e8f, 7, 8})}, kAddF32);
  EXPECT_EQ(Values<float>(r),
            (std::vector<float>{0.0f, 26.0f}));  // ((1e8+1)+1)-1e8 = 0 in this order
}

TEST(SummationOrder, ReduceMaxPropagatesNan) {
  auto r = RunHlo(
      "  x = f32[3] parameter(0)\n  z = f32[] constant(-inf)\n"
      "  ROOT r = f32[] reduce(x, z), dimensions={0}, to_apply=max\n",
      {F32({3}, {1, std::nanf(""), 3})}, kMaxF32);
  EXPECT_TRUE(std::isnan(r.Get<float>(0)));
}

TEST(SummationOrder, ConvolutionIsAnFmaChainOverTapsThenFeatures) {
  // 1-D, width 2, one feature: fmaf(x1, k1, fmaf(x0, k0, 0)) = 2^-24 exactly.
  auto r = RunHlo(
      "  x = f32[1,2,1] parameter(0)\n  k = f32[2,1,1] parameter(1)\n"
      "  ROOT c = f32[1,1,1] convolution(x, k), window={size=2}, dim_labels=b0f_0io->b0f\n",
      {F32({1, 2, 1}, {kB, kA}), F32({2, 1, 1}, {1.0f, kA})});
  EXPECT_EQ(Bits(r), (std::vector<uint32_t>{BitsOf(kTiny)}));
  // One tap, two features (inner loop): same chain over features.
  auto f = RunHlo(
      "  x = f32[1,1,2] parameter(0)\n  k = f32[1,2,1] parameter(1)\n"
      "  ROOT c = f32[1,1,1] convolution(x, k), window={size=1}, dim_labels=b0f_0io->b0f\n",
      {F32({1, 1, 2}, {kB, kA}), F32({1, 2, 1}, {1.0f, kA})});
  EXPECT_EQ(Bits(f), (std::vector<uint32_t>{BitsOf(kTiny)}));
}

TEST(SummationOrder, Convolution2dNhwcWithPaddingAndStride) {
  // 3x3 image 1..9, 2x2 kernel of ones, pad 1 on the low side, stride 2: sums of 2x2 windows.
  std::vector<float> img = {1, 2, 3, 4, 5, 6, 7, 8, 9};
  auto r = RunHlo(
      "  x = f32[1,3,3,1] parameter(0)\n  k = f32[2,2,1,1] parameter(1)\n"
      "  ROOT c = f32[1,2,2,1] convolution(x, k), window={size=2x2 stride=2x2 pad=1_0x1_0}, "
      "dim_labels=b01f_01io->b01f\n",
      {F32({1, 3, 3, 1}, img), F32({2, 2, 1, 1}, {1, 1, 1, 1})});
  EXPECT_EQ(Values<float>(r), (std::vector<float>{1, 2 + 3, 4 + 7, 5 + 6 + 8 + 9}));
}

TEST(SummationOrder, ReduceWindowMaxPoolSkipsPadding) {
  auto r = RunHlo(
      "  x = f32[1,4] parameter(0)\n  z = f32[] constant(-inf)\n"
      "  ROOT m = f32[1,3] reduce-window(x, z), window={size=1x2 stride=1x2 pad=0_0x1_1}, "
      "to_apply=max\n",
      {F32({1, 4}, {-5, -3, 7, -1})}, kMaxF32);
  EXPECT_EQ(Values<float>(r), (std::vector<float>{-5, 7, -1}));
}

TEST(SummationOrder, AllReduceIsAPairwiseTreeOverReplicas) {
  auto module = ir::ParseModule("HloModule ar\n\n" + kAddF32 +
                                "\nENTRY main {\n  x = f32[1] parameter(0)\n"
                                "  ROOT s = f32[1] all-reduce(x), to_apply=add\n}\n");
  ASSERT_TRUE(module.ok());
  // ((1 + 1e8) + (-1e8 + 1)) = 1e8 - 1e8 = 0; left to right would give 1.
  std::vector<std::vector<Literal>> args = {
      {F32({1}, {1})}, {F32({1}, {1e8f})}, {F32({1}, {-1e8f})}, {F32({1}, {1})}};
  auto r = interp::EvaluateReplicated(**module, args);
  ASSERT_TRUE(r.ok()) << r.status().message();
  for (const Literal& l : *r) EXPECT_EQ(Values<float>(l), (std::vector<float>{0.0f}));
}

TEST(SummationOrder, AllReduceWithReplicaGroups) {
  auto module = ir::ParseModule(
      "HloModule ar\n\n" + kAddF32 +
      "\nENTRY main {\n  x = f32[1] parameter(0)\n"
      "  ROOT s = f32[1] all-reduce(x), replica_groups={{0,2},{1,3}}, to_apply=add\n}\n");
  ASSERT_TRUE(module.ok());
  std::vector<std::vector<Literal>> args = {
      {F32({1}, {1})}, {F32({1}, {10})}, {F32({1}, {100})}, {F32({1}, {1000})}};
  auto r = interp::EvaluateReplicated(**module, args);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(Values<float>((*r)[0]), (std::vector<float>{101}));
  EXPECT_EQ(Values<float>((*r)[3]), (std::vector<float>{1010}));
  auto bad = interp::EvaluateReplicated(**module, {{F32({1}, {1})}, {F32({1}, {2})}});
  EXPECT_FALSE(bad.ok());  // group {0,2} names replica 2 of 2
}

TEST(SummationOrder, AllReduceInsideACallRunsOnEveryReplica) {
  auto module = ir::ParseModule(
      "HloModule ar\n\n" + kAddF32 +
      "\nsync {\n  v = f32[2] parameter(0)\n  ROOT s = f32[2] all-reduce(v), to_apply=add\n}\n"
      "\nENTRY main {\n  x = f32[2] parameter(0)\n  c = f32[2] call(x), to_apply=sync\n"
      "  ROOT m = f32[2] multiply(c, x)\n}\n");
  ASSERT_TRUE(module.ok()) << module.status().message();
  ASSERT_TRUE(ir::VerifyModule(**module).ok());
  auto r = interp::EvaluateReplicated(**module, {{F32({2}, {1, 2})}, {F32({2}, {3, 4})}});
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(Values<float>((*r)[0]), (std::vector<float>{4, 12}));
  EXPECT_EQ(Values<float>((*r)[1]), (std::vector<float>{12, 24}));
}

}  // namespace
}  // namespace detrain::testing
