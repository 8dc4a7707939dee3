// Compile determinism (issue 7): lowering + pass pipeline + plan of every example, repeated
// with 1, 2 and 8 compiler threads and concurrently from several threads, gives identical
// stage-3 (optimized HLO) and stage-4 (plan) digests. The default build runs kDefaultRuns
// compiles per thread count; the `slow`-labelled binary runs the full 20 (ctest -L slow).
#include <gtest/gtest.h>

#include "attest/sha256.h"
#include "base/thread_pool.h"
#include "compiler/ir/printer.h"
#include "compiler/passes/pipeline.h"
#include "compiler/plan/builder.h"
#include "pass_test_util.h"

namespace detrain::plan {
namespace {

#ifdef DETRAIN_FULL_DETERMINISM_COUNT
constexpr int kRuns = 20;
#define DETRAIN_SUITE CompileDeterminismFull  // distinct ctest names for the slow binary
#else
constexpr int kRuns = 2;
#define DETRAIN_SUITE CompileDeterminism
#endif

struct Digests {
  std::string stage3, stage4;
  bool operator==(const Digests&) const = default;
};

// One full compile from the program text; empty digests with `error` set on failure.
Digests Compile(const std::string& example, int threads, std::string* error) {
  std::string skip;
  auto module = testing::LowerExample(example, &skip, error);
  if (module == nullptr) return {};
  auto opt = passes::RunPipeline(*module, passes::kDefaultPipeline, {threads});
  if (!opt.ok()) {
    *error = opt.status().message();
    return {};
  }
  auto plan = BuildPlan(*opt->module);
  if (!plan.ok()) {
    *error = plan.status().message();
    return {};
  }
  return {*ir::ModuleFingerprint(*opt->module), attest::Sha256Hex(plan->bytes)};
}

class DETRAIN_SUITE : public ::testing::TestWithParam<const char*> {};

TEST_P(DETRAIN_SUITE, RepeatedCompilesGiveIdenticalStageDigests) {
  std::string skip, error;
  if (testing::LowerExample(GetParam(), &skip, &error) == nullptr) {
    if (!skip.empty()) GTEST_SKIP() << skip;
    FAIL() << error;
  }
  Digests first = Compile(GetParam(), 1, &error);
  ASSERT_FALSE(first.stage3.empty()) << error;
  int compiles = 1;
  for (int threads : {1, 2, 8}) {
    for (int run = 0; run < kRuns; ++run, ++compiles) {
      Digests d = Compile(GetParam(), threads, &error);
      ASSERT_EQ(d, first) << "threads " << threads << " run " << run << ": " << error;
    }
  }
  RecordProperty("compiles", compiles);
}

TEST_P(DETRAIN_SUITE, ConcurrentCompilesGiveIdenticalStageDigests) {
  std::string skip, error;
  if (testing::LowerExample(GetParam(), &skip, &error) == nullptr) {
    if (!skip.empty()) GTEST_SKIP() << skip;
    FAIL() << error;
  }
  Digests first = Compile(GetParam(), 1, &error);
  ASSERT_FALSE(first.stage3.empty()) << error;
  constexpr int kConcurrent = 4;
  std::vector<Digests> results(kConcurrent);
  std::vector<std::string> errors(kConcurrent);
  ThreadPool pool(kConcurrent);
  pool.ParallelFor(kConcurrent, [&](size_t i) { results[i] = Compile(GetParam(), 2, &errors[i]); });
  for (int i = 0; i < kConcurrent; ++i)
    EXPECT_EQ(results[static_cast<size_t>(i)], first) << errors[static_cast<size_t>(i)];
}

INSTANTIATE_TEST_SUITE_P(Examples, DETRAIN_SUITE,
                         ::testing::Values("breast_cancer", "digits", "charlm"));

}  // namespace
}  // namespace detrain::plan
