// Finite-difference checks of whole layers, built with the op patterns the frontend emits for
// them (src/frontend/lower_layers.cc): gelu, layer norm, log-softmax, sigmoid binary
// cross-entropy, dropout (threefry mask), causal self-attention, a small CNN (conv, avg pool,
// flatten, dense) and an embedding lookup. These exercise the rules together: shared operands,
// broadcasts of reductions, masks with -inf, random bits on a non-differentiable path.
// Smooth activations are used where a relu/max-pool kink could fall within h of an input.
#include <gtest/gtest.h>

#include <cmath>

#include "grad_check.h"

namespace detrain::testing {
namespace {

using frontend::Emitter;
using ir::ElementType;
using ir::Instruction;
using ir::Opcode;
using P = std::vector<Instruction*>;

Instruction* Bin(Emitter& e, Opcode op, Instruction* a, Instruction* b) {
  return e.b().Binary(op, a, b);
}
Instruction* Like(Emitter& e, Instruction* t, double v) { return e.Full(t->shape, v); }

Instruction* KeepDims(Emitter& e, Instruction* r, Instruction* x, int64_t axis) {
  std::vector<int64_t> dims;
  for (int64_t d = 0; d < x->shape.rank(); ++d)
    if (d != axis) dims.push_back(d);
  return e.BroadcastInDims(r, x->shape, dims);
}

Instruction* LogSoftmax(Emitter& e, Instruction* x, int64_t axis) {
  Instruction* s =
      Bin(e, Opcode::kSubtract, x, KeepDims(e, e.Reduce(x, Opcode::kMaximum, {axis}), x, axis));
  Instruction* lse = e.b().Unary(Opcode::kLog, e.ReduceSum(e.b().Unary(Opcode::kExp, s), {axis}));
  return Bin(e, Opcode::kSubtract, s, KeepDims(e, lse, x, axis));
}

Instruction* Softmax(Emitter& e, Instruction* x, int64_t axis) {
  Instruction* s =
      Bin(e, Opcode::kSubtract, x, KeepDims(e, e.Reduce(x, Opcode::kMaximum, {axis}), x, axis));
  Instruction* ex = e.b().Unary(Opcode::kExp, s);
  return Bin(e, Opcode::kDivide, ex, KeepDims(e, e.ReduceSum(ex, {axis}), x, axis));
}

Instruction* Gelu(Emitter& e, Instruction* x) {
  Instruction* x3 = Bin(e, Opcode::kMultiply, Bin(e, Opcode::kMultiply, x, x), x);
  Instruction* inner =
      Bin(e, Opcode::kAdd, x, Bin(e, Opcode::kMultiply, Like(e, x, 0.044715f), x3));
  Instruction* t =
      e.b().Unary(Opcode::kTanh, Bin(e, Opcode::kMultiply, Like(e, x, 0.7978845608028654f), inner));
  return Bin(e, Opcode::kMultiply, x,
             Bin(e, Opcode::kMultiply, Like(e, x, 0.5), Bin(e, Opcode::kAdd, Like(e, x, 1), t)));
}

Instruction* Dense(Emitter& e, Instruction* x, Instruction* w) {
  ir::DotDims d;
  d.lhs_contracting = {x->shape.rank() - 1};
  d.rhs_contracting = {0};
  return e.b().Dot(x, w, d);
}

TEST(LayerGradients, Gelu) {
  GradCase c =
      MakeCase({Uniform({3, 4}, -2, 2, 110)}, [](Emitter& e, const P& p) { return Gelu(e, p[0]); });
  EXPECT_EQ(CheckGradients(c), 0);
}

TEST(LayerGradients, LayerNorm) {
  GradCase c = MakeCase(
      {Uniform({3, 5}, -2, 2, 111), Uniform({5}, 0.5, 1.5, 112), Uniform({5}, -0.5, 0.5, 113)},
      [](Emitter& e, const P& p) {
        Instruction* x = p[0];
        Instruction* mean = KeepDims(e, e.ReduceMean(x, {1}), x, 1);
        Instruction* cx = Bin(e, Opcode::kSubtract, x, mean);
        Instruction* var = e.ReduceMean(Bin(e, Opcode::kMultiply, cx, cx), {1});
        Instruction* inv =
            e.b().Unary(Opcode::kRsqrt, Bin(e, Opcode::kAdd, var, Like(e, var, 1e-6f)));
        Instruction* y = Bin(e, Opcode::kMultiply, cx, KeepDims(e, inv, x, 1));
        y = Bin(e, Opcode::kMultiply, y, e.BroadcastInDims(p[1], x->shape, {1}));
        return Bin(e, Opcode::kAdd, y, e.BroadcastInDims(p[2], x->shape, {1}));
      });
  EXPECT_EQ(CheckGradients(c), 0);
}

TEST(LayerGradients, LogSoftmax) {
  GradCase c = MakeCase({Uniform({4, 5}, -3, 3, 114)},
                        [](Emitter& e, const P& p) { return LogSoftmax(e, p[0], 1); });
  EXPECT_EQ(CheckGradients(c), 0);
}

// -y * log_sigmoid(x) - (1 - y) * log_sigmoid(-x), log_sigmoid(x) = -(max(-x, 0) +
// log1p(exp(-|x|))).
TEST(LayerGradients, SigmoidBinaryCrossEntropy) {
  auto log_sigmoid = [](Emitter& e, Instruction* x) {
    Instruction* nx = e.b().Unary(Opcode::kNegate, x);
    Instruction* tail = e.b().Unary(
        Opcode::kLog1p,
        e.b().Unary(Opcode::kExp, e.b().Unary(Opcode::kNegate, e.b().Unary(Opcode::kAbs, x))));
    return e.b().Unary(Opcode::kNegate,
                       Bin(e, Opcode::kAdd, Bin(e, Opcode::kMaximum, nx, Like(e, x, 0)), tail));
  };
  GradCase c =
      MakeCase({SignedAwayFromZero({6}, 0.1, 3, 115), Uniform({6}, 0, 1, 116)},
               [log_sigmoid](Emitter& e, const P& p) {
                 Instruction* a = Bin(e, Opcode::kMultiply, e.b().Unary(Opcode::kNegate, p[1]),
                                      log_sigmoid(e, p[0]));
                 Instruction* b =
                     Bin(e, Opcode::kMultiply, Bin(e, Opcode::kSubtract, Like(e, p[1], 1), p[1]),
                         log_sigmoid(e, e.b().Unary(Opcode::kNegate, p[0])));
                 return Bin(e, Opcode::kSubtract, a, b);
               });
  EXPECT_EQ(CheckGradients(c), 0);
}

TEST(LayerGradients, Dropout) {
  GradCase c =
      MakeCase({Uniform({4, 5}, -1, 1, 117),
                ir::Literal::FromVector<uint32_t>(ElementType::kU32, {2}, {7u, 9u})},
               [](Emitter& e, const P& p) {
                 Instruction* u = e.Uniform01(p[1], {4, 5}, true);
                 Instruction* keep = e.b().Compare(u, Like(e, u, 0.6f), ir::Direction::kLt);
                 Instruction* scaled = Bin(e, Opcode::kDivide, Gelu(e, p[0]), Like(e, p[0], 0.6f));
                 return e.b().Select(keep, scaled, Like(e, p[0], 0));
               });
  EXPECT_EQ(CheckGradients(c, {.wrt = {0}}), 0);
}

// Causal multi-head self-attention as lower_layers.cc's Attention: B=1, T=4, D=4, 2 heads.
TEST(LayerGradients, CausalSelfAttention) {
  const int64_t b = 1, t = 4, d = 4, heads = 2, dh = 2;
  std::vector<ir::Literal> args = {Uniform({b, t, d}, -1, 1, 118)};
  for (uint32_t i = 0; i < 4; ++i) args.push_back(Uniform({d, d}, -0.7, 0.7, 119 + i));
  GradCase c = MakeCase(args, [=](Emitter& e, const P& p) {
    auto split = [&](Instruction* w) {
      return e.b().Transpose(e.b().Reshape(Dense(e, p[0], w), {b, t, heads, dh}), {0, 2, 1, 3});
    };
    ir::DotDims qk;
    qk.lhs_batch = qk.rhs_batch = {0, 1};
    qk.lhs_contracting = qk.rhs_contracting = {3};
    Instruction* scores = e.b().Dot(split(p[1]), split(p[2]), qk);
    scores = Bin(e, Opcode::kDivide, scores, Like(e, scores, std::sqrt(static_cast<float>(dh))));
    ir::Shape ids(ElementType::kS32, scores->shape.dims());
    Instruction* allowed =
        e.b().Compare(e.b().Iota(ids, 2), e.b().Iota(ids, 3), ir::Direction::kGe);
    scores = e.b().Select(allowed, scores, Like(e, scores, -INFINITY));
    ir::DotDims pv;
    pv.lhs_batch = pv.rhs_batch = {0, 1};
    pv.lhs_contracting = {3};
    pv.rhs_contracting = {2};
    Instruction* o = e.b().Dot(Softmax(e, scores, 3), split(p[3]), pv);
    return Dense(e, e.b().Reshape(e.b().Transpose(o, {0, 2, 1, 3}), {b, t, d}), p[4]);
  });
  EXPECT_EQ(CheckGradients(c), 0);
}

// conv2d (SAME, stride 1) -> gelu -> avg_pool 2x2 -> flatten -> dense -> log_softmax picked.
TEST(LayerGradients, SmallCnn) {
  GradCase c =
      MakeCase({Uniform({2, 4, 4, 1}, -1, 1, 123), Uniform({3, 3, 1, 2}, -0.7, 0.7, 124),
                Uniform({8, 3}, -0.7, 0.7, 125)},
               [](Emitter& e, const P& p) {
                 std::vector<ir::WindowDim> same = {{3, 1, 1, 1, 1, 1}, {3, 1, 1, 1, 1, 1}};
                 Instruction* h = Gelu(e, e.b().Convolution(p[0], p[1], "b01f_01io->b01f", same));
                 std::vector<ir::WindowDim> pool(4);
                 pool[1] = pool[2] = {2, 2, 0, 0, 1, 1};
                 Instruction* s = e.b().ReduceWindow(h, e.b().ConstantF32(0), pool,
                                                     e.Combiner(Opcode::kAdd, ElementType::kF32));
                 Instruction* avg = Bin(e, Opcode::kDivide, s, Like(e, s, 4));
                 return LogSoftmax(e, Dense(e, e.b().Reshape(avg, {2, 8}), p[2]), 1);
               });
  EXPECT_EQ(CheckGradients(c), 0);
}

TEST(LayerGradients, EmbeddingMean) {
  GradCase c = MakeCase({Uniform({6, 3}, -1, 1, 126), S32({2, 4}, {1, 5, 1, 0, 3, 3, 3, 2})},
                        [](Emitter& e, const P& p) {
                          ir::GatherDims g;
                          g.offset_dims = {2};
                          g.collapsed_slice_dims = {0};
                          g.start_index_map = {0};
                          g.index_vector_dim = 2;
                          g.slice_sizes = {1, 3};
                          Instruction* rows = e.b().Gather(p[0], p[1], g);
                          return e.b().Unary(Opcode::kTanh, e.ReduceMean(rows, {1}));
                        });
  EXPECT_EQ(CheckGradients(c), 0);
}

}  // namespace
}  // namespace detrain::testing
