// Central finite-difference checks of the elementwise VJP rules: one test per op, named after
// it (grad_check.h states the tolerance and why). Inputs stay in each op's smooth region and
// more than h away from kinks, ties and discontinuities.
#include <gtest/gtest.h>

#include "grad_check.h"

namespace detrain::testing {
namespace {

using frontend::Emitter;
using ir::Instruction;
using ir::Opcode;
using P = std::vector<Instruction*>;

int CheckUnary(Opcode op, ir::Literal x) {
  GradCase c =
      MakeCase({std::move(x)}, [op](Emitter& e, const P& p) { return e.b().Unary(op, p[0]); });
  return CheckGradients(c);
}

int CheckBinary(Opcode op, ir::Literal a, ir::Literal b) {
  GradCase c = MakeCase({std::move(a), std::move(b)},
                        [op](Emitter& e, const P& p) { return e.b().Binary(op, p[0], p[1]); });
  return CheckGradients(c);
}

TEST(VjpRule, Abs) {
  EXPECT_EQ(CheckUnary(Opcode::kAbs, SignedAwayFromZero({2, 3}, 0.2, 1.5, 1)), 0);
}
TEST(VjpRule, Negate) { EXPECT_EQ(CheckUnary(Opcode::kNegate, Uniform({5}, -2, 2, 2)), 0); }
TEST(VjpRule, Exponential) { EXPECT_EQ(CheckUnary(Opcode::kExp, Uniform({2, 3}, -1, 1, 3)), 0); }
TEST(VjpRule, ExponentialMinusOne) {
  EXPECT_EQ(CheckUnary(Opcode::kExpm1, Uniform({6}, -1, 1, 4)), 0);
}
TEST(VjpRule, Log) { EXPECT_EQ(CheckUnary(Opcode::kLog, Uniform({6}, 0.5, 2, 5)), 0); }
TEST(VjpRule, LogPlusOne) { EXPECT_EQ(CheckUnary(Opcode::kLog1p, Uniform({6}, -0.5, 1, 6)), 0); }
TEST(VjpRule, Tanh) { EXPECT_EQ(CheckUnary(Opcode::kTanh, Uniform({2, 4}, -2, 2, 7)), 0); }
TEST(VjpRule, Logistic) { EXPECT_EQ(CheckUnary(Opcode::kLogistic, Uniform({2, 4}, -3, 3, 8)), 0); }
TEST(VjpRule, Sqrt) { EXPECT_EQ(CheckUnary(Opcode::kSqrt, Uniform({6}, 0.5, 2, 9)), 0); }
TEST(VjpRule, Rsqrt) { EXPECT_EQ(CheckUnary(Opcode::kRsqrt, Uniform({6}, 0.5, 2, 10)), 0); }
TEST(VjpRule, Erf) { EXPECT_EQ(CheckUnary(Opcode::kErf, Uniform({6}, -1.5, 1.5, 11)), 0); }
TEST(VjpRule, Sine) { EXPECT_EQ(CheckUnary(Opcode::kSin, Uniform({2, 4}, -4, 4, 31)), 0); }
TEST(VjpRule, Cosine) { EXPECT_EQ(CheckUnary(Opcode::kCos, Uniform({2, 4}, -4, 4, 32)), 0); }

TEST(VjpRule, Add) {
  EXPECT_EQ(CheckBinary(Opcode::kAdd, Uniform({2, 3}, -1, 1, 12), Uniform({2, 3}, -1, 1, 13)), 0);
}
TEST(VjpRule, Subtract) {
  EXPECT_EQ(CheckBinary(Opcode::kSubtract, Uniform({2, 3}, -1, 1, 14), Uniform({2, 3}, -1, 1, 15)),
            0);
}
TEST(VjpRule, Multiply) {
  EXPECT_EQ(CheckBinary(Opcode::kMultiply, Uniform({2, 3}, -2, 2, 16), Uniform({2, 3}, -2, 2, 17)),
            0);
}
TEST(VjpRule, Divide) {
  EXPECT_EQ(CheckBinary(Opcode::kDivide, Uniform({2, 3}, -2, 2, 18),
                        SignedAwayFromZero({2, 3}, 0.7, 2, 19)),
            0);
}

// a = b * (q + frac) with frac in [0.25, 0.75]: a / b stays away from the integers where
// remainder jumps.
TEST(VjpRule, Remainder) {
  ir::Literal b = SignedAwayFromZero({6}, 0.7, 1.3, 20);
  ir::Literal frac = Uniform({6}, 0.25, 0.75, 21);
  ir::Literal a = b;
  for (int64_t i = 0; i < 6; ++i)
    a.Set<float>(i, b.Get<float>(i) * (static_cast<float>(i % 3) + frac.Get<float>(i)) *
                        (i % 2 ? -1.0f : 1.0f));
  EXPECT_EQ(CheckBinary(Opcode::kRemainder, a, b), 0);
}

// Operands at least 0.1 apart (no ties within h).
ir::Literal Apart(const ir::Literal& a, uint32_t seed) {
  ir::Literal d = SignedAwayFromZero(a.shape().dims(), 0.1, 1.0, seed);
  ir::Literal b = a;
  for (int64_t i = 0; i < a.element_count(); ++i)
    b.Set<float>(i, a.Get<float>(i) + d.Get<float>(i));
  return b;
}

TEST(VjpRule, Maximum) {
  ir::Literal a = Uniform({2, 4}, -1, 1, 22);
  EXPECT_EQ(CheckBinary(Opcode::kMaximum, a, Apart(a, 23)), 0);
}
TEST(VjpRule, Minimum) {
  ir::Literal a = Uniform({2, 4}, -1, 1, 24);
  EXPECT_EQ(CheckBinary(Opcode::kMinimum, a, Apart(a, 25)), 0);
}
TEST(VjpRule, Power) {
  EXPECT_EQ(
      CheckBinary(Opcode::kPower, Uniform({2, 3}, 0.5, 2, 26), Uniform({2, 3}, -1.5, 1.5, 27)), 0);
}

// select(x > 0, a, b) with x fixed (a parameter that is not differentiated: pred paths carry
// no gradient).
TEST(VjpRule, Select) {
  GradCase c =
      MakeCase({Uniform({2, 4}, -1, 1, 28), Uniform({2, 4}, -1, 1, 29), Uniform({2, 4}, -1, 1, 30)},
               [](Emitter& e, const P& p) {
                 Instruction* pos = e.b().Compare(p[0], e.Full(p[0]->shape, 0), ir::Direction::kGt);
                 return e.b().Select(pos, e.b().Multiply(p[1], p[0]), p[2]);
               });
  EXPECT_EQ(CheckGradients(c), 0);
}

// clamp with array bounds (x below, inside and above) and with scalar bounds.
TEST(VjpRule, Clamp) {
  ir::Literal lo = F32({6}, {-0.5f, -0.5f, -0.5f, 0.1f, -1.0f, 0.3f});
  ir::Literal x = F32({6}, {-0.9f, 0.2f, 0.8f, -0.3f, 0.0f, 0.9f});
  ir::Literal hi = F32({6}, {0.5f, 0.5f, 0.5f, 0.6f, 1.0f, 0.6f});
  GradCase c =
      MakeCase({lo, x, hi}, [](Emitter& e, const P& p) { return e.b().Clamp(p[0], p[1], p[2]); });
  EXPECT_EQ(CheckGradients(c), 0);
  GradCase s = MakeCase({F32({}, {-0.4f}), x, F32({}, {0.5f})},
                        [](Emitter& e, const P& p) { return e.b().Clamp(p[0], p[1], p[2]); });
  EXPECT_EQ(CheckGradients(s), 0);
}

// f32 -> f32 convert passes the cotangent; a path through s32 carries none (checked: the
// gradient of round-tripped x is only the direct term).
TEST(VjpRule, Convert) {
  GradCase c = MakeCase({F32({5}, {-2.5f, -1.3f, 0.4f, 1.7f, 2.2f})}, [](Emitter& e, const P& p) {
    Instruction* same = e.b().Convert(p[0], ir::ElementType::kF32);
    Instruction* via_int =
        e.b().Convert(e.b().Convert(p[0], ir::ElementType::kS32), ir::ElementType::kF32);
    return e.b().Add(e.b().Multiply(same, same), via_int);
  });
  EXPECT_EQ(CheckGradients(c), 0);
}

}  // namespace
}  // namespace detrain::testing
