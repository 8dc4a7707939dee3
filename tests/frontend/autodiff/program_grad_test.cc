// Gradients of losses written in the .dt language and lowered by the real frontend (parser,
// checker, LowerFunction): every IR pattern the layer library emits goes through autodiff
// and is checked by central finite differences (grad_check.h; at most ~24 strided elements
// per parameter to stay fast). Inputs and parameters are fixed pseudo-random values; the
// programs use smooth activations except where a relu or max_pool is the point, and those
// fixed inputs keep every kink and tie more than h away (the check would report it otherwise).
#include <gtest/gtest.h>

#include <string>

#include "frontend/check.h"
#include "frontend/lower.h"
#include "frontend/parser.h"
#include "grad_check.h"

namespace detrain::testing {
namespace {

// These losses are means of a few O(1) terms, so f's f32 rounding is ~1e-6 and the central
// difference's rounding part ~1e-6 / 2h = 5e-5; their gradients are small (max ~0.03-0.5), so
// the default atol (2e-3, sized for the larger sums of the rule tests) would be too loose.
// Measured worst |ad - fd|: 2.1e-5.
constexpr double kProgramAtol = 2e-4;

constexpr const char* kSettings = R"(
optimizer = sgd(learning_rate = 0.1)
train(steps = 10, batch = 8, shards = 8, seed = 1)
)";

// Lowers `loss` of `program` with the given dimension sizes and builds matching arguments:
// f32 values in [-0.5, 0.5] (features in [-1, 1]), s32 ids/labels i % 2, key (3, 5).
GradCase LowerLoss(const std::string& program, std::map<std::string, int64_t> dims, uint32_t seed) {
  GradCase c;
  // The AST only needs to live while lowering: the IR does not refer to it.
  frontend::SourceFile source("test.dt", program + kSettings);
  auto parsed = frontend::Parse(source);
  EXPECT_TRUE(parsed.ok()) << parsed.status().message();
  if (!parsed.ok()) return c;
  auto checked = frontend::Check(source, *parsed);
  EXPECT_TRUE(checked.ok()) << checked.status().message();
  if (!checked.ok()) return c;
  c.module = std::make_unique<ir::Module>("program");
  frontend::LowerOptions options;
  options.dims = std::move(dims);
  auto f = frontend::LowerFunction(*checked, *checked->loss, options, c.module.get(), "loss");
  EXPECT_TRUE(f.ok()) << f.status().message();
  if (!f.ok()) return c;
  c.f = *f;
  c.module->set_entry(c.f);
  size_t n_params = checked->params.size();
  for (const ir::Instruction* p : c.f->Parameters()) {
    const ir::Shape& s = p->shape;
    ++seed;
    if (s.type() == ir::ElementType::kF32) {
      bool feature = static_cast<size_t>(p->parameter_number) >= n_params;
      c.args.push_back(Uniform(s.dims(), feature ? -1 : -0.5, feature ? 1 : 0.5, seed));
    } else if (s.type() == ir::ElementType::kS32) {
      ir::Literal ids(s);
      for (int64_t i = 0; i < ids.element_count(); ++i)
        ids.Set<int32_t>(i, static_cast<int32_t>(i % 2));
      c.args.push_back(ids);
    } else {
      c.args.push_back(ir::Literal::FromVector<uint32_t>(ir::ElementType::kU32, {2}, {3u, 5u}));
    }
  }
  return c;
}

// The trained parameters are the computation's first parameters.
std::vector<int64_t> FirstN(int64_t n) {
  std::vector<int64_t> v;
  for (int64_t i = 0; i < n; ++i) v.push_back(i);
  return v;
}

TEST(ProgramGradients, MlpWithDropoutAndCrossEntropy) {
  GradCase c = LowerLoss(R"(data d = csv("x.csv", label = -1)
param w1: f32[6, 8] = glorot_uniform
param b1: f32[8] = zeros
param w2: f32[8, 2] = glorot_uniform
param b2: f32[2] = zeros
def loss(x: f32[B, 6], y: s32[B], key) -> f32[] {
  h = dropout(relu(x @ w1 + b1), rate = 0.25, key = key)
  return mean(softmax_cross_entropy(h @ w2 + b2, y))
}
)",
                         {{"B", 4}}, 200);
  ASSERT_NE(c.f, nullptr);
  EXPECT_EQ(CheckGradients(c, {.wrt = FirstN(4), .max_checked = 24, .atol = kProgramAtol}), 0);
}

TEST(ProgramGradients, CnnWithPooling) {
  GradCase c = LowerLoss(R"(data d = csv("x.csv", label = -1)
param k1: f32[3, 3, 1, 2] = glorot_uniform
param k2: f32[2, 2, 2, 2] = glorot_uniform
param w: f32[8, 2] = glorot_uniform
def loss(x: f32[B, 6, 6, 1], y: s32[B]) -> f32[] {
  h = gelu(conv2d(x, k1, stride = 1, padding = "SAME"))
  h = max_pool(h, window = 2)
  h = tanh(conv2d(h, k2, stride = 2, padding = "SAME"))
  h = avg_pool(h, window = 2, stride = 1, padding = "SAME")
  return mean(softmax_cross_entropy(flatten(h) @ w, y))
}
)",
                         {{"B", 2}}, 300);
  ASSERT_NE(c.f, nullptr);
  EXPECT_EQ(CheckGradients(c, {.wrt = FirstN(3), .max_checked = 24, .atol = kProgramAtol}), 0);
}

TEST(ProgramGradients, TinyTransformer) {
  GradCase c = LowerLoss(R"(data d = csv("x.csv", label = -1)
param emb: f32[5, 4] = normal(stddev = 0.5)
param g: f32[4] = ones
param beta: f32[4] = zeros
param wq: f32[4, 4] = glorot_uniform
param wk: f32[4, 4] = glorot_uniform
param wv: f32[4, 4] = glorot_uniform
param wo: f32[4, 4] = glorot_uniform
param out: f32[4, 2] = glorot_uniform
def loss(ids: s32[B, 3], y: s32[B]) -> f32[] {
  h = embedding(emb, ids)
  h = h + attention(layer_norm(h, g, beta), wq, wk, wv, wo, heads = 2, causal = true)
  return mean(softmax_cross_entropy(mean(h, axis = 1) @ out, y))
}
)",
                         {{"B", 2}}, 400);
  ASSERT_NE(c.f, nullptr);
  EXPECT_EQ(CheckGradients(c, {.wrt = FirstN(8), .max_checked = 24, .atol = kProgramAtol}), 0);
}

TEST(ProgramGradients, RegressionLosses) {
  GradCase c = LowerLoss(R"(data d = csv("x.csv", label = -1)
param w: f32[3, 2] = glorot_uniform
param b: f32[2] = zeros
def loss(x: f32[B, 3], y: f32[B]) -> f32[] {
  z = x @ w + b
  p = sigmoid(z)
  bce = mean(sigmoid_binary_cross_entropy(sum(z, axis = 1), y))
  return bce + mse(sum(p * p, axis = 1), y) + mean(sqrt(exp(z) + 1) - log(abs(z) + 1))
}
)",
                         {{"B", 4}}, 500);
  ASSERT_NE(c.f, nullptr);
  EXPECT_EQ(CheckGradients(c, {.wrt = FirstN(2), .atol = kProgramAtol}), 0);
}

}  // namespace
}  // namespace detrain::testing
