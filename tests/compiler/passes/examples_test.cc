// The pipeline on the train steps of the examples: it verifies, preserves the interpreter's
// results bit for bit (on realistic arguments and on random bits), and shrinks the program.
// Examples that do not exist yet are skipped with a message. The transformer (charlm) runs in
// the `slow`-labelled binary (ctest -L slow).
#include <gtest/gtest.h>

#include <random>

#include "compiler/interp/interpreter.h"
#include "compiler/ir/printer.h"
#include "compiler/passes/pipeline.h"
#include "pass_test_util.h"

namespace detrain::passes {
namespace {

// f32 uniform in [-0.5, 0.5], s32 element i = i % 2 (labels / counts), u32 random (keys).
std::vector<ir::Literal> RealisticArguments(const ir::Module& module, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> uniform(-0.5f, 0.5f);
  std::vector<ir::Literal> args;
  for (const ir::Instruction* p : module.entry()->Parameters()) {
    ir::Literal lit(p->shape);
    for (int64_t i = 0; i < lit.element_count(); ++i) {
      switch (p->shape.type()) {
        case ir::ElementType::kF32:
          lit.Set<float>(i, uniform(rng));
          break;
        case ir::ElementType::kS32:
          lit.Set<int32_t>(i, static_cast<int32_t>(i % 2));
          break;
        case ir::ElementType::kU32:
          lit.Set<uint32_t>(i, static_cast<uint32_t>(rng()));
          break;
        default:
          break;
      }
    }
    args.push_back(std::move(lit));
  }
  return args;
}

class ExamplePipeline : public ::testing::TestWithParam<const char*> {};

TEST_P(ExamplePipeline, OptimizedTrainStepComputesTheSameBits) {
  std::string skip, error;
  auto module = testing::LowerExample(GetParam(), &skip, &error);
  if (!skip.empty()) GTEST_SKIP() << skip;
  ASSERT_NE(module, nullptr) << error;
  auto result = RunPipeline(*module, kDefaultPipeline, {});
  ASSERT_TRUE(result.ok()) << result.status().message();
  size_t before = module->entry()->instructions().size();
  size_t after = result->module->entry()->instructions().size();
  RecordProperty("instructions_before", static_cast<int>(before));
  RecordProperty("instructions_after", static_cast<int>(after));
  int fusions = 0;
  auto order = result->module->entry()->PostOrder();
  ASSERT_TRUE(order.ok());
  for (const ir::Instruction* instr : *order) fusions += instr->opcode == ir::Opcode::kFusion;
  RecordProperty("fusions", fusions);
  EXPECT_GT(fusions, 0);
  auto args = RealisticArguments(*module, 1);
  auto a = interp::Evaluate(*module, args);
  ASSERT_TRUE(a.ok()) << a.status().message();
  auto b = interp::Evaluate(*result->module, args);
  ASSERT_TRUE(b.ok()) << b.status().message();
  EXPECT_TRUE(a->BitwiseEqual(*b));
  auto random_before = testing::EvaluateRandom(*module, 2, 1, &error);
  auto random_after = testing::EvaluateRandom(*result->module, 2, 1, &error);
  ASSERT_EQ(random_before.size(), 1u);
  ASSERT_EQ(random_after.size(), 1u);
  EXPECT_TRUE(random_before[0].BitwiseEqual(random_after[0]));
}

#ifdef DETRAIN_SLOW_EXAMPLES
// Interpreting the transformer's train step takes tens of seconds: label `slow` only.
INSTANTIATE_TEST_SUITE_P(SlowExamples, ExamplePipeline, ::testing::Values("charlm"));
#else
INSTANTIATE_TEST_SUITE_P(Examples, ExamplePipeline, ::testing::Values("breast_cancer", "digits"));
#endif

}  // namespace
}  // namespace detrain::passes
