// The CPU kernels' fast paths on the inputs that decide their bits, executor == interpreter bit
// for bit on every ISA path and threads 1 and 2: f32 arithmetic and maximum/minimum on every pair
// of special values (NaN payloads, signed zeros, infinities, subnormals) in full and partial
// vector blocks; scalar operands read as uniform columns; transposes, slices and broadcasts of
// the shape classes the movement kernels specialize; reduce-window and its gradient; GEMM tiles,
// convolutions, long reductions, scatters (kernel_cases.h, shared with the CUDA emulation test).
// The random modules of conformance_test.cc rarely meet these cases (a maximum of +0 and -0).
#include <gtest/gtest.h>

#include <cctype>
#include <string>
#include <vector>

#include "compiler/codegen/cpu/fused_loop.h"
#include "compiler/interp/interpreter.h"
#include "compiler/ir/verifier.h"
#include "compiler/passes/pipeline.h"
#include "compiler/plan/builder.h"
#include "compiler/plan/reader.h"
#include "kernel_cases.h"
#include "runtime/executor.h"
#include "runtime_test_util.h"

namespace detrain::runtime {
namespace {

// Compiles `hlo` through the default pipeline and the plan and compares the executor with the
// interpreter on `args`, for every ISA and threads 1 and 2.
// `dot_trees`, when >= 0, is how many add trees of dots the one-device executor must have
// rewritten into GemmTree kernels (ExecutorStats::folded_dot_trees).
// `scalar_broadcasts`, when >= 0: how many broadcasts of a scalar it must read as the scalar.
// `fused`, when >= 0: how many elementwise kernels it must run block by block in groups.
// `updates_in_place`, when >= 0: how many of the plan's buffers take over a donor's.
// `views`, when >= 0: how many buffers the executor places inside another (plan_views.h).
void Check(const std::string& hlo, const std::vector<ir::Literal>& args, int64_t dot_trees = -1,
           int64_t scalar_broadcasts = -1, int64_t fused = -1, int64_t updates_in_place = -1,
           int64_t views = -1) {
  auto module = ir::ParseAndVerify(hlo);
  ASSERT_TRUE(module.ok()) << module.status().message();
  auto expected = interp::Evaluate(**module, args);
  ASSERT_TRUE(expected.ok()) << expected.status().message();
  auto optimized = passes::RunPipeline(**module, passes::kDefaultPipeline, {});
  ASSERT_TRUE(optimized.ok()) << optimized.status().message();
  auto plan = plan::BuildPlan(*optimized->module);
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  if (updates_in_place >= 0) {
    plan::v2::Plan p;
    ASSERT_TRUE(p.ParseFromString(plan->bytes));
    int64_t donees = 0;
    for (const plan::v2::Buffer& b : p.buffers()) donees += b.has_donor();
    EXPECT_EQ(donees, updates_in_place);
  }
  for (Isa isa : SupportedIsas()) {
    for (int threads : {1, 2}) {
      SCOPED_TRACE(std::string(IsaName(isa)) + " threads " + std::to_string(threads));
      ExecutorOptions options;
      options.isa = isa;
      options.threads = threads;
      auto executor = Executor::Create(plan->bytes, options);
      ASSERT_TRUE(executor.ok()) << executor.status().message();
      if (dot_trees >= 0) {
        EXPECT_EQ((*executor)->stats().folded_dot_trees, dot_trees);
      }
      if (scalar_broadcasts >= 0) {
        EXPECT_EQ((*executor)->stats().folded_scalar_broadcasts, scalar_broadcasts);
      }
      if (fused >= 0) EXPECT_EQ((*executor)->stats().fused_elementwise, fused);
      if (views >= 0) EXPECT_EQ((*executor)->stats().views, views);
      ir::Literal none;
      EXPECT_EQ((*executor)->ReadResult(0, &none).code(), StatusCode::kFailedPrecondition)
          << "a result read before any run";
      for (int run = 0; run < 2; ++run) {  // a second run reuses every prepared buffer
        auto got = (*executor)->Run({args});
        ASSERT_TRUE(got.ok()) << got.status().message();
        ExpectSameBits(FlattenLiteral(*expected), (*got)[0]);
      }
      // RunInto: borrowed arguments, and results overwritten in place from the second run on.
      std::vector<const ir::Literal*> borrowed;
      for (const ir::Literal& a : args) borrowed.push_back(&a);
      std::vector<ir::Literal> into;
      const char* first = nullptr;
      for (int run = 0; run < 2; ++run) {
        Status st = (*executor)->RunInto(borrowed, &into);
        ASSERT_TRUE(st.ok()) << st.message();
        ExpectSameBits(FlattenLiteral(*expected), into);
        if (run == 0) first = into[0].bytes().data();
      }
      EXPECT_EQ(first, into[0].bytes().data()) << "RunInto reallocated a result";
      // RunKeep: the results stay on the device until read, each as often as wanted; reading one
      // over the argument literal of the same shape (the trainer's new state over the old) is
      // reading into memory the run no longer uses.
      std::vector<ir::Literal> own = args;
      std::vector<const ir::Literal*> lent;
      for (const ir::Literal& a : own) lent.push_back(&a);
      ASSERT_TRUE((*executor)->RunKeep(lent).ok());
      const std::vector<ir::Literal> want = FlattenLiteral(*expected);
      for (size_t o = 0; o < want.size(); ++o) {
        ir::Literal* target = &into[o];
        for (ir::Literal& a : own) {
          if (a.shape() == want[o].shape()) target = &a;
        }
        ASSERT_TRUE((*executor)->ReadResult(static_cast<int>(o), target).ok());
        ExpectSameBits({want[o]}, {*target});
      }
      EXPECT_FALSE((*executor)->ReadResult(static_cast<int>(want.size()), &none).ok());
    }
  }
  // The same kernels with their elementwise programs as generated, compiled loops
  // (runtime/cpu/fused_loops.h): every program the generator writes runs as one, on every ISA.
  auto validated = plan::ReadPlan(plan->bytes);
  ASSERT_TRUE(validated.ok()) << validated.status().message();
  // Plain elementwise programs, and the `pre` programs of fused reductions (the program after a
  // reduction reads REDUCED, which stays the evaluator's).
  int64_t writable = 0;
  for (const plan::CheckedKernel& k : validated->kernels()) {
    if (!k.spec->has_elementwise()) continue;
    writable += k.spec->elementwise().has_reduce() ? codegen::cpu::CanGenerate(k.pre)
                                                   : codegen::cpu::CanGenerate(k.program);
  }
  for (Isa isa : SupportedIsas()) {
    SCOPED_TRACE(std::string(IsaName(isa)) + " generated loops");
    ExecutorOptions options;
    options.isa = isa;
    options.threads = 2;
    options.generated_loops = true;
    auto executor = Executor::Create(plan->bytes, options);
    ASSERT_TRUE(executor.ok()) << executor.status().message();
    EXPECT_LE((*executor)->stats().generated_loops, writable);
    // Only a tree's epilogue (folded into the GemmTree) leaves a writable program unasked.
    if (dot_trees <= 0) EXPECT_EQ((*executor)->stats().generated_loops, writable);
    for (int run = 0; run < 2; ++run) {
      auto got = (*executor)->Run({args});
      ASSERT_TRUE(got.ok()) << got.status().message();
      ExpectSameBits(FlattenLiteral(*expected), (*got)[0]);
    }
  }
}

class RuntimeKernels : public ::testing::TestWithParam<KernelCase> {};

TEST_P(RuntimeKernels, EqualsInterpreter) {
  const KernelCase& k = GetParam();
  Check(k.hlo, k.args, k.dot_trees, k.scalar_broadcasts, k.fused_elementwise, k.updates_in_place,
        k.views);
}

INSTANTIATE_TEST_SUITE_P(Cases, RuntimeKernels, ::testing::ValuesIn(KernelCases()),
                         [](const ::testing::TestParamInfo<KernelCase>& info) {
                           std::string name;
                           for (char ch : info.param.name) name += std::isalnum(ch) ? ch : '_';
                           return name;
                         });

}  // namespace
}  // namespace detrain::runtime
