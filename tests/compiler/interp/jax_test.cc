// Real HLO exported from JAX (tools/export_jax_hlo.py): parse, verify, interpret, compare with
// JAX's outputs. Exact computations (data_movement: movement, indexing, integer ops, compare,
// select, floor/round, sqrt and a division) must match bit for bit. Computations with sums or
// transcendental functions follow detrain's canonical orders and correctly rounded math, which
// XLA's CPU backend does not, so they match within
//   |detrain - jax| <= 2e-6 * |jax| + 2e-7 * max|jax|   (per tensor)
// (docs/ir.md "Tests against JAX" records the measured differences.)
#include <cmath>

#include "../ir/test_util.h"
#include "base/npy.h"
#include "compiler/ir/literal_npy.h"
#include "compiler/xla_import/import.h"
#include "interp_test_util.h"

namespace detrain::testing {
namespace {

namespace fs = std::filesystem;

Literal LoadNpy(const fs::path& path) {
  auto array = ReadNpyFile(path.string());
  EXPECT_TRUE(array.ok()) << array.status().message();
  auto lit = ir::LiteralFromNpy(*array);
  EXPECT_TRUE(lit.ok());
  return *lit;
}

// Imports (xla_import) and interprets jax/<name>/module.hlo on in/p<i>.npy; returns the outputs
// with JAX's expectations.
std::vector<std::pair<Literal, Literal>> RunCase(const std::string& name) {
  fs::path dir = JaxTestdata() / name;
  auto module = xla_import::ParseAndVerifyHloText(ReadTextFile(dir / "module.hlo"));
  EXPECT_TRUE(module.ok()) << module.status().message();
  if (!module.ok()) return {};
  std::vector<Literal> args;
  for (size_t i = 0; i < (*module)->entry()->Parameters().size(); ++i) {
    args.push_back(LoadNpy(dir / "in" / ("p" + std::to_string(i) + ".npy")));
  }
  auto result = interp::Evaluate(**module, args);
  EXPECT_TRUE(result.ok()) << result.status().message();
  std::vector<std::pair<Literal, Literal>> pairs;
  if (!result->shape().is_tuple()) {
    pairs.push_back({*result, LoadNpy(dir / "out.npy")});
    return pairs;
  }
  for (size_t i = 0; i < result->tuple_elements().size(); ++i) {
    pairs.push_back(
        {result->tuple_elements()[i], LoadNpy(dir / ("out" + std::to_string(i) + ".npy"))});
  }
  return pairs;
}

// Largest |got - want| relative to the tolerance bound (<= 1 passes).
double ToleranceRatio(const Literal& got, const Literal& want) {
  double max_abs = 0;
  for (int64_t i = 0; i < want.element_count(); ++i)
    max_abs = std::max(max_abs, std::fabs(double(want.Get<float>(i))));
  double worst = 0;
  for (int64_t i = 0; i < want.element_count(); ++i) {
    double w = want.Get<float>(i), g = got.Get<float>(i);
    double bound = 2e-6 * std::fabs(w) + 2e-7 * max_abs;
    worst = std::max(worst, std::fabs(g - w) / bound);
  }
  return worst;
}

void ExpectWithinTolerance(const std::string& name, size_t expected_outputs) {
  auto pairs = RunCase(name);
  ASSERT_EQ(pairs.size(), expected_outputs);
  for (size_t i = 0; i < pairs.size(); ++i) {
    ASSERT_EQ(pairs[i].first.shape(), pairs[i].second.shape());
    double ratio = ToleranceRatio(pairs[i].first, pairs[i].second);
    EXPECT_LE(ratio, 1.0) << name << " output " << i;
    ::testing::Test::RecordProperty(name + "_out" + std::to_string(i) + "_tolerance_used",
                                    std::to_string(ratio));
  }
}

TEST(Jax, DataMovementMatchesBitForBit) {
  auto pairs = RunCase("data_movement");
  ASSERT_EQ(pairs.size(), 10u);
  for (size_t i = 0; i < pairs.size(); ++i) {
    EXPECT_TRUE(pairs[i].first.BitwiseEqual(pairs[i].second))
        << "output " << i << "\n got " << pairs[i].first.ToString() << "\nwant "
        << pairs[i].second.ToString();
  }
}

TEST(Jax, MlpForwardWithinTolerance) { ExpectWithinTolerance("mlp_forward", 1); }
TEST(Jax, SoftmaxCrossEntropyWithinTolerance) { ExpectWithinTolerance("softmax_cross_entropy", 1); }
TEST(Jax, MlpGradWithinTolerance) { ExpectWithinTolerance("mlp_grad", 4); }
// jnp.take_along_axis in a cross-entropy with integer labels: a gather with batching dimensions,
// and its gradient, a scatter with batching dimensions (tools/export_jax_corpus.py, lowered).
TEST(Jax, TakeAlongAxisWithinTolerance) { ExpectWithinTolerance("take_along_axis", 1); }
TEST(Jax, TakeAlongAxisGradWithinTolerance) { ExpectWithinTolerance("take_along_axis_grad", 1); }
// while loops: lax.scan (an RNN over 5 steps) and jax.random.bernoulli inside jit (threefry's
// rolled 5-round loop), run by the interpreter's own loop (tools/export_jax_corpus.py, lowered).
TEST(Jax, ScanRnnWithinTolerance) { ExpectWithinTolerance("rnn_scan_forward", 2); }
TEST(Jax, DropoutWithRandomBitsInsideJitWithinTolerance) {
  ExpectWithinTolerance("dropout_random", 1);
}

void ExpectBitForBit(const std::string& name) {
  auto pairs = RunCase(name);
  ASSERT_EQ(pairs.size(), 1u);
  EXPECT_TRUE(pairs[0].first.BitwiseEqual(pairs[0].second))
      << name << "\n got " << pairs[0].first.ToString() << "\nwant " << pairs[0].second.ToString();
}

// A variadic reduce (jnp.argmax, in XLA's optimized module) and select-and-scatter (max-pooling's
// gradient): both expanded by the parser into exact ops, so JAX's values bit for bit
// (tools/export_jax_corpus.py; argmax_accuracy compiled, maxpool_grad lowered).
TEST(Jax, ArgmaxAccuracyBitForBit) { ExpectBitForBit("argmax_accuracy"); }
TEST(Jax, MaxPoolGradientBitForBit) { ExpectBitForBit("maxpool_grad"); }

// lax.while_loop with a convergence test (Newton's square root until |y*y - x| is small): XLA's
// optimized module with its data-dependent while, run by the interpreter's loop: only exact
// ops, so JAX's values and iteration count bit for bit. (tests/runtime/while_test.cc runs the
// same module on the CPU plan's while kernel.)
TEST(Jax, WhileLoopWithAConvergenceTestBitForBit) {
  auto pairs = RunCase("while_loop_newton");
  ASSERT_EQ(pairs.size(), 2u);
  for (size_t i = 0; i < pairs.size(); ++i) {
    EXPECT_TRUE(pairs[i].first.BitwiseEqual(pairs[i].second)) << "output " << i;
  }
}

// jnp.sort along both axes, a stable jnp.argsort and lax.top_k on rows with NaN and -NaN, -0
// and +0, infinities and many ties (tools/export_jax_hlo.py sort_special): XLA's total order
// and stability, through detrain's sorting network, bit for bit.
TEST(Jax, SortArgsortTopKBitForBit) {
  auto pairs = RunCase("sort_special");
  ASSERT_EQ(pairs.size(), 5u);
  for (size_t i = 0; i < pairs.size(); ++i) {
    EXPECT_TRUE(pairs[i].first.BitwiseEqual(pairs[i].second)) << "output " << i;
  }
}

}  // namespace
}  // namespace detrain::testing
