// The pipeline as data: spec parsing, the record chain, dumps, verification and determinism.
#include <gtest/gtest.h>

#include "attest/sha256.h"
#include "compiler/ir/printer.h"
#include "compiler/ir/verifier.h"
#include "compiler/passes/pipeline.h"
#include "compiler/testing/random_module.h"

namespace detrain::passes {
namespace {

TEST(Pipeline, UnknownPassIsAnErrorNamingItAndTheKnownPasses) {
  auto module = testing::PassTargetedModule(1, false);
  auto result = RunPipeline(*module, "dce,frobnicate,cse", {});
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(result.status().message().find("unknown pass 'frobnicate'"), std::string::npos);
  for (const std::string& pass : KnownPasses()) {
    EXPECT_NE(result.status().message().find(pass), std::string::npos) << pass;
  }
  EXPECT_FALSE(RunPipeline(*module, "", {}).ok());
  EXPECT_FALSE(RunPipeline(*module, "dce,", {}).ok());
}

TEST(Pipeline, EveryDefaultPassIsKnown) {
  auto module = testing::PassTargetedModule(2, false);
  auto result = RunPipeline(*module, kDefaultPipeline, {});
  ASSERT_TRUE(result.ok()) << result.status().message();
}

TEST(Pipeline, RecordsChainDigestsAndDumpsHoldEachPassOutput) {
  auto module = testing::PassTargetedModule(3, false);
  auto result = RunPipeline(*module, "cse,simplify,schedule,assign-buffers", {});
  ASSERT_TRUE(result.ok()) << result.status().message();
  ASSERT_EQ(result->records.size(), 4u);
  ASSERT_EQ(result->dumps.size(), 4u);
  EXPECT_EQ(result->records[0].input_sha256, *ir::ModuleFingerprint(*module));
  const char* names[] = {"01.cse.hlo", "02.simplify.hlo", "03.schedule.hlo", "04.assign-buffers.hlo"};
  for (size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(result->dumps[i].first, names[i]);
    EXPECT_EQ(result->records[i].output_sha256, attest::Sha256Hex(result->dumps[i].second));
    EXPECT_EQ(result->records[i].options_sha256, attest::Sha256Hex("{}"));
    if (i > 0) {
      EXPECT_EQ(result->records[i].input_sha256, result->records[i - 1].output_sha256);
    }
  }
  EXPECT_EQ(result->records[3].output_sha256, *ir::ModuleFingerprint(*result->module));
  EXPECT_GT(result->peak_bytes, 0);
  EXPECT_LE(result->peak_bytes, result->total_bytes);
}

TEST(Pipeline, WithoutAssignBuffersReportsNoBytes) {
  auto module = testing::PassTargetedModule(4, false);
  auto result = RunPipeline(*module, "dce", {});
  ASSERT_TRUE(result.ok());
  EXPECT_EQ(result->peak_bytes, 0);
  EXPECT_EQ(result->total_bytes, 0);
}

TEST(Pipeline, RejectsAnInvalidInputModule) {
  auto module = testing::PassTargetedModule(5, false);
  module->entry()->root()->shape = ir::Shape(ir::ElementType::kF32, {1234});  // wrong declared shape
  auto result = RunPipeline(*module, "dce", {});
  ASSERT_FALSE(result.ok());
  EXPECT_NE(result.status().message().find("pipeline input"), std::string::npos);
}

TEST(Pipeline, DoesNotModifyItsInput) {
  auto module = testing::PassTargetedModule(6, false);
  std::string before = *ir::PrintModule(*module);
  ASSERT_TRUE(RunPipeline(*module, kDefaultPipeline, {}).ok());
  EXPECT_EQ(*ir::PrintModule(*module), before);
}

TEST(Pipeline, ResultsDoNotDependOnThreads) {
  for (uint64_t seed = 1; seed <= 20; ++seed) {
    auto module = testing::PassTargetedModule(seed, true);
    auto one = RunPipeline(*module, kDefaultPipeline, {1});
    ASSERT_TRUE(one.ok());
    for (int threads : {2, 8}) {
      auto many = RunPipeline(*module, kDefaultPipeline, {threads});
      ASSERT_TRUE(many.ok());
      ASSERT_EQ(many->records.size(), one->records.size());
      for (size_t i = 0; i < one->records.size(); ++i) {
        EXPECT_EQ(many->records[i].output_sha256, one->records[i].output_sha256);
      }
      EXPECT_EQ(many->dumps, one->dumps);
      EXPECT_EQ(many->peak_bytes, one->peak_bytes);
    }
  }
}

}  // namespace
}  // namespace detrain::passes
