// The conformance harness (STYLE.md point 6): the CPU executor must equal the reference
// interpreter bit for bit — on random modules of the one random-module generator (plain and
// pass-targeted, and replicated modules with all-reduce), for every ISA path this CPU has and
// threads 1, 2 and 4.
#include <gtest/gtest.h>

#include "compiler/interp/interpreter.h"
#include "compiler/passes/pipeline.h"
#include "compiler/plan/builder.h"
#include "compiler/testing/random_module.h"
#include "runtime/executor.h"
#include "runtime_test_util.h"

namespace detrain::runtime {
namespace {

// Compiles `module` through the default pipeline and the plan; compares the executor with the
// interpreter on `replicas` replicas of random arguments, for every ISA and threads 1, 2, 4.
// Returns whether the module was compared (the interpreter evaluated it).
bool CheckModule(const ir::Module& module, uint64_t seed, int replicas) {
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::vector<std::vector<ir::Literal>> args;
  for (int r = 0; r < replicas; ++r)
    args.push_back(testing::RandomArguments(module, seed * 31 + r));
  auto expected = interp::EvaluateReplicated(module, args);
  if (!expected.ok()) {
    // The interpreter refuses some random modules (e.g. an index out of range it checks); the
    // executor must refuse too or agree — neither may crash. Nothing to compare.
    return false;
  }
  auto plan = OptimizedPlan(module);
  EXPECT_TRUE(plan.ok()) << plan.status().message();
  if (!plan.ok()) return false;
  bool ok = true;
  for (Isa isa : SupportedIsas()) {
    for (int threads : {1, 2, 4}) {
      SCOPED_TRACE(std::string(IsaName(isa)) + " threads " + std::to_string(threads));
      ExecutorOptions options;
      options.isa = isa;
      options.threads = threads;
      auto executor = Executor::Create(*plan, options);
      EXPECT_TRUE(executor.ok()) << executor.status().message();
      if (!executor.ok()) return false;
      auto got = (*executor)->Run(args);
      EXPECT_TRUE(got.ok()) << got.status().message();
      if (!got.ok()) return false;
      EXPECT_EQ(got->size(), static_cast<size_t>(replicas));
      for (int r = 0; r < replicas && ok; ++r) {
        ExpectSameBits(FlattenLiteral((*expected)[static_cast<size_t>(r)]),
                       (*got)[static_cast<size_t>(r)]);
        ok = !::testing::Test::HasFailure();
      }
    }
  }
  return true;
}

// Runs `count` modules of `make`; at least `min_compared` of them must evaluate on the interpreter.
template <typename Make>
void CheckMany(int count, int min_compared, int replicas, Make make) {
  int compared = 0;
  for (uint64_t seed = 1; seed <= static_cast<uint64_t>(count); ++seed) {
    compared += CheckModule(*make(seed), seed, replicas);
    if (::testing::Test::HasFailure()) return;
  }
  EXPECT_GE(compared, min_compared);
  std::printf("%d of %d modules compared\n", compared, count);
}

// Every op family and element type.
TEST(Conformance, RandomModules) {
  CheckMany(300, 280, 1, [](uint64_t seed) { return testing::RandomModule(seed); });
}

// The shapes the passes rewrite (so the optimized module differs from the input).
TEST(Conformance, PassTargetedModules) {
  CheckMany(150, 140, 1, [](uint64_t seed) { return testing::PassTargetedModule(seed, false); });
}

// fori loops: the interpreter runs the loop, the plan its unrolled body calls (unroll-while).
TEST(Conformance, ModulesWithLoops) {
  CheckMany(100, 90, 1, [](uint64_t seed) {
    return testing::RandomModule(3000 + seed, testing::RandomModuleOptions::WithLoops());
  });
}

// all-reduce on 3 replicas: the pairwise tree over each replica group.
TEST(Conformance, ReplicatedModules) {
  CheckMany(100, 90, 3, [](uint64_t seed) {
    return testing::RandomModule(seed, testing::RandomModuleOptions::Replicated());
  });
}

}  // namespace
}  // namespace detrain::runtime
