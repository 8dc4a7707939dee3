// The compile driver on the example programs: golden stage-1/stage-2/eval texts and digests
// (tools/update_goldens.sh regenerates them; a change is a behaviour change), the stage table
// (names, numbers, file names, the transform chain), the typed configuration as stage 1's header,
// the train step's entry signature, determinism of repeated compiles, the HLO import path,
// data-shape errors, and a smoke test that the compiled train step, run on the reference
// interpreter with real data, trains.
#include "driver/compile.h"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "attest/prng/initializers.h"
#include "attest/prng/jax_random.h"
#include "attest/sha256.h"
#include "compiler/interp/interpreter.h"
#include "compiler/ir/verifier.h"
#include "compiler/plan/builder.h"
#include "frontend/data.h"
#include "test_util.h"

namespace detrain::driver {
namespace {

using test::HaveData;
using test::kRoot;
using test::Slurp;

class ExampleStagesTest : public ::testing::TestWithParam<std::string> {};

TEST_P(ExampleStagesTest, MatchGoldenTextAndDigests) {
  const std::string ex = GetParam();
  if (!HaveData(ex)) GTEST_SKIP() << "data for " << ex << " is missing; tools/setup.sh installs it";
  Result<CompileResult> c = Compile(kRoot + "/examples/" + ex + "/train.dt", {});
  ASSERT_TRUE(c.ok()) << c.status().message();
  const std::string golden = kRoot + "/tests/frontend/testdata/golden/" + ex + "/";
  std::string hashes;
  for (const StageRecord& s : c->stages.records()) {
    hashes += "stage " + s.name + " sha256:" + attest::Sha256Hex(s.bytes) + "\n";
    if (s.name == "program" || s.name == "opt-hlo" || s.name == "plan" || s.name == "eval-plan") {
      continue;  // digests only
    }
    EXPECT_EQ(s.bytes, Slurp(golden + s.name + ".txt"))
        << ex << " stage " << s.name << " differs from its golden text (tools/update_goldens.sh)";
  }
  EXPECT_EQ(hashes, Slurp(golden + "hashes.txt"));
}

TEST_P(ExampleStagesTest, RepeatedCompilesAreIdentical) {
  const std::string ex = GetParam();
  if (!HaveData(ex)) GTEST_SKIP() << "data missing";
  CompileOptions front_only;
  front_only.backend = false;
  Result<CompileResult> first = Compile(kRoot + "/examples/" + ex + "/train.dt", front_only);
  ASSERT_TRUE(first.ok());
  for (int i = 0; i < 3; ++i) {
    // Another spelling of the same path must not change anything either.
    Result<CompileResult> again = Compile(kRoot + "/examples/./" + ex + "/train.dt", front_only);
    ASSERT_TRUE(again.ok());
    const auto& a = again->stages.records();
    const auto& b = first->stages.records();
    ASSERT_EQ(a.size(), b.size());
    for (size_t s = 0; s < b.size(); ++s) EXPECT_EQ(a[s].bytes, b[s].bytes);
  }
}

TEST_P(ExampleStagesTest, StagesParseBackAsIr) {
  const std::string ex = GetParam();
  if (!HaveData(ex)) GTEST_SKIP() << "data missing";
  CompileOptions front_only;
  front_only.backend = false;
  Result<CompileResult> c = Compile(kRoot + "/examples/" + ex + "/train.dt", front_only);
  ASSERT_TRUE(c.ok());
  for (const char* name : {kStageSource, kStageHlo, kStageEval}) {  // (init is JSON: golden test)
    const StageRecord* s = c->stages.Find(name);
    if (s == nullptr) continue;
    Result<std::unique_ptr<ir::Module>> m = ir::ParseAndVerify(s->bytes);
    EXPECT_TRUE(m.ok()) << ex << " " << name << ": " << m.status().message();
  }
}

INSTANTIATE_TEST_SUITE_P(Examples, ExampleStagesTest,
                         ::testing::Values("breast_cancer", "digits", "charlm"));

TEST(StagesTest, DataShapeMismatchIsAnError) {
  std::string dir = ::testing::TempDir() + "/stages_shape";
  std::filesystem::create_directories(dir);
  std::ofstream(dir + "/d.csv") << "1,2,3,0\n4,5,6,1\n7,8,9,0\n1,1,1,1\n";
  std::ofstream(dir + "/p.dt")
      << "data d = csv(\"d.csv\")\n"
         "param w: f32[2, 2] = zeros\n"
         "def loss(x: f32[B, 2], y: s32[B]) -> f32[] { return mean(softmax_cross_entropy(x @ w, "
         "y)) }\n"
         "optimizer = sgd(learning_rate = 0.1)\ntrain(steps = 1, batch = 2, shards = 2)\n";
  Result<CompileResult> c = Compile(dir + "/p.dt", {});
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().message().substr(0, c.status().message().find('\n')),
            dir +
                "/p.dt:3:13: error: the data source gives features of shape [B, 3] (f32), but loss "
                "takes f32[B, 2]");
  std::ofstream(dir + "/p.dt")
      << "data d = csv(\"missing.csv\")\n"
         "param w: f32[3, 2] = zeros\n"
         "def loss(x: f32[B, 3], y: s32[B]) -> f32[] { return mean(softmax_cross_entropy(x @ w, "
         "y)) }\n"
         "optimizer = sgd(learning_rate = 0.1)\ntrain(steps = 1, batch = 2, shards = 2)\n";
  c = Compile(dir + "/p.dt", {});
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().message(), dir + "/missing.csv: no such file");
}

// Runs the breast-cancer train step on the interpreter: parameters from the JAX-compatible
// initializers, standardized features, 25 full steps. The loss must fall well below its start.
TEST(StagesTest, CompiledTrainStepTrainsOnRealData) {
  if (!HaveData("breast_cancer")) GTEST_SKIP() << "data missing";
  CompileOptions front_only;
  front_only.backend = false;
  Result<CompileResult> c = Compile(kRoot + "/examples/breast_cancer/train.dt", front_only);
  ASSERT_TRUE(c.ok()) << c.status().message();
  Result<std::unique_ptr<ir::Module>> step = ir::ParseAndVerify(c->stages.Find(kStageHlo)->bytes);
  ASSERT_TRUE(step.ok());
  using frontend::Dataset;
  using frontend::LabelType;
  Result<Dataset> ds = frontend::LoadProgramData(c->config->data, kRoot + "/examples/breast_cancer",
                                                 LabelType::kS32);
  ASSERT_TRUE(ds.ok());
  const int64_t f = ds->features, batch = 64;
  // Standardize every column (statistics over all rows: this is a smoke test, not the runtime).
  for (int64_t j = 0; j < f; ++j) {
    double mean = 0, var = 0;
    for (int64_t i = 0; i < ds->rows; ++i) mean += ds->x[static_cast<size_t>(i * f + j)];
    mean /= static_cast<double>(ds->rows);
    for (int64_t i = 0; i < ds->rows; ++i)
      var += std::pow(ds->x[static_cast<size_t>(i * f + j)] - mean, 2);
    double sd = std::sqrt(var / static_cast<double>(ds->rows));
    for (int64_t i = 0; i < ds->rows; ++i) {
      float& v = ds->x[static_cast<size_t>(i * f + j)];
      v = static_cast<float>((v - mean) / sd);
    }
  }
  std::vector<ir::Literal> args;
  prng::Key init = prng::FoldIn(prng::KeyFromSeed(42), 0);
  int64_t i = 0;
  for (const frontend::ParamConfig& p : c->config->params) {
    const ir::Instruction* param = (*step)->entry()->Parameters()[static_cast<size_t>(i)];
    ir::Literal lit(param->shape);
    std::vector<float> values(static_cast<size_t>(lit.element_count()));
    Status st = prng::InitializeNamed(std::string(frontend::InitializerName(p.init.kind)),
                                      prng::FoldIn(init, static_cast<uint32_t>(i)),
                                      param->shape.dims(), values, {});
    ASSERT_TRUE(st.ok()) << st.message();
    std::memcpy(lit.mutable_bytes().data(), values.data(), values.size() * 4);
    args.push_back(std::move(lit));
    ++i;
  }
  const size_t n_params = args.size();
  for (size_t k = 0; k < 2 * n_params; ++k)
    args.emplace_back(args[k / 2].shape());  // adam mu, nu per parameter
  std::vector<float> losses;
  for (int t = 0; t < 25; ++t) {
    std::vector<ir::Literal> call(args.begin(), args.begin() + static_cast<long>(3 * n_params));
    call.push_back(ir::Literal::Scalar<int32_t>(ir::ElementType::kS32, t));
    call.push_back(ir::Literal::Scalar<float>(ir::ElementType::kF32, 0.01f));
    ir::Literal x(ir::Shape(ir::ElementType::kF32, {batch, f}));
    ir::Literal y(ir::Shape(ir::ElementType::kS32, {batch}));
    for (int64_t r = 0; r < batch; ++r) {
      int64_t row = (t * batch + r) % ds->rows;
      for (int64_t j = 0; j < f; ++j)
        x.Set<float>(r * f + j, ds->x[static_cast<size_t>(row * f + j)]);
      y.Set<int32_t>(r, ds->y_s32[static_cast<size_t>(row)]);
    }
    call.push_back(std::move(x));
    call.push_back(std::move(y));
    prng::Key k = prng::FoldIn(prng::FoldIn(prng::KeyFromSeed(42), 2), static_cast<uint32_t>(t));
    call.push_back(ir::Literal::FromVector<uint32_t>(ir::ElementType::kU32, {2}, {k.hi, k.lo}));
    Result<ir::Literal> r = interp::Evaluate(**step, call);
    ASSERT_TRUE(r.ok()) << r.status().message();
    const auto& outs = r->tuple_elements();
    for (size_t k2 = 0; k2 < 3 * n_params; ++k2) args[k2] = outs[k2];
    EXPECT_EQ(outs[3 * n_params].Get<int32_t>(0), t + 1);
    losses.push_back(outs.back().Get<float>(0));
  }
  std::cout << "[ train ] breast_cancer loss " << losses.front() << " -> " << losses.back()
            << " over 25 steps\n";
  EXPECT_GT(losses.front(), 0.4f);
  EXPECT_LT(losses.back(), 0.25f) << "first loss " << losses.front();
}

}  // namespace
}  // namespace detrain::driver
