// Exact float spelling: every f32 bit pattern prints and parses back to the same bits.
#include "compiler/ir/literal.h"

#include <gtest/gtest.h>

#include <bit>
#include <random>

namespace detrain::ir {
namespace {

uint32_t RoundTripBits(uint32_t bits) {
  Literal lit(Shape::Scalar(ElementType::kF32));
  lit.Set<float>(0, std::bit_cast<float>(bits));
  std::string text = FormatElement(lit, 0);
  Literal back(Shape::Scalar(ElementType::kF32));
  EXPECT_EQ(ParseElement(text, back, 0), "") << text;
  return std::bit_cast<uint32_t>(back.Get<float>(0));
}

TEST(FloatSpelling, CanonicalForms) {
  EXPECT_EQ(FormatF32(1.0f), "1");
  EXPECT_EQ(FormatF32(-0.0f), "-0");
  EXPECT_EQ(FormatF32(0.1f), "0.1");
  EXPECT_EQ(FormatF32(1e10f), "1e+10");
  EXPECT_EQ(FormatF32(std::bit_cast<float>(0x00000001u)), "1e-45");
  EXPECT_EQ(FormatF32(std::bit_cast<float>(0x7f800000u)), "inf");
  EXPECT_EQ(FormatF32(std::bit_cast<float>(0xff800000u)), "-inf");
  EXPECT_EQ(FormatF32(std::bit_cast<float>(0x7fc00000u)), "nan");
  EXPECT_EQ(FormatF32(std::bit_cast<float>(0xffc00000u)), "nan(0xffc00000)");
  EXPECT_EQ(FormatF32(std::bit_cast<float>(0x7f800001u)), "nan(0x7f800001)");
}

TEST(FloatSpelling, SpecialBitPatternsRoundTrip) {
  for (uint32_t bits : {0x0u, 0x80000000u, 0x1u, 0x807fffffu, 0x7f7fffffu, 0x7f800000u, 0xff800000u,
                        0x7fc00000u, 0xffc00000u, 0x7f800001u, 0x7fffffffu, 0x3eaaaaabu}) {
    EXPECT_EQ(RoundTripBits(bits), bits) << std::hex << bits;
  }
}

TEST(FloatSpelling, RandomBitPatternsRoundTrip) {
  std::mt19937 rng(5);
  for (int i = 0; i < 200000; ++i) {
    uint32_t bits = static_cast<uint32_t>(rng());
    ASSERT_EQ(RoundTripBits(bits), bits) << std::hex << bits;
  }
}

TEST(FloatSpelling, ParsesXlaSpellingsCorrectlyRounded) {
  Literal lit(Shape::Scalar(ElementType::kF32));
  EXPECT_EQ(ParseElement("+1.5", lit, 0), "");
  EXPECT_EQ(lit.Get<float>(0), 1.5f);
  EXPECT_EQ(ParseElement("-nan", lit, 0), "");
  EXPECT_EQ(std::bit_cast<uint32_t>(lit.Get<float>(0)), 0xffc00000u);
  EXPECT_EQ(ParseElement("1e-50", lit, 0), "");  // underflows to +0
  EXPECT_EQ(std::bit_cast<uint32_t>(lit.Get<float>(0)), 0u);
  EXPECT_EQ(ParseElement("-1e-50", lit, 0), "");  // underflows to -0
  EXPECT_EQ(std::bit_cast<uint32_t>(lit.Get<float>(0)), 0x80000000u);
  EXPECT_EQ(ParseElement("0.1000000000000000055511151231257827", lit, 0), "");
  EXPECT_EQ(lit.Get<float>(0), 0.1f);
  EXPECT_NE(ParseElement("1,5", lit, 0), "");
  EXPECT_NE(ParseElement("nan(0x00000001)", lit, 0), "");  // not a NaN pattern
}

// docs/ir.md §4: decimals round to nearest (IEEE 754); one that rounds beyond the largest
// finite f32 is an error (XLA's parser rejects it too), one that underflows is a subnormal or
// a signed zero; infinities and NaNs have exactly the canonical spellings.
TEST(FloatSpelling, RangeAndSpecialSpellings) {
  Literal lit(Shape::Scalar(ElementType::kF32));
  auto bits = [&](std::string_view text) {
    std::string err = ParseElement(text, lit, 0);
    EXPECT_EQ(err, "") << text;
    return std::bit_cast<uint32_t>(lit.Get<float>(0));
  };
  EXPECT_EQ(bits("3.4028235e38"), 0x7f7fffffu);
  EXPECT_EQ(bits("3.40282356e38"), 0x7f7fffffu);  // below the halfway point to 2^128
  EXPECT_EQ(bits("1e-45"), 0x00000001u);          // the smallest subnormal
  EXPECT_EQ(bits("7.1e-46"), 0x00000001u);        // rounds up to it
  EXPECT_EQ(bits("7e-46"), 0x00000000u);          // rounds down to +0
  EXPECT_EQ(bits("-1e-99999"), 0x80000000u);
  EXPECT_EQ(bits("0.0000000000000000000000000000000000000000000000001e49"), 0x3f800000u);
  EXPECT_EQ(bits("inf"), 0x7f800000u);
  EXPECT_EQ(bits("-inf"), 0xff800000u);
  EXPECT_EQ(bits("nan"), 0x7fc00000u);
  EXPECT_EQ(bits("-nan"), 0xffc00000u);
  EXPECT_EQ(bits("nan(0xffc00001)"), 0xffc00001u);
  for (std::string_view text : {"1e39", "-1e39", "1e999", "3.40282357e38", "1000e36",
                                "100000000000000000000000000000000000000000"}) {
    std::string err = ParseElement(text, lit, 0);
    EXPECT_NE(err.find("is out of range for f32"), std::string::npos) << text << ": " << err;
  }
  for (std::string_view text :
       {"infinity", "INF", "NaN", "+nan(0x7fc00001)", "-nan(0x7fc00001)", "-nan(0x1)", "nan(0x1)",
        "nan(0x7fc0000)", "nan(0x7fc000001)", "nan()", "nan(7fc00001)", "nan(0x7fc00001"}) {
    EXPECT_NE(ParseElement(text, lit, 0), "") << text;
  }
  std::string nan_error = ParseElement("-nan(0x1)", lit, 0);
  EXPECT_EQ(ParseElement("nan(0x1)", lit, 0), "expected a NaN spelled nan, -nan or " +
                                                  std::string("nan(0xXXXXXXXX) with the full ") +
                                                  "32-bit pattern, got 'nan(0x1)'");
  EXPECT_NE(nan_error.find("expected a NaN spelled"), std::string::npos) << nan_error;
}

TEST(IntegerSpelling, ExtremesRoundTripAndOverflowIsAnError) {
  Literal s64(Shape::Scalar(ElementType::kS64));
  EXPECT_EQ(ParseElement("-9223372036854775808", s64, 0), "");
  EXPECT_EQ(FormatElement(s64, 0), "-9223372036854775808");
  EXPECT_NE(ParseElement("9223372036854775808", s64, 0), "");
  Literal u32(Shape::Scalar(ElementType::kU32));
  EXPECT_NE(ParseElement("-1", u32, 0), "");
  Literal pred(Shape::Scalar(ElementType::kPred));
  EXPECT_EQ(ParseElement("1", pred, 0), "");
  EXPECT_EQ(FormatElement(pred, 0), "true");
}

TEST(LiteralText, NestedBraces) {
  auto lit = Literal::FromVector<int32_t>(ElementType::kS32, {2, 3}, {1, 2, 3, 4, 5, 6});
  EXPECT_EQ(FormatLiteralValues(lit), "{{1, 2, 3}, {4, 5, 6}}");
  EXPECT_EQ(lit.ToString(), "s32[2,3] {{1, 2, 3}, {4, 5, 6}}");
  EXPECT_EQ(FormatLiteralValues(Literal(Shape(ElementType::kF32, {0}))), "{}");
}

}  // namespace
}  // namespace detrain::ir
