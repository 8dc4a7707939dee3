// bf16 and f16 programs (docs/ir.md "bf16 and f16"): the importer holds their values as f32 and
// rounds after every op that can leave the format; these check the bits that gives, against
// values worked out by hand: a sum that bf16 rounds but f32 does not, the tie to even, f16's
// overflow and subnormals, a reduce accumulated in f32 and rounded once, a dot with an f32
// result, converts, and parameters rounded on entry.
#include "xla_test_util.h"

namespace detrain::testing {
namespace {

// 1 + 2^-8 is the tie between the bf16 values 1 and 1 + 2^-7: bf16 gives 1, f32 1.00390625.
TEST(HalfTypes, Bf16AddRoundsEachResult) {
  Literal r = RunXla(
      "  a = bf16[2] parameter(0)\n  b = bf16[2] parameter(1)\n"
      "  ROOT c = bf16[2] add(a, b)\n",
      {F32({2}, {1.0f, 1.0f}), F32({2}, {0x1p-8f, 0x1p-7f})});
  EXPECT_EQ(Bits(r), (std::vector<uint32_t>{BitsOf(1.0f), BitsOf(1.0f + 0x1p-7f)}));
}

TEST(HalfTypes, ParametersAreRoundedOnEntry) {
  // An f32 input that is not a bf16 value is rounded as a convert to bf16 would.
  Literal r = RunXla("  a = bf16[2] parameter(0)\n  ROOT c = bf16[2] negate(a)\n",
                     {F32({2}, {1.0f + 0x1p-9f, 3.14159265f})});
  EXPECT_EQ(Bits(r), (std::vector<uint32_t>{BitsOf(-1.0f), 0xc0490000u}));
}

TEST(HalfTypes, F16OverflowsAndUnderflowsAsIeee) {
  Literal r = RunXla(
      "  a = f16[3] parameter(0)\n  b = f16[3] parameter(1)\n"
      "  ROOT c = f16[3] multiply(a, b)\n",
      {F32({3}, {256.0f, 0x1p-12f, 0x1p-12f}), F32({3}, {256.0f, 0x1p-12f, 0x1.8p-13f})});
  // 2^16 > 65504: inf; 2^-24: the smallest subnormal; 1.5 2^-25 rounds to 2^-24.
  EXPECT_EQ(Bits(r), (std::vector<uint32_t>{0x7f800000u, BitsOf(0x1p-24f), BitsOf(0x1p-24f)}));
}

// reduce's computation runs in f32 (as XLA's CPU backend runs a bf16 reduce); the result is
// rounded once. 1 + 2^-8 + 2^-8 is 1 + 2^-7 in f32, a bf16 value; rounding every partial sum to
// bf16 would give 1 (1 + 2^-8 is a tie, which goes to even).
TEST(HalfTypes, ReduceAccumulatesInF32AndRoundsOnce) {
  const std::string add_bf16 =
      "add_bf16 {\n  a = bf16[] parameter(0)\n  b = bf16[] parameter(1)\n"
      "  ROOT s = bf16[] add(a, b)\n}\n";
  Literal r = RunXla(
      "  x = bf16[3] parameter(0)\n  z = bf16[] constant(0)\n"
      "  ROOT s = bf16[] reduce(x, z), dimensions={0}, to_apply=add_bf16\n",
      {F32({3}, {1.0f, 0x1p-8f, 0x1p-8f})}, add_bf16);
  EXPECT_EQ(Bits(r), (std::vector<uint32_t>{BitsOf(1.0f + 0x1p-7f)}));
}

TEST(HalfTypes, DotWithAnF32ResultIsNotRounded) {
  Literal r = RunXla(
      "  a = bf16[2] parameter(0)\n  b = bf16[2] parameter(1)\n"
      "  ROOT d = f32[] dot(a, b), lhs_contracting_dims={0}, rhs_contracting_dims={0}\n",
      {F32({2}, {1.0f, 1.0f}), F32({2}, {1.0f, 0x1p-8f})});
  EXPECT_EQ(Bits(r), (std::vector<uint32_t>{BitsOf(1.0f + 0x1p-8f)}));
}

TEST(HalfTypes, ConvertsBetweenFormats) {
  Literal r = RunXla(
      "  a = f32[3] parameter(0)\n  b = bf16[3] convert(a)\n  c = f16[3] convert(b)\n"
      "  ROOT d = f32[3] convert(c)\n",
      {F32({3}, {3.14159265f, 1e6f, 1e-30f})});
  // pi -> bf16 3.140625 -> f16 3.140625; 1e6 -> bf16 999424 -> f16 inf; 1e-30 -> f16 +0.
  EXPECT_EQ(Bits(r), (std::vector<uint32_t>{BitsOf(3.140625f), 0x7f800000u, 0u}));
}

TEST(HalfTypes, ConstantsAreRounded) {
  Literal r = RunXla("  ROOT c = bf16[] constant(0.1)\n", {});
  EXPECT_EQ(Bits(r), (std::vector<uint32_t>{0x3dcd0000u}));  // bf16(0.1) = 0.10009765625
}

}  // namespace
}  // namespace detrain::testing
