// The builder infers shapes, records the first error, and the canonical form of what it builds
// depends only on the graph: not on creation order, not on dead code.
#include "compiler/ir/builder.h"

#include <gtest/gtest.h>

#include "compiler/ir/printer.h"
#include "compiler/ir/verifier.h"

namespace detrain::ir {
namespace {

const Shape kMat(ElementType::kF32, {2, 3});
const Shape kVec(ElementType::kF32, {3});

TEST(Builder, InfersShapes) {
  Module m("m");
  Builder b(&m, "main");
  Instruction* x = b.Parameter(0, kMat, "x");
  Instruction* w = b.Parameter(1, Shape(ElementType::kF32, {3, 4}), "w");
  Instruction* d = b.Dot(x, w, {{}, {}, {1}, {0}});
  EXPECT_EQ(d->shape, Shape(ElementType::kF32, {2, 4}));
  Instruction* t = b.Transpose(d, {1, 0});
  EXPECT_EQ(t->shape, Shape(ElementType::kF32, {4, 2}));
  Instruction* c = b.Compare(t, t, Direction::kGe);
  EXPECT_EQ(c->shape, Shape(ElementType::kPred, {4, 2}));
  Instruction* tuple = b.Tuple({t, c});
  EXPECT_EQ(b.GetTupleElement(tuple, 1)->shape, c->shape);
  auto built = b.Build(tuple);
  ASSERT_TRUE(built.ok());
  m.set_entry(*built);
  EXPECT_TRUE(VerifyModule(m).ok());
}

TEST(Builder, RecordsTheFirstErrorWithTheRuleBroken) {
  Module m("m");
  Builder b(&m, "main");
  Instruction* x = b.Parameter(0, kMat);
  Instruction* y = b.Parameter(1, kVec);
  Instruction* bad = b.Add(x, y);
  b.Transpose(x, {0, 0});  // a second error: not reported
  auto built = b.Build(bad);
  ASSERT_FALSE(built.ok());
  EXPECT_EQ(
      built.status().message(),
      "building add in 'main': operands of add must have the same shape, got f32[2,3] and f32[3]");
}

// Builds reduce(x * broadcast(bias)) creating instructions in one of two orders, optionally with
// dead code; the canonical text must not notice.
std::string BuildVariant(bool reversed, bool dead_code) {
  Module m("variant");
  Computation* add = Builder::ScalarCombiner(&m, "sum", Opcode::kAdd, ElementType::kF32);
  Builder b(&m, "main");
  Instruction* x = b.Parameter(0, kMat, "x");
  Instruction* bias = b.Parameter(1, kVec, "bias");
  Instruction *zero, *bb;
  if (reversed) {
    zero = b.ConstantF32(0);
    bb = b.Broadcast(bias, kMat, {1});
  } else {
    bb = b.Broadcast(bias, kMat, {1});
    zero = b.ConstantF32(0);
  }
  if (dead_code) b.Unary(Opcode::kExp, x);
  Instruction* r = b.Reduce(b.Multiply(x, bb), zero, {1}, add);
  m.set_entry(*b.Build(r));
  EXPECT_TRUE(VerifyModule(m).ok());
  return *PrintModule(m);
}

TEST(Builder, CanonicalTextDependsOnlyOnTheGraph) {
  std::string a = BuildVariant(false, false);
  EXPECT_EQ(a, BuildVariant(true, false));
  EXPECT_EQ(a, BuildVariant(false, true));
  EXPECT_EQ(
      a,
      "HloModule variant\n\n"
      "region.0 {\n"
      "  p0 = f32[] parameter(0)\n"
      "  p1 = f32[] parameter(1)\n"
      "  ROOT add.0 = f32[] add(p0, p1)\n"
      "}\n\n"
      "ENTRY main {\n"
      "  x = f32[2,3] parameter(0)\n"
      "  bias = f32[3] parameter(1)\n"
      "  broadcast.0 = f32[2,3] broadcast(bias), dimensions={1}\n"
      "  multiply.1 = f32[2,3] multiply(x, broadcast.0)\n"
      "  constant.2 = f32[] constant(0)\n"
      "  ROOT reduce.3 = f32[2] reduce(multiply.1, constant.2), dimensions={1}, to_apply=region.0\n"
      "}\n");
}

TEST(Builder, UnnamedParametersPrintPositionally) {
  Module m("m");
  Builder b(&m, "main");
  Instruction* x = b.Parameter(0, kVec);
  m.set_entry(*b.Build(b.Unary(Opcode::kNegate, x)));
  EXPECT_NE(PrintModule(m)->find("  p0 = f32[3] parameter(0)\n"), std::string::npos);
}

TEST(Verifier, RejectsInvalidParameterNamesFromTheBuilder) {
  Module m("m");
  Builder b(&m, "main");
  Instruction* x = b.Parameter(0, kVec, "x.3");  // `.<digits>` is reserved for generated names
  m.set_entry(*b.Build(b.Unary(Opcode::kNegate, x)));
  Status s = VerifyModule(m);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("'x.3' is not a valid parameter name"), std::string::npos)
      << s.message();
}

}  // namespace
}  // namespace detrain::ir
