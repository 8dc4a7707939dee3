// The op and attribute tables are consistent with themselves and with the canonical printer's
// assumptions (unique spellings, alphabetical attributes, resolvable attribute lists).
#include <gtest/gtest.h>

#include <algorithm>
#include <initializer_list>
#include <set>
#include <sstream>

#include "compiler/ir/opcode.h"

namespace detrain::ir {
namespace {

TEST(OpsTable, SpellingsAreUniqueAndRoundTrip) {
  std::set<std::string_view> names;
  for (Opcode op : AllOpcodes()) {
    EXPECT_TRUE(names.insert(OpcodeName(op)).second) << OpcodeName(op);
    EXPECT_EQ(OpcodeFromName(OpcodeName(op)), op);
  }
  EXPECT_FALSE(OpcodeFromName("popcnt").has_value());
  // The 57 ops plus custom-call (threefry), fusion (issue 7), while, sine, cosine,
  // round-to-bf16 and round-to-f16 (issue 19).
  EXPECT_EQ(names.size(), 64u);
}

TEST(OpsTable, AttributesAreAlphabeticalSoThePrinterSortsThem) {
  std::vector<Attr> attrs = AllAttrs();
  for (size_t i = 1; i < attrs.size(); ++i) {
    EXPECT_LT(AttrName(attrs[i - 1]), AttrName(attrs[i]));
  }
}

TEST(OpsTable, EveryAttributeListedForAnOpExists) {
  for (Opcode op : AllOpcodes()) {
    std::istringstream words{std::string(OpcodeAttrList(op))};
    size_t count = 0;
    for (std::string w; words >> w;) ++count;
    EXPECT_EQ(OpcodeAttrs(op).size(), count)
        << OpcodeName(op) << ": an attribute is not in attrs.def";
  }
}

TEST(OpsTable, ElementwiseSubEnumsCoverTheirCategories) {
  for (Opcode op : AllOpcodes()) {
    EXPECT_EQ(AsUnaryOp(op).has_value(), OpcodeCategory(op) == OpCategory::kUnary)
        << OpcodeName(op);
    EXPECT_EQ(AsBinaryOp(op).has_value(), OpcodeCategory(op) == OpCategory::kBinary)
        << OpcodeName(op);
    if (AsUnaryOp(op)) {
      EXPECT_EQ(OpcodeArity(op), 1);
    }
    if (AsBinaryOp(op)) {
      EXPECT_EQ(OpcodeArity(op), 2);
    }
  }
}

TEST(OpsTable, OpsThatSumStateTheirOrder) {
  EXPECT_EQ(OpcodeReductionOrder(Opcode::kDot), ReductionOrder::kFmaChain);
  EXPECT_EQ(OpcodeReductionOrder(Opcode::kConvolution), ReductionOrder::kFmaChain);
  EXPECT_EQ(OpcodeReductionOrder(Opcode::kReduce), ReductionOrder::kPairwise64);
  EXPECT_EQ(OpcodeReductionOrder(Opcode::kReduceWindow), ReductionOrder::kPairwise64);
  EXPECT_EQ(OpcodeReductionOrder(Opcode::kScatter), ReductionOrder::kUpdateOrder);
  EXPECT_EQ(OpcodeReductionOrder(Opcode::kAllReduce), ReductionOrder::kShardTree);
  for (Opcode op : AllOpcodes()) {
    EXPECT_EQ(OpcodeExactness(op) == Exactness::kOrdered,
              OpcodeReductionOrder(op) != ReductionOrder::kNone)
        << OpcodeName(op);
  }
}

TEST(OpsTable, TypesColumnIsKindLettersInCanonicalOrder) {
  for (Opcode op : AllOpcodes()) {
    std::string_view types = OpcodeOperandTypes(op);
    EXPECT_FALSE(types.empty()) << OpcodeName(op);
    size_t last = 0;
    for (char c : types) {  // a subsequence of "bsuf"
      size_t at = std::string_view("bsuf").find(c, last);
      EXPECT_NE(at, std::string_view::npos) << OpcodeName(op) << ": '" << c << "'";
      last = at + 1;
    }
  }
}

TEST(OpsTable, TypesColumnMatchesTheScalarRules) {
  auto accepts = [](Opcode op, std::initializer_list<ElementType> types) {
    for (ElementType t : {ElementType::kPred, ElementType::kS32, ElementType::kU32,
                          ElementType::kS64, ElementType::kU64, ElementType::kF32}) {
      bool listed = std::find(types.begin(), types.end(), t) != types.end();
      if (OpcodeAcceptsType(op, t) != listed) return false;
    }
    return true;
  };
  const auto kInts = {ElementType::kS32, ElementType::kU32, ElementType::kS64, ElementType::kU64};
  EXPECT_TRUE(accepts(Opcode::kExp, {ElementType::kF32}));
  EXPECT_TRUE(accepts(Opcode::kFloor, {ElementType::kF32}));
  EXPECT_TRUE(accepts(Opcode::kShiftLeft, kInts));
  EXPECT_TRUE(accepts(Opcode::kNot, {ElementType::kPred, ElementType::kS32, ElementType::kU32,
                                     ElementType::kS64, ElementType::kU64}));
  EXPECT_TRUE(accepts(Opcode::kAdd, {ElementType::kS32, ElementType::kU32, ElementType::kS64,
                                     ElementType::kU64, ElementType::kF32}));
  EXPECT_TRUE(accepts(Opcode::kConvolution, {ElementType::kF32}));
  EXPECT_TRUE(OpcodeAcceptsType(Opcode::kMaximum, ElementType::kPred));  // or, on pred
  EXPECT_FALSE(OpcodeAcceptsType(Opcode::kDot, ElementType::kPred));
  for (Opcode op : AllOpcodes()) {
    // Every correctly rounded unary op is a float function; every bitwise op excludes floats.
    if (AsUnaryOp(op) && OpcodeExactness(op) == Exactness::kRounded) {
      EXPECT_EQ(OpcodeOperandTypes(op), "f") << OpcodeName(op);
    }
    // Every op but the elementwise arithmetic ones, dot, convolution and iota accepts any type.
    if (OpcodeCategory(op) == OpCategory::kDataMovement ||
        OpcodeCategory(op) == OpCategory::kStructural) {
      EXPECT_EQ(OpcodeOperandTypes(op), "bsuf") << OpcodeName(op);
    }
  }
}

}  // namespace
}  // namespace detrain::ir
