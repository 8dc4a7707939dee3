// Central finite-difference checks of the reduction, dot and convolution VJP rules, one test
// per op (grad_check.h states the tolerance and why). Max/min inputs are distinct values at
// least 0.05 apart (> 2h), so no perturbation changes which element is chosen.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "grad_check.h"

namespace detrain::testing {
namespace {

using frontend::Emitter;
using ir::Instruction;
using ir::Opcode;
using P = std::vector<Instruction*>;

// Distinct values -0.8 + 0.05 * k in a fixed pseudo-random order.
ir::Literal Spaced(std::vector<int64_t> dims, uint32_t seed) {
  ir::Literal lit(ir::Shape(ir::ElementType::kF32, std::move(dims)));
  std::vector<float> v;
  for (int64_t k = 0; k < lit.element_count(); ++k)
    v.push_back(static_cast<float>(-0.8 + 0.05 * static_cast<double>(k)));
  std::mt19937 rng(seed);
  for (size_t i = v.size(); i > 1; --i) std::swap(v[i - 1], v[rng() % i]);  // Fisher-Yates, fixed
  for (int64_t k = 0; k < lit.element_count(); ++k) lit.Set<float>(k, v[static_cast<size_t>(k)]);
  return lit;
}

Instruction* Sq(Emitter& e, Instruction* x) { return e.b().Multiply(x, x); }

TEST(VjpRule, Reduce) {
  GradCase add = MakeCase({Uniform({2, 3, 4}, -1, 1, 60)}, [](Emitter& e, const P& p) {
    return Sq(e, e.ReduceSum(p[0], {0, 2}));
  });
  EXPECT_EQ(CheckGradients(add), 0);
  for (Opcode op : {Opcode::kMaximum, Opcode::kMinimum}) {
    GradCase c = MakeCase({Spaced({3, 5}, 61)},
                          [op](Emitter& e, const P& p) { return Sq(e, e.Reduce(p[0], op, {1})); });
    EXPECT_EQ(CheckGradients(c), 0) << ir::OpcodeName(op);
  }
}

struct Pool {
  int64_t size, stride, pad_lo, pad_hi;
};

// NHWC pooling windows as the frontend lowers max_pool/avg_pool: non-overlapping VALID,
// overlapping SAME (3x3 stride 1), and overlapping strided SAME (3x3 stride 2).
Instruction* PoolOf(Emitter& e, Instruction* x, Opcode op, Pool pool) {
  std::vector<ir::WindowDim> w(4);
  for (int d : {1, 2})
    w[static_cast<size_t>(d)] = {pool.size, pool.stride, pool.pad_lo, pool.pad_hi, 1, 1};
  Instruction* init = e.b().ConstantF32(
      op == Opcode::kAdd ? 0.0f : (op == Opcode::kMaximum ? -INFINITY : INFINITY));
  return e.b().ReduceWindow(x, init, w, e.Combiner(op, ir::ElementType::kF32));
}

TEST(VjpRule, ReduceWindow) {
  const Pool pools[] = {{2, 2, 0, 0}, {3, 1, 1, 1}, {3, 2, 1, 1}, {2, 3, 0, 0}};
  for (Opcode op : {Opcode::kAdd, Opcode::kMaximum, Opcode::kMinimum}) {
    for (const Pool& pool : pools) {
      GradCase c = MakeCase({Spaced({1, 5, 5, 2}, 62)}, [op, pool](Emitter& e, const P& p) {
        return Sq(e, PoolOf(e, p[0], op, pool));
      });
      EXPECT_EQ(CheckGradients(c), 0)
          << ir::OpcodeName(op) << " window " << pool.size << " stride " << pool.stride;
    }
  }
}

TEST(VjpRule, ReduceWindowWithDilation) {
  GradCase c = MakeCase({Spaced({7, 3}, 63)}, [](Emitter& e, const P& p) {
    std::vector<ir::WindowDim> w = {{3, 2, 1, 0, 1, 2}, {2, 1, 0, 0, 1, 1}};
    Instruction* s = e.b().ReduceWindow(p[0], e.b().ConstantF32(0), w,
                                        e.Combiner(Opcode::kAdd, ir::ElementType::kF32));
    Instruction* m = e.b().ReduceWindow(p[0], e.b().ConstantF32(-INFINITY), w,
                                        e.Combiner(Opcode::kMaximum, ir::ElementType::kF32));
    return e.b().Multiply(s, m);
  });
  EXPECT_EQ(CheckGradients(c), 0);
}

TEST(VjpRule, Dot) {
  ir::DotDims mm;
  mm.lhs_contracting = {1};
  mm.rhs_contracting = {0};
  GradCase plain =
      MakeCase({Uniform({3, 4}, -1, 1, 64), Uniform({4, 2}, -1, 1, 65)},
               [mm](Emitter& e, const P& p) { return Sq(e, e.b().Dot(p[0], p[1], mm)); });
  EXPECT_EQ(CheckGradients(plain), 0);
  // lhs [4,2,3]: contracting 0, batch 1, free 2; rhs [2,5,4]: batch 0, free 1, contracting 2.
  ir::DotDims odd;
  odd.lhs_batch = {1};
  odd.rhs_batch = {0};
  odd.lhs_contracting = {0};
  odd.rhs_contracting = {2};
  GradCase batched =
      MakeCase({Uniform({4, 2, 3}, -1, 1, 66), Uniform({2, 5, 4}, -1, 1, 67)},
               [odd](Emitter& e, const P& p) { return Sq(e, e.b().Dot(p[0], p[1], odd)); });
  EXPECT_EQ(CheckGradients(batched), 0);
  // Two contracting dimensions of equal size listed out of order: lhs [2,3,3] {2,1}, rhs
  // [3,3,5] {0,1} (a wrong transpose back would still have the right shape).
  ir::DotDims two;
  two.lhs_contracting = {2, 1};
  two.rhs_contracting = {0, 1};
  GradCase multi =
      MakeCase({Uniform({2, 3, 3}, -1, 1, 68), Uniform({3, 3, 5}, -1, 1, 69)},
               [two](Emitter& e, const P& p) { return Sq(e, e.b().Dot(p[0], p[1], two)); });
  EXPECT_EQ(CheckGradients(multi), 0);
}

ir::WindowDim Win(int64_t size, int64_t stride, int64_t lo, int64_t hi, int64_t rhs_dilate = 1) {
  return {size, stride, lo, hi, 1, rhs_dilate};
}

int CheckConv(std::vector<int64_t> x, std::vector<int64_t> k, const char* labels,
              std::vector<ir::WindowDim> w, uint32_t seed) {
  GradCase c =
      MakeCase({Uniform(std::move(x), -1, 1, seed), Uniform(std::move(k), -1, 1, seed + 1)},
               [labels, w](Emitter& e, const P& p) {
                 return Sq(e, e.b().Convolution(p[0], p[1], labels, w));
               });
  return CheckGradients(c);
}

TEST(VjpRule, Convolution) {
  const char* nhwc = "b01f_01io->b01f";
  EXPECT_EQ(CheckConv({2, 4, 4, 2}, {3, 3, 2, 3}, nhwc, {Win(3, 1, 0, 0), Win(3, 1, 0, 0)}, 70), 0)
      << "VALID";
  EXPECT_EQ(CheckConv({1, 6, 5, 2}, {3, 3, 2, 2}, nhwc, {Win(3, 2, 1, 1), Win(3, 2, 1, 1)}, 72), 0)
      << "SAME stride 2";
  EXPECT_EQ(CheckConv({1, 5, 5, 1}, {2, 2, 1, 2}, nhwc, {Win(2, 2, 0, 0), Win(2, 3, 0, 0)}, 74), 0)
      << "VALID, input rows unused";
  EXPECT_EQ(CheckConv({1, 7, 4, 2}, {2, 2, 2, 1}, nhwc, {Win(2, 1, 1, 0, 2), Win(2, 2, 0, 1)}, 76),
            0)
      << "rhs_dilate";
  EXPECT_EQ(CheckConv({2, 2, 4, 4}, {3, 2, 3, 3}, "bf01_oi01->bf01",
                      {Win(3, 1, 1, 1), Win(3, 1, 0, 0)}, 78),
            0)
      << "NCHW";
}

}  // namespace
}  // namespace detrain::testing
