// Every conversion of compiler/semantics/convert.h at its boundary values: NaN, ±inf, ±0,
// out-of-range floats to each integer type (saturation), exact range ends, integer wrap, round to
// nearest even for integers that floats cannot hold, pred in both directions, and bitcasts.
#include "compiler/semantics/convert.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>

namespace detrain::semantics {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();
const float kNan = BitsFloat(0x7fc00001u);
const float kNegNan = BitsFloat(0xff800001u);  // signalling, negative

template <typename T>
constexpr T Min() {
  return std::numeric_limits<T>::min();
}
template <typename T>
constexpr T Max() {
  return std::numeric_limits<T>::max();
}

TEST(ConvertF32ToInt, NanIsZeroInfinitiesSaturate) {
  EXPECT_EQ((ConvertElement<int32_t>(kNan)), 0);
  EXPECT_EQ((ConvertElement<uint64_t>(kNegNan)), 0u);
  EXPECT_EQ((ConvertElement<int32_t>(kInf)), Max<int32_t>());
  EXPECT_EQ((ConvertElement<int32_t>(-kInf)), Min<int32_t>());
  EXPECT_EQ((ConvertElement<uint32_t>(kInf)), Max<uint32_t>());
  EXPECT_EQ((ConvertElement<uint32_t>(-kInf)), 0u);
  EXPECT_EQ((ConvertElement<int64_t>(kInf)), Max<int64_t>());
  EXPECT_EQ((ConvertElement<int64_t>(-kInf)), Min<int64_t>());
  EXPECT_EQ((ConvertElement<uint64_t>(kInf)), Max<uint64_t>());
}

TEST(ConvertF32ToInt, TruncatesTowardZero) {
  EXPECT_EQ((ConvertElement<int32_t>(-1.9f)), -1);
  EXPECT_EQ((ConvertElement<int32_t>(1.9f)), 1);
  EXPECT_EQ((ConvertElement<int32_t>(BitsFloat(0x80000000u))), 0);
  EXPECT_EQ((ConvertElement<uint32_t>(-0.99f)), 0u);
  EXPECT_EQ((ConvertElement<uint32_t>(-1.5f)), 0u);  // saturates at 0
}

TEST(ConvertF32ToInt, RangeEnds) {
  // 2^31 is the first float above s32 max; -2^31 is exact.
  EXPECT_EQ((ConvertElement<int32_t>(2147483648.0f)), Max<int32_t>());
  EXPECT_EQ((ConvertElement<int32_t>(2147483520.0f)), 2147483520);  // largest float below 2^31
  EXPECT_EQ((ConvertElement<int32_t>(-2147483648.0f)), Min<int32_t>());
  EXPECT_EQ((ConvertElement<int32_t>(-3e9f)), Min<int32_t>());
  EXPECT_EQ((ConvertElement<uint32_t>(4294967296.0f)), Max<uint32_t>());
  EXPECT_EQ((ConvertElement<uint32_t>(4294967040.0f)), 4294967040u);
  EXPECT_EQ((ConvertElement<int64_t>(9223372036854775808.0f)), Max<int64_t>());  // 2^63
  EXPECT_EQ((ConvertElement<int64_t>(9223371487098961920.0f)), 9223371487098961920);
  EXPECT_EQ((ConvertElement<int64_t>(-9223372036854775808.0f)), Min<int64_t>());
  EXPECT_EQ((ConvertElement<uint64_t>(18446744073709551616.0f)), Max<uint64_t>());  // 2^64
  EXPECT_EQ((ConvertElement<uint64_t>(18446742974197923840.0f)), 18446742974197923840u);
  EXPECT_EQ((ConvertElement<uint64_t>(1e30f)), Max<uint64_t>());
}

TEST(ConvertIntToF32, RoundsToNearestEven) {
  EXPECT_EQ((ConvertElement<float>(int32_t{16777217})), 16777216.0f);  // 2^24 + 1: tie to even
  EXPECT_EQ((ConvertElement<float>(int32_t{16777219})), 16777220.0f);  // 2^24 + 3: tie to even
  EXPECT_EQ((ConvertElement<float>(Max<int32_t>())), 2147483648.0f);
  EXPECT_EQ((ConvertElement<float>(Min<int32_t>())), -2147483648.0f);
  EXPECT_EQ((ConvertElement<float>(Max<uint32_t>())), 4294967296.0f);
  EXPECT_EQ((ConvertElement<float>(Max<uint64_t>())), 18446744073709551616.0f);
  EXPECT_EQ((ConvertElement<float>(Min<int64_t>())), -9223372036854775808.0f);
  // 2^60 + 2^36 + 1: just above the tie between 2^60 and 2^60 + 2^37: rounds up.
  uint64_t above_tie = (uint64_t{1} << 60) + (uint64_t{1} << 36) + 1;
  EXPECT_EQ((ConvertElement<float>(above_tie)), 1152921642045800448.0f);
  EXPECT_EQ((ConvertElement<float>(int32_t{0})), 0.0f);
  EXPECT_EQ(FloatBits(ConvertElement<float>(int32_t{0})), 0u);  // +0, never -0
}

TEST(ConvertIntToInt, WrapsModuloTheDestinationWidth) {
  EXPECT_EQ((ConvertElement<int32_t>(int64_t{0x1'0000'0005})), 5);
  EXPECT_EQ((ConvertElement<int32_t>(uint32_t{0x80000000u})), Min<int32_t>());
  EXPECT_EQ((ConvertElement<uint32_t>(int32_t{-1})), 0xffffffffu);
  EXPECT_EQ((ConvertElement<uint64_t>(int32_t{-1})), Max<uint64_t>());      // sign-extends
  EXPECT_EQ((ConvertElement<int64_t>(uint32_t{0xffffffffu})), 4294967295);  // zero-extends
  EXPECT_EQ((ConvertElement<int64_t>(Max<uint64_t>())), -1);
}

TEST(ConvertPred, NonzeroIsTrueZeroIsFalse) {
  EXPECT_EQ((ConvertElement<uint8_t>(kNan)), 1);
  EXPECT_EQ((ConvertElement<uint8_t>(BitsFloat(0x80000000u))), 0);
  EXPECT_EQ((ConvertElement<uint8_t>(1e-45f)), 1);  // a denormal is nonzero
  EXPECT_EQ((ConvertElement<uint8_t>(int32_t{-2})), 1);
  EXPECT_EQ((ConvertElement<uint8_t>(uint64_t{1} << 40)), 1);  // not truncated to a byte
  EXPECT_EQ((ConvertElement<uint8_t>(uint64_t{256})), 1);
  EXPECT_EQ((ConvertElement<uint8_t>(int64_t{0})), 0);
  EXPECT_EQ((ConvertElement<float>(uint8_t{1})), 1.0f);
  EXPECT_EQ((ConvertElement<int64_t>(uint8_t{1})), 1);
  EXPECT_EQ((ConvertElement<uint8_t>(uint8_t{1})), 1);
}

TEST(ConvertF32ToF32, KeepsTheBits) {
  EXPECT_EQ(FloatBits(ConvertElement<float>(kNegNan)), 0xff800001u);
  EXPECT_EQ(FloatBits(ConvertElement<float>(BitsFloat(0x80000000u))), 0x80000000u);
  EXPECT_EQ(FloatBits(ConvertElement<float>(BitsFloat(0x00000001u))), 0x00000001u);
}

TEST(Bitcast, SameSizeTypesReinterpretTheBits) {
  EXPECT_EQ((BitcastElement<uint32_t>(-0.0f)), 0x80000000u);
  EXPECT_EQ((BitcastElement<int32_t>(kNegNan)), static_cast<int32_t>(0xff800001u));
  EXPECT_EQ(FloatBits(BitcastElement<float>(uint32_t{0x7fc00123u})), 0x7fc00123u);
  EXPECT_EQ((BitcastElement<uint32_t>(int32_t{-1})), 0xffffffffu);
  EXPECT_EQ((BitcastElement<int64_t>(Max<uint64_t>())), -1);
  EXPECT_EQ((BitcastElement<uint64_t>(Min<int64_t>())), uint64_t{1} << 63);
  EXPECT_EQ((BitcastElement<uint8_t>(uint8_t{1})), 1);
}

}  // namespace
}  // namespace detrain::semantics
