// The pipeline as data: spec parsing, the record chain, dumps, verification and determinism.
#include "compiler/passes/pipeline.h"

#include <gtest/gtest.h>

#include "attest/sha256.h"
#include "compiler/ir/printer.h"
#include "compiler/ir/verifier.h"
#include "compiler/testing/random_module.h"

namespace detrain::passes {
namespace {

TEST(Pipeline, UnknownPassIsAnErrorNamingItAndTheKnownPasses) {
  auto module = testing::PassTargetedModule(1, false);
  auto result = RunPipeline(*module, "cse,frobnicate,fuse", {});
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(result.status().message().find("unknown pass 'frobnicate'"), std::string::npos);
  for (const std::string& pass : KnownPasses()) {
    EXPECT_NE(result.status().message().find(pass), std::string::npos) << pass;
  }
  EXPECT_FALSE(RunPipeline(*module, "", {}).ok());
  EXPECT_FALSE(RunPipeline(*module, "cse,", {}).ok());
}

TEST(Pipeline, AtMost64Passes) {
  auto module = testing::PassTargetedModule(1, false);
  std::string spec = "cse";
  for (int i = 1; i < 64; ++i) spec += ",cse";
  EXPECT_TRUE(RunPipeline(*module, spec, {}).ok());
  auto result = RunPipeline(*module, spec + ",cse", {});
  ASSERT_FALSE(result.ok());
  EXPECT_NE(result.status().message().find("more than 64 passes"), std::string::npos);
}

TEST(Pipeline, FormerPassesAreRejectedSayingWhy) {
  // dce, schedule and assign-buffers never changed the canonical text; they left the pipeline.
  auto module = testing::PassTargetedModule(1, false);
  for (const char* pass : {"dce", "schedule", "assign-buffers"}) {
    auto result = RunPipeline(*module, std::string("cse,") + pass, {});
    ASSERT_FALSE(result.ok()) << pass;
    EXPECT_EQ(result.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(result.status().message().find(std::string("pass '") + pass + "' no longer exists"),
              std::string::npos)
        << result.status().message();
  }
}

TEST(Pipeline, PassVersionsAreRunOnlyAtTheVersionThisDetrainHas) {
  // Every pass is at version 1: "cse" and nothing else names it (docs/passes.md, pass versions).
  auto module = testing::PassTargetedModule(1, false);
  EXPECT_TRUE(RunPipeline(*module, "cse", {}).ok());
  EXPECT_EQ(PipelineGap(kDefaultPipeline), "");
  auto two = RunPipeline(*module, "cse@2", {});
  ASSERT_FALSE(two.ok());
  EXPECT_EQ(two.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(two.status().message().find("pass 'cse@2' in pipeline 'cse@2' is not a version this "
                                        "detrain runs: it has cse"),
            std::string::npos)
      << two.status().message();
  // Malformed or hostile suffixes: "@1" (version 1 is written without it), empty, leading zero,
  // not digits, past any version, a second '@'.
  for (const char* spec : {"cse@1", "cse@", "cse@02", "cse@x", "cse@-2", "cse@99999999999999999999",
                           "cse@2@2", "@2", "cse@ 2"}) {
    SCOPED_TRACE(spec);
    EXPECT_FALSE(RunPipeline(*module, spec, {}).ok());
    EXPECT_NE(PipelineGap(spec), "");
  }
  // A verifier standing for a later detrain treats the elements it is given as gone.
  EXPECT_NE(PipelineGap("cse,fuse", {"fuse"})
                .find("pass 'fuse' is one this detrain no longer "
                      "runs"),
            std::string::npos);
  EXPECT_EQ(PipelineGap("cse,fuse", {"fuse@2"}), "");
}

TEST(Pipeline, EveryDefaultPassIsKnown) {
  auto module = testing::PassTargetedModule(2, false);
  auto result = RunPipeline(*module, kDefaultPipeline, {});
  ASSERT_TRUE(result.ok()) << result.status().message();
}

TEST(Pipeline, RecordsChainDigestsAndDumpsHoldEachPassOutput) {
  auto module = testing::PassTargetedModule(3, false);
  auto result = RunPipeline(*module, "cse,simplify,fold-constants,fuse", {});
  ASSERT_TRUE(result.ok()) << result.status().message();
  ASSERT_EQ(result->records.size(), 4u);
  ASSERT_EQ(result->dumps.size(), 4u);
  EXPECT_EQ(result->records[0].input_sha256, *ir::ModuleFingerprint(*module));
  const char* names[] = {"01.cse.hlo", "02.simplify.hlo", "03.fold-constants.hlo", "04.fuse.hlo"};
  for (size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(result->dumps[i].first, names[i]);
    EXPECT_EQ(result->records[i].output_sha256, attest::Sha256Hex(result->dumps[i].second));
    EXPECT_EQ(result->records[i].options_sha256, attest::Sha256Hex("{}"));
    if (i > 0) {
      EXPECT_EQ(result->records[i].input_sha256, result->records[i - 1].output_sha256);
    }
  }
  EXPECT_EQ(result->records[3].output_sha256, *ir::ModuleFingerprint(*result->module));
}

TEST(Pipeline, ResultHoldsOnlyLiveCodeInCanonicalOrder) {
  // What dce and schedule promised, now a postcondition of RunPipeline: every computation of
  // the result is reachable from ENTRY and lists exactly its live instructions, in the
  // canonical (execution) order — even after a pass that leaves replaced instructions behind.
  int had_dead_code = 0;
  for (uint64_t seed = 1; seed <= 50; ++seed) {
    auto module = testing::PassTargetedModule(seed, seed % 2 == 0);
    auto computations = module->ComputationPostOrder();
    ASSERT_TRUE(computations.ok());
    size_t live = 0;
    for (const ir::Computation* c : *computations) live += c->PostOrder()->size();
    size_t listed = 0;
    for (const auto& c : module->computations()) listed += c->instructions().size();
    had_dead_code += listed > live;
    for (const char* spec : {"simplify", kDefaultPipeline}) {
      auto result = RunPipeline(*module, spec, {});
      ASSERT_TRUE(result.ok());
      auto reached = result->module->ComputationPostOrder();
      ASSERT_TRUE(reached.ok());
      EXPECT_EQ(reached->size(), result->module->computations().size()) << "seed " << seed;
      for (const ir::Computation* c : *reached) {
        auto order = c->PostOrder();
        ASSERT_TRUE(order.ok());
        ASSERT_EQ(order->size(), c->instructions().size()) << "seed " << seed << " " << c->name();
        for (size_t i = 0; i < order->size(); ++i) {
          EXPECT_EQ((*order)[i], c->instructions()[i].get()) << "seed " << seed << " " << c->name();
        }
      }
    }
  }
  EXPECT_GT(had_dead_code, 25);  // the generator leaves dead code behind on purpose
}

TEST(Pipeline, RejectsAnInvalidInputModule) {
  auto module = testing::PassTargetedModule(5, false);
  module->entry()->root()->shape =
      ir::Shape(ir::ElementType::kF32, {1234});  // wrong declared shape
  auto result = RunPipeline(*module, "cse", {});
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
    }
  }
}

}  // namespace
}  // namespace detrain::passes
