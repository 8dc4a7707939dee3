// Property tests (STYLE.md point 6): for randomly generated modules (seeded), every pass alone
// and the whole default pipeline give bit-identical interpreter results on random arguments
// (random bits: NaNs with any payload, signaling ones included, infinities, subnormals, -0).
#include <gtest/gtest.h>

#include "compiler/ir/printer.h"
#include "compiler/ir/verifier.h"
#include "compiler/passes/pipeline.h"
#include "compiler/testing/random_module.h"
#include "pass_test_util.h"

namespace detrain::passes {
namespace {

// Runs `spec` on `module` and compares results on `replicas` replicas; returns the number of
// comparisons made.
int CheckPreserved(const ir::Module& module, const std::string& spec, uint64_t seed, int replicas) {
  std::string error;
  auto before = testing::EvaluateRandom(module, seed, replicas, &error);
  EXPECT_FALSE(before.empty()) << error;
  // Every pass verified here (PipelineOptions::verify_each_pass); the default verifies the last
  // pass's output only, and must give the same records and texts.
  PipelineOptions each;
  each.verify_each_pass = true;
  auto result = RunPipeline(module, spec, each);
  EXPECT_TRUE(result.ok()) << spec << ": " << result.status().message() << "\n"
                           << *ir::PrintModule(module);
  if (!result.ok() || before.empty()) return 0;
  auto fast = RunPipeline(module, spec, {});
  EXPECT_TRUE(fast.ok()) << spec << ": " << fast.status().message();
  if (fast.ok()) {
    EXPECT_EQ(fast->dumps, result->dumps) << spec;
    EXPECT_EQ(fast->records.size(), result->records.size()) << spec;
    for (size_t i = 0; i < fast->records.size() && i < result->records.size(); ++i)
      EXPECT_EQ(fast->records[i].output_sha256, result->records[i].output_sha256) << spec;
  }
  auto after = testing::EvaluateRandom(*result->module, seed, replicas, &error);
  EXPECT_EQ(after.size(), before.size()) << error;
  for (size_t r = 0; r < before.size() && r < after.size(); ++r) {
    EXPECT_TRUE(before[r].BitwiseEqual(after[r]))
        << spec << " changed a result bit on replica " << r << "\nbefore:\n"
        << *ir::PrintModule(module) << "after:\n"
        << *ir::PrintModule(*result->module);
  }
  return 1;
}

std::vector<std::string> Specs() {
  std::vector<std::string> specs = KnownPasses();
  specs.push_back(kDefaultPipeline);
  return specs;
}

// Every pass and the default pipeline on the modules of `options` for seeds 1..count, each
// evaluated on `replicas` replicas.
void CheckEverySpec(const testing::RandomModuleOptions& options, uint64_t count, int replicas) {
  int checks = 0;
  for (uint64_t seed = 1; seed <= count; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    auto module = testing::RandomModule(seed, options);
    ASSERT_NE(module, nullptr);
    ASSERT_TRUE(ir::VerifyModule(*module).ok()) << ir::VerifyModule(*module).message();
    for (const std::string& spec : Specs()) checks += CheckPreserved(*module, spec, seed, replicas);
    if (::testing::Test::HasFailure()) return;
  }
  EXPECT_EQ(checks, static_cast<int>(count) * static_cast<int>(Specs().size()));
}

TEST(PassProperty, EveryPassPreservesResultsOnRandomModulesOfEveryFamily) {
  // Every op family and element type, all-reduce included, evaluated on 2 replicas.
  CheckEverySpec(testing::RandomModuleOptions::Replicated(), 150, 2);
}

TEST(PassProperty, EveryPassPreservesResultsOnPassTargetedModules) {
  CheckEverySpec(testing::RandomModuleOptions::PassTargeted(/*all_reduce=*/false), 300, 1);
}

TEST(PassProperty, EveryPassPreservesResultsOnShardedRowModules) {
  // The S-shard structure merge-rows undoes, every pass and the default pipeline.
  CheckEverySpec(testing::RandomModuleOptions::ShardedRows(), 150, 1);
}

TEST(PassProperty, EveryPassPreservesResultsWithAllReduceOnThreeReplicas) {
  int checks = 0;
  for (uint64_t seed = 1; seed <= 150; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    auto module = testing::PassTargetedModule(1000 + seed, /*all_reduce=*/true);
    ASSERT_NE(module, nullptr);
    for (const std::string& spec : Specs()) checks += CheckPreserved(*module, spec, seed, 3);
    if (HasFailure()) return;
  }
  EXPECT_EQ(checks, 150 * static_cast<int>(Specs().size()));
}

TEST(PassProperty, PassesChangeTheTargetedModules) {
  // Guards against a property test that passes because nothing happens: on the targeted
  // modules, the default pipeline changes most of them.
  int changed = 0;
  for (uint64_t seed = 1; seed <= 100; ++seed) {
    auto module = testing::PassTargetedModule(seed, false);
    auto result = RunPipeline(*module, kDefaultPipeline, {});
    ASSERT_TRUE(result.ok());
    changed += result->records.front().input_sha256 != result->records.back().output_sha256;
  }
  EXPECT_GT(changed, 80);
}

TEST(PassProperty, EveryPassPreservesResultsOnModulesWithLoops) {
  // fori loops (op_family::kLoop) among the pass-targeted ops: unroll-while and every other
  // pass, on the interpreter's own loop before and the unrolled calls after.
  int checks = 0;
  for (uint64_t seed = 1; seed <= 100; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    auto module = testing::RandomModule(3000 + seed, testing::RandomModuleOptions::WithLoops());
    ASSERT_NE(module, nullptr);
    ASSERT_TRUE(ir::VerifyModule(*module).ok()) << ir::VerifyModule(*module).message();
    for (const std::string& spec : Specs()) checks += CheckPreserved(*module, spec, seed, 1);
    if (HasFailure()) return;
  }
  EXPECT_EQ(checks, 100 * static_cast<int>(Specs().size()));
}

TEST(PassProperty, EveryPassFires) {
  // Every pass must actually rewrite a good share of the targeted modules, or its property test
  // would prove little (and a pass that never changes the text has no place in the pipeline).
  for (const std::string& pass : KnownPasses()) {
    int changed = 0;
    for (uint64_t seed = 1; seed <= 100; ++seed) {
      // unroll-while needs loops, which only WithLoops modules have; merge-rows the row blocks
      // of ShardedRows modules.
      auto module =
          pass == "unroll-while"
              ? testing::RandomModule(2000 + seed, testing::RandomModuleOptions::WithLoops())
          : pass == "merge-rows"
              ? testing::RandomModule(2000 + seed, testing::RandomModuleOptions::ShardedRows())
              : testing::PassTargetedModule(2000 + seed, /*all_reduce=*/true);
      auto result = RunPipeline(*module, pass, {});
      ASSERT_TRUE(result.ok()) << pass << ": " << result.status().message();
      changed += result->records[0].input_sha256 != result->records[0].output_sha256;
    }
    EXPECT_GE(changed, 10) << pass;
  }
}

TEST(PassProperty, DefaultPipelineIsIdempotentOnItsOutput) {
  for (uint64_t seed = 1; seed <= 50; ++seed) {
    auto module = testing::PassTargetedModule(seed, false);
    auto once = RunPipeline(*module, kDefaultPipeline, {});
    ASSERT_TRUE(once.ok());
    auto twice = RunPipeline(*once->module, kDefaultPipeline, {});
    ASSERT_TRUE(twice.ok());
    EXPECT_EQ(*ir::PrintModule(*once->module), *ir::PrintModule(*twice->module)) << "seed " << seed;
  }
}

}  // namespace
}  // namespace detrain::passes
