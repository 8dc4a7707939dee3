// ValueAndGrad as a whole: hand-derived gradients of a small MLP with softmax cross-entropy,
// the value output bit for bit, determinism of the emitted IR, the tie conventions, what
// carries no gradient, errors, and that the VJP table classifies every op of ops.def.
#include "frontend/autodiff/autodiff.h"

#include <gtest/gtest.h>

#include <cmath>
#include <set>
#include <string>

#include "compiler/ir/printer.h"
#include "compiler/ir/verifier.h"
#include "frontend/autodiff/vjp.h"
#include "grad_check.h"

namespace detrain::testing {
namespace {

using frontend::Emitter;
using ir::Instruction;
using ir::Opcode;
using P = std::vector<Instruction*>;

constexpr int64_t kB = 8, kD = 5, kH = 6, kK = 3;

// loss(x, w1, b1, w2, b2, labels) = mean_b softmax_cross_entropy(relu(x w1 + b1) w2 + b2),
// built as the frontend lowers it (lower_layers.cc). `bias_first` changes only the order in
// which instructions are created, not the graph.
ir::Computation* BuildMlp(ir::Module* m, bool bias_first) {
  ir::Builder b(m, "mlp_loss");
  Emitter e(m, &b);
  Instruction* x = b.Parameter(0, ir::Shape(ir::ElementType::kF32, {kB, kD}), "x");
  Instruction* w1 = b.Parameter(1, ir::Shape(ir::ElementType::kF32, {kD, kH}), "w1");
  Instruction* b1 = b.Parameter(2, ir::Shape(ir::ElementType::kF32, {kH}), "b1");
  Instruction* w2 = b.Parameter(3, ir::Shape(ir::ElementType::kF32, {kH, kK}), "w2");
  Instruction* b2 = b.Parameter(4, ir::Shape(ir::ElementType::kF32, {kK}), "b2");
  Instruction* labels = b.Parameter(5, ir::Shape(ir::ElementType::kS32, {kB}), "labels");
  ir::DotDims mm;
  mm.lhs_contracting = {1};
  mm.rhs_contracting = {0};
  ir::Shape bh(ir::ElementType::kF32, {kB, kH}), bk(ir::ElementType::kF32, {kB, kK});
  Instruction* b1b = bias_first ? e.BroadcastInDims(b1, bh, {1}) : nullptr;
  Instruction* a = b.Add(b.Dot(x, w1, mm), b1b ? b1b : e.BroadcastInDims(b1, bh, {1}));
  Instruction* h = b.Binary(Opcode::kMaximum, a, e.Full(a->shape, 0));
  Instruction* z = b.Add(b.Dot(h, w2, mm), e.BroadcastInDims(b2, bk, {1}));
  Instruction* s = b.Binary(Opcode::kSubtract, z,
                            e.BroadcastInDims(e.Reduce(z, Opcode::kMaximum, {1}), bk, {0}));
  Instruction* lse = b.Unary(Opcode::kLog, e.ReduceSum(b.Unary(Opcode::kExp, s), {1}));
  ir::Shape ids(ir::ElementType::kS32, {kB, kK});
  Instruction* hot =
      b.Compare(b.Iota(ids, 1), e.BroadcastInDims(labels, ids, {0}), ir::Direction::kEq);
  Instruction* picked = e.ReduceSum(b.Select(hot, s, e.Full(s->shape, 0)), {1});
  auto f = b.Build(e.ReduceMean(b.Binary(Opcode::kSubtract, lse, picked), {0}));
  EXPECT_TRUE(f.ok()) << f.status().message();
  return f.ok() ? *f : nullptr;
}

std::vector<ir::Literal> MlpArgs() {
  return {Uniform({kB, kD}, -1, 1, 90), Uniform({kD, kH}, -0.8, 0.8, 91),
          Uniform({kH}, -0.2, 0.2, 92), Uniform({kH, kK}, -0.8, 0.8, 93),
          Uniform({kK}, -0.2, 0.2, 94), S32({kB}, {0, 2, 1, 1, 0, 2, 2, 1})};
}

double At(const ir::Literal& l, int64_t i) { return l.Get<float>(i); }

// The gradients derived by hand, in double: dz = (softmax(z) - onehot) / B; dw2 = h^T dz;
// db2 = sum_b dz; da = (dz w2^T) * [a > 0]; dw1 = x^T da; db1 = sum_b da; dx = da w1^T.
std::vector<std::vector<double>> HandGradients(const std::vector<ir::Literal>& in, double* loss) {
  const ir::Literal &x = in[0], &w1 = in[1], &b1 = in[2], &w2 = in[3], &b2 = in[4];
  std::vector<double> a(kB * kH), h(kB * kH), dz(kB * kK), da(kB * kH);
  std::vector<std::vector<double>> g = {std::vector<double>(kB * kD), std::vector<double>(kD * kH),
                                        std::vector<double>(kH), std::vector<double>(kH * kK),
                                        std::vector<double>(kK)};
  *loss = 0;
  for (int64_t b = 0; b < kB; ++b) {
    for (int64_t j = 0; j < kH; ++j) {
      double s = At(b1, j);
      for (int64_t d = 0; d < kD; ++d) s += At(x, b * kD + d) * At(w1, d * kH + j);
      a[b * kH + j] = s;
      h[b * kH + j] = s > 0 ? s : 0;
    }
    double z[kK], zmax = -INFINITY, sum = 0;
    for (int64_t k = 0; k < kK; ++k) {
      z[k] = At(b2, k);
      for (int64_t j = 0; j < kH; ++j) z[k] += h[b * kH + j] * At(w2, j * kK + k);
      zmax = std::max(zmax, z[k]);
    }
    for (int64_t k = 0; k < kK; ++k) sum += std::exp(z[k] - zmax);
    int32_t label = in[5].Get<int32_t>(b);
    *loss += (std::log(sum) - (z[label] - zmax)) / kB;
    for (int64_t k = 0; k < kK; ++k)
      dz[b * kK + k] = (std::exp(z[k] - zmax) / sum - (k == label ? 1 : 0)) / kB;
  }
  for (int64_t b = 0; b < kB; ++b) {
    for (int64_t k = 0; k < kK; ++k) {
      g[4][k] += dz[b * kK + k];
      for (int64_t j = 0; j < kH; ++j) g[3][j * kK + k] += h[b * kH + j] * dz[b * kK + k];
    }
    for (int64_t j = 0; j < kH; ++j) {
      double dh = 0;
      for (int64_t k = 0; k < kK; ++k) dh += dz[b * kK + k] * At(w2, j * kK + k);
      da[b * kH + j] = a[b * kH + j] > 0 ? dh : 0;
      g[2][j] += da[b * kH + j];
      for (int64_t d = 0; d < kD; ++d) {
        g[1][d * kH + j] += At(x, b * kD + d) * da[b * kH + j];
        g[0][b * kD + d] += da[b * kH + j] * At(w1, d * kH + j);
      }
    }
  }
  return g;
}

// f32 IR vs double host: the IR rounds each op once in f32 (relative error ~6e-8 per op, a
// few dozen ops deep), so per tensor |ir - host| <= 1e-5 * max|host| + 1e-8 leaves a wide
// margin while still catching any wrong term (which would be off by O(max|host|)).
TEST(AutodiffMlp, MatchesHandDerivedGradients) {
  ir::Module m("mlp");
  GradCase c{nullptr, BuildMlp(&m, false), MlpArgs()};
  auto g = frontend::ValueAndGrad(&m, *c.f, {0, 1, 2, 3, 4}, "mlp_value_and_grad");
  ASSERT_TRUE(g.ok()) << g.status().message();
  ir::Literal out = Eval(m, *g, c.args);
  double loss = 0;
  auto want = HandGradients(c.args, &loss);
  EXPECT_NEAR(out.tuple_elements()[0].Get<float>(0), loss, 1e-6 * std::fabs(loss));
  for (size_t t = 0; t < want.size(); ++t) {
    const ir::Literal& got = out.tuple_elements()[t + 1];
    ASSERT_EQ(got.element_count(), static_cast<int64_t>(want[t].size()));
    double scale = 0;
    for (double v : want[t]) scale = std::max(scale, std::fabs(v));
    EXPECT_GT(scale, 1e-3) << "gradient " << t << " is trivially small";
    for (size_t i = 0; i < want[t].size(); ++i) {
      EXPECT_NEAR(got.Get<float>(static_cast<int64_t>(i)), want[t][i], 1e-5 * scale + 1e-8)
          << "gradient " << t << " element " << i;
    }
  }
}

TEST(AutodiffMlp, ValueIsBitIdenticalToForward) {
  ir::Module m("mlp");
  ir::Computation* f = BuildMlp(&m, false);
  auto args = MlpArgs();
  auto g = frontend::ValueAndGrad(&m, *f, {1, 2, 3, 4}, "vg");
  ASSERT_TRUE(g.ok()) << g.status().message();
  ir::Literal value = Eval(m, f, args);
  ir::Literal out = Eval(m, *g, args);
  EXPECT_TRUE(out.tuple_elements()[0].BitwiseEqual(value));
  EXPECT_EQ(out.tuple_elements().size(), 5u);
}

std::string CanonicalValueAndGrad(bool bias_first) {
  ir::Module m("mlp");
  ir::Computation* f = BuildMlp(&m, bias_first);
  auto g = frontend::ValueAndGrad(&m, *f, {1, 2, 3, 4}, "vg");
  EXPECT_TRUE(g.ok()) << g.status().message();
  if (!g.ok()) return "";
  m.set_entry(*g);
  auto text = ir::PrintModule(m);
  EXPECT_TRUE(text.ok());
  return text.ok() ? *text : "";
}

TEST(AutodiffDeterminism, SameGraphGivesByteIdenticalText) {
  std::string first = CanonicalValueAndGrad(false);
  ASSERT_FALSE(first.empty());
  EXPECT_EQ(first, CanonicalValueAndGrad(false));
  // A different creation order of the same forward graph: the clone follows the canonical
  // post-order, so the result does not change.
  EXPECT_EQ(first, CanonicalValueAndGrad(true));
  // The text is valid IR: it parses, verifies and prints back byte for byte.
  auto parsed = ir::ParseAndVerify(first);
  ASSERT_TRUE(parsed.ok()) << parsed.status().message();
  auto again = ir::PrintModule(**parsed);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(*again, first);
}

// f = sum(body(x)) with unit cotangents, so ties show as exact fractions.
ir::Literal UnitGradient(ir::Literal x,
                         const std::function<Instruction*(Emitter&, Instruction*)>& body) {
  ir::Module m("ties");
  ir::Builder b(&m, "f");
  Emitter e(&m, &b);
  Instruction* p = b.Parameter(0, x.shape());
  Instruction* y = body(e, p);
  std::vector<int64_t> all;
  for (int64_t d = 0; d < y->shape.rank(); ++d) all.push_back(d);
  auto f = b.Build(all.empty() ? y : e.ReduceSum(y, all));
  EXPECT_TRUE(f.ok());
  auto g = frontend::ValueAndGrad(&m, **f, {0}, "vg");
  EXPECT_TRUE(g.ok()) << g.status().message();
  if (!g.ok()) return ir::Literal();
  return Eval(m, *g, {x}).tuple_elements()[1];
}

// relu = maximum(x, 0) splits the cotangent at x == 0 (JAX's lax.max rule); JAX's
// jax.nn.relu (a custom_jvp) would give 0 there.
TEST(AutodiffTies, ReluAtZeroGetsHalf) {
  ir::Literal g = UnitGradient(F32({4}, {-1, 0, 2, -0.0f}), [](Emitter& e, Instruction* x) {
    return e.b().Binary(Opcode::kMaximum, x, e.Full(x->shape, 0));
  });
  EXPECT_TRUE(g.BitwiseEqual(F32({4}, {0, 0.5f, 1, 0.5f}))) << g.ToString();
}

TEST(AutodiffTies, ReduceMaxSplitsEvenly) {
  ir::Literal g =
      UnitGradient(F32({2, 4}, {1, 3, 3, 2, 5, 5, 5, -1}),
                   [](Emitter& e, Instruction* x) { return e.Reduce(x, Opcode::kMaximum, {1}); });
  EXPECT_TRUE(g.BitwiseEqual(F32({2, 4}, {0, 0.5f, 0.5f, 0, 1.0f / 3, 1.0f / 3, 1.0f / 3, 0})))
      << g.ToString();
}

// Max pooling ties split per window; with overlapping windows an element collects a share
// from every window whose maximum it attains.
TEST(AutodiffTies, ReduceWindowMaxSplitsPerWindow) {
  auto pool = [](int64_t size, int64_t stride) {
    return [size, stride](Emitter& e, Instruction* x) {
      std::vector<ir::WindowDim> w = {{size, stride, 0, 0, 1, 1}};
      return e.b().ReduceWindow(x, e.b().ConstantF32(-INFINITY), w,
                                e.Combiner(Opcode::kMaximum, ir::ElementType::kF32));
    };
  };
  ir::Literal disjoint = UnitGradient(F32({6}, {4, 4, 1, 2, 7, 7}), pool(2, 2));
  EXPECT_TRUE(disjoint.BitwiseEqual(F32({6}, {0.5f, 0.5f, 0, 1, 0.5f, 0.5f})))
      << disjoint.ToString();
  // windows [3,3] [3,1] [1,1]: shares 1/2+1/2 at 0/1, then 1 to index 1, 1/2+1/2 to 2/3.
  ir::Literal overlapping = UnitGradient(F32({4}, {3, 3, 1, 1}), pool(2, 1));
  EXPECT_TRUE(overlapping.BitwiseEqual(F32({4}, {0.5f, 1.5f, 0.5f, 0.5f})))
      << overlapping.ToString();
}

// The threefry custom call, integer ops and the comparison carry no gradient: the gradient of
// sum(W * x * uniform(key)) is W * uniform(key), checked by finite differences in x only.
TEST(AutodiffNoGradient, RandomBitsAndIntegerPaths) {
  GradCase c = MakeCase({Uniform({2, 3}, -1, 1, 95),
                         ir::Literal::FromVector<uint32_t>(ir::ElementType::kU32, {2}, {0u, 42u})},
                        [](Emitter& e, const P& p) {
                          Instruction* u = e.Uniform01(p[1], {2, 3}, true);
                          return e.b().Multiply(p[0], u);
                        });
  EXPECT_EQ(CheckGradients(c, {.wrt = {0}}), 0);
}

TEST(AutodiffNoGradient, UnusedParameterGetsZeros) {
  GradCase c = MakeCase({Uniform({3}, -1, 1, 96), Uniform({2, 2}, -1, 1, 97)},
                        [](Emitter& e, const P& p) { return e.b().Unary(Opcode::kExp, p[0]); });
  GradResult r = ValueAndGradOf(c, {1, 0});
  ASSERT_EQ(r.grads.size(), 2u);
  EXPECT_TRUE(r.grads[0].BitwiseEqual(F32({2, 2}, {0, 0, 0, 0})));
}

// f(x) = x: the root is the parameter itself (the clone must not duplicate the parameter).
TEST(AutodiffNoGradient, RootIsTheParameter) {
  ir::Module m("identity");
  ir::Builder b(&m, "f");
  auto f = b.Build(b.Parameter(0, ir::Shape::Scalar(ir::ElementType::kF32), "x"));
  ASSERT_TRUE(f.ok());
  auto g = frontend::ValueAndGrad(&m, **f, {0}, "vg");
  ASSERT_TRUE(g.ok()) << g.status().message();
  ir::Literal out = Eval(m, *g, {F32({}, {2.5f})});
  EXPECT_TRUE(out.tuple_elements()[0].BitwiseEqual(F32({}, {2.5f})));
  EXPECT_TRUE(out.tuple_elements()[1].BitwiseEqual(F32({}, {1.0f})));
}

TEST(AutodiffErrors, UnsupportedOpOnTheGradientPathIsUnimplemented) {
  auto scatter_body = [](bool through_param) {
    return [through_param](Emitter& e, const P& p) {
      ir::ScatterDims s;
      s.update_window_dims = {1};
      s.inserted_window_dims = {0};
      s.scatter_dims_to_operand_dims = {0};
      s.index_vector_dim = 1;
      Instruction* updates = through_param ? p[0] : e.Full(p[0]->shape, 1);
      Instruction* idx = e.b().Constant(S32({2, 1}, {0, 2}));
      Instruction* sc = e.b().Scatter(e.Full(ir::Shape(ir::ElementType::kF32, {3, 2}), 0), idx,
                                      updates, s, e.Combiner(Opcode::kAdd, ir::ElementType::kF32));
      return e.b().Multiply(e.b().Slice(sc, {{0, 2, 1}, {0, 2, 1}}), p[0]);
    };
  };
  GradCase bad = MakeCase({Uniform({2, 2}, -1, 1, 98)}, scatter_body(true));
  auto r = frontend::ValueAndGrad(bad.module.get(), *bad.f, {0}, "vg");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kUnimplemented);
  EXPECT_NE(r.status().message().find("scatter"), std::string::npos) << r.status().message();
  // The same scatter on a path that carries no gradient is fine.
  GradCase ok = MakeCase({Uniform({2, 2}, -1, 1, 99)}, scatter_body(false));
  EXPECT_EQ(CheckGradients(ok), 0);
}

TEST(AutodiffErrors, BadSignature) {
  GradCase c =
      MakeCase({Uniform({3}, -1, 1, 100), S32({3}, {1, 2, 3})}, [](Emitter& e, const P& p) {
        return e.b().Multiply(p[0], e.b().Convert(p[1], ir::ElementType::kF32));
      });
  EXPECT_EQ(frontend::ValueAndGrad(c.module.get(), *c.f, {2}, "a").status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(frontend::ValueAndGrad(c.module.get(), *c.f, {1}, "b").status().code(),
            StatusCode::kInvalidArgument);
  ir::Builder b(c.module.get(), "vector_root");
  Instruction* x = b.Parameter(0, ir::Shape(ir::ElementType::kF32, {3}));
  auto f = b.Build(b.Unary(Opcode::kExp, x));
  ASSERT_TRUE(f.ok());
  auto r = frontend::ValueAndGrad(c.module.get(), **f, {0}, "c");
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("f32[]"), std::string::npos) << r.status().message();
}

// The finite-difference check rejects a gradient that is 5% off.
TEST(GradCheckSelfTest, RejectsAWrongGradient) {
  GradCase c = MakeCase({Uniform({2, 3}, -1, 1, 3)},
                        [](Emitter& e, const P& p) { return e.b().Unary(Opcode::kExp, p[0]); });
  CheckOptions off_by_5_percent;
  off_by_5_percent.scale = 1.05;
  off_by_5_percent.quiet = true;
  EXPECT_EQ(CheckGradients(c, off_by_5_percent), 6);
}

// Every op of ops.def is classified, and every op with a rule has its finite-difference test
// (VjpRule.<Name> in vjp_*_test.cc).
TEST(VjpTable, EveryOpIsClassified) {
  const std::set<std::string> checked = {"abs",
                                         "negate",
                                         "exponential",
                                         "exponential-minus-one",
                                         "log",
                                         "log-plus-one",
                                         "tanh",
                                         "logistic",
                                         "sqrt",
                                         "rsqrt",
                                         "erf",
                                         "sine",
                                         "cosine",
                                         "round-to-bf16",
                                         "round-to-f16",
                                         "add",
                                         "subtract",
                                         "multiply",
                                         "divide",
                                         "remainder",
                                         "maximum",
                                         "minimum",
                                         "power",
                                         "select",
                                         "clamp",
                                         "convert",
                                         "broadcast",
                                         "reshape",
                                         "transpose",
                                         "slice",
                                         "concatenate",
                                         "pad",
                                         "reverse",
                                         "dynamic-slice",
                                         "dynamic-update-slice",
                                         "gather",
                                         "tuple",
                                         "get-tuple-element",
                                         "reduce",
                                         "reduce-window",
                                         "dot",
                                         "convolution"};
  int rules = 0;
  for (Opcode op : ir::AllOpcodes()) {
    frontend::autodiff::VjpEntry entry = frontend::autodiff::LookupVjp(op);
    std::string name(ir::OpcodeName(op));
    switch (entry.kind) {
      case frontend::autodiff::VjpKind::kRule:
        ++rules;
        EXPECT_NE(entry.fn, nullptr) << name;
        EXPECT_EQ(checked.count(name), 1u) << name << " has a VJP rule but no gradient-check test";
        break;
      case frontend::autodiff::VjpKind::kNoGradient:
      case frontend::autodiff::VjpKind::kUnsupported:
        ASSERT_NE(entry.why, nullptr) << name << " is not classified in vjp_table.cc";
        EXPECT_NE(std::string(entry.why), "") << name;
        EXPECT_EQ(checked.count(name), 0u) << name;
        break;
    }
  }
  EXPECT_EQ(rules, static_cast<int>(checked.size()));
}

}  // namespace
}  // namespace detrain::testing
