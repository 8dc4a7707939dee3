// Loops whose trip count depends on the data (issue 19): the default pipeline leaves them `while`,
// the plan holds them as while kernels (plan.proto WhileSpec) and the CPU executor runs them
// with the interpreter's bits on every thread count and ISA path; a runaway loop fails at the
// interpreter's bound, with its message; a plan that lies about a loop is refused.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "base/npy.h"
#include "compiler/interp/interpreter.h"
#include "compiler/ir/literal_npy.h"
#include "compiler/ir/parser.h"
#include "compiler/ir/verifier.h"
#include "compiler/passes/pipeline.h"
#include "compiler/plan/builder.h"
#include "compiler/plan/reader.h"
#include "compiler/xla_import/import.h"
#include "loop_cases.h"
#include "runtime/executor.h"
#include "runtime_test_util.h"
#include "schemas/plan.pb.h"

namespace detrain::runtime {
namespace {

namespace pb = plan::v2;

int CountLoops(const pb::Plan& plan) {
  int n = 0;
  for (const pb::Kernel& k : plan.kernels()) {
    if (!k.has_while_loop()) continue;
    n += 1 + CountLoops(k.while_loop().condition()) + CountLoops(k.while_loop().body());
  }
  return n;
}

// `text` may be XLA's (the JAX module below): it is imported.
std::string PlanOf(const std::string& text) {
  auto module = xla_import::ParseAndVerifyHloText(text);
  EXPECT_TRUE(module.ok()) << module.status().message();
  if (!module.ok()) return "";
  auto plan = OptimizedPlan(**module);
  EXPECT_TRUE(plan.ok()) << plan.status().message();
  return plan.ok() ? *plan : "";
}

TEST(WhileKernel, DataDependentLoopsGiveTheInterpretersBits) {
  for (const LoopCase& c : LoopCases()) {
    SCOPED_TRACE(c.name);
    auto module = ir::ParseAndVerify(c.text);
    ASSERT_TRUE(module.ok()) << module.status().message();
    auto want = interp::Evaluate(**module, c.args);
    ASSERT_TRUE(want.ok()) << want.status().message();
    const std::string plan = PlanOf(c.text);
    ASSERT_FALSE(plan.empty());
    pb::Plan p;
    ASSERT_TRUE(p.ParseFromString(plan));
    EXPECT_GE(CountLoops(p), 1) << "the loop was unrolled";
    for (int threads : {1, 3}) {
      for (Isa isa : SupportedIsas()) {
        SCOPED_TRACE(std::to_string(threads) + " threads, " + std::string(IsaName(isa)));
        ExecutorOptions o;
        o.threads = threads;
        o.isa = isa;
        auto e = Executor::Create(plan, o);
        ASSERT_TRUE(e.ok()) << e.status().message();
        auto got = (*e)->Run({c.args});
        ASSERT_TRUE(got.ok()) << got.status().message();
        ExpectSameBits(FlattenLiteral(*want), (*got)[0]);
        // A second run of the same executor starts from the same state.
        auto again = (*e)->Run({c.args});
        ASSERT_TRUE(again.ok()) << again.status().message();
        ExpectSameBits(FlattenLiteral(*want), (*again)[0]);
      }
    }
  }
}

// JAX's own data-dependent loop (lax.while_loop, Newton's square root until converged; XLA's
// optimized module, tests/compiler/interp/testdata/jax/while_loop_newton): the CPU plan's while
// kernel gives JAX's values and iteration count bit for bit.
TEST(WhileKernel, JaxWhileLoopGivesJaxsBits) {
  const std::string dir =
      std::string(DETRAIN_SOURCE_DIR) + "/tests/compiler/interp/testdata/jax/while_loop_newton/";
  auto load = [](const std::string& path) {
    auto array = ReadNpyFile(path);
    EXPECT_TRUE(array.ok()) << array.status().message();
    auto literal = ir::LiteralFromNpy(*array);
    EXPECT_TRUE(literal.ok()) << literal.status().message();
    return *literal;
  };
  std::ifstream in(dir + "module.hlo");
  std::stringstream text;
  text << in.rdbuf();
  const std::string plan = PlanOf(text.str());
  ASSERT_FALSE(plan.empty());
  for (Isa isa : SupportedIsas()) {
    ExecutorOptions o;
    o.isa = isa;
    o.threads = 2;
    auto e = Executor::Create(plan, o);
    ASSERT_TRUE(e.ok()) << e.status().message();
    auto got = (*e)->Run({{load(dir + "in/p0.npy")}});
    ASSERT_TRUE(got.ok()) << got.status().message();
    ExpectSameBits({load(dir + "out0.npy"), load(dir + "out1.npy")}, (*got)[0]);
  }
}

// The plan of a module with nested loops, byte for byte (a change to how loops are planned is
// reviewed like any golden change).
TEST(WhileKernel, NestedPlanIsGolden) {
  EXPECT_EQ(PlanOf(LoopModuleText("nested.hlo")), LoopModuleText("nested.plan.pb"))
      << "regenerate tests/runtime/testdata/loops/nested.plan.pb (its README) if intended";
}

TEST(WhileKernel, NestingIsBoundedAt16Loops) {
  auto module = ir::ParseAndVerify(NestedLoopsText(17));
  ASSERT_TRUE(module.ok()) << module.status().message();
  auto optimized = passes::RunPipeline(**module, passes::kDefaultPipeline, {});
  ASSERT_TRUE(optimized.ok()) << optimized.status().message();
  auto plan = plan::BuildPlan(*optimized->module);
  ASSERT_FALSE(plan.ok());
  EXPECT_EQ(plan.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(plan.status().message().find("loops nested more than 16 deep"), std::string::npos)
      << plan.status().message();
  // The plan reader keeps the same bound: a plan's loop read as 16 loops deep is refused.
  pb::Plan p;
  ASSERT_TRUE(p.ParseFromString(PlanOf(LoopModuleText("input_bound.hlo"))));
  auto deep = plan::ValidatePlan(p, /*depth=*/16);
  ASSERT_FALSE(deep.ok());
  EXPECT_NE(deep.status().message().find("nested more than 16 deep"), std::string::npos);
  ASSERT_TRUE(plan::ValidatePlan(p, /*depth=*/15).ok());
}

TEST(WhileKernel, ARunawayLoopFailsAtTheInterpretersBound) {
  const std::string text = LoopModuleText("input_bound.hlo");
  auto module = ir::ParseAndVerify(text);
  ASSERT_TRUE(module.ok());
  const std::vector<ir::Literal> args = {
      ir::Literal::FromVector<float>(ir::ElementType::kF32, {3}, {0.5f, -1.25f, 2.0f}),
      ir::Literal::Scalar<int32_t>(ir::ElementType::kS32, 300000)};
  auto want = interp::Evaluate(**module, args);
  ASSERT_FALSE(want.ok());
  const std::string bound =
      "the loops run more than " + std::to_string(interp::kMaxWhileIterations) + " iterations";
  EXPECT_NE(want.status().message().find(bound), std::string::npos) << want.status().message();
  auto e = Executor::Create(PlanOf(text), {});
  ASSERT_TRUE(e.ok()) << e.status().message();
  auto got = (*e)->Run({args});
  ASSERT_FALSE(got.ok());
  EXPECT_NE(got.status().message().find(bound), std::string::npos) << got.status().message();
  // At the bound exactly, the loop finishes, as on the interpreter.
  std::vector<ir::Literal> at = args;
  at[1] = ir::Literal::Scalar<int32_t>(ir::ElementType::kS32,
                                       static_cast<int32_t>(interp::kMaxWhileIterations));
  auto want_at = interp::Evaluate(**module, at);
  ASSERT_TRUE(want_at.ok()) << want_at.status().message();
  auto got_at = (*e)->Run({at});
  ASSERT_TRUE(got_at.ok()) << got_at.status().message();
  ExpectSameBits(FlattenLiteral(*want_at), (*got_at)[0]);
}

// Each lie about a loop: Create refuses it with a message (or, where it is only a wrong value,
// the run stays inside its arena; the sanitizer build checks that).
TEST(WhileKernel, PlansThatLieAboutALoopAreRefused) {
  pb::Plan base;
  ASSERT_TRUE(base.ParseFromString(PlanOf(LoopModuleText("nested.hlo"))));
  int at = -1;
  for (const pb::Kernel& k : base.kernels()) {
    if (k.has_while_loop()) at = k.id();
  }
  ASSERT_GE(at, 0);
  using Mutation = std::function<void(pb::Kernel*)>;
  const std::vector<std::pair<std::string, Mutation>> lies = {
      {"region past the arena",
       [](pb::Kernel* k) { k->mutable_while_loop()->set_region(1 << 20); }},
      {"negative region", [](pb::Kernel* k) { k->mutable_while_loop()->set_region(-64); }},
      {"unaligned region", [](pb::Kernel* k) { k->mutable_while_loop()->set_region(8); }},
      {"condition with two results",
       [](pb::Kernel* k) {
         pb::Plan* c = k->mutable_while_loop()->mutable_condition();
         c->add_outputs(c->outputs(0));
       }},
      {"condition result not a pred",
       [](pb::Kernel* k) {
         pb::Plan* c = k->mutable_while_loop()->mutable_condition();
         c->mutable_buffers(c->outputs(0))->set_type(pb::S32);
       }},
      {"body result not the state",
       [](pb::Kernel* k) {
         k->mutable_while_loop()->mutable_body()->mutable_outputs()->RemoveLast();
       }},
      {"body parameter not the state",
       [](pb::Kernel* k) {
         pb::Plan* b = k->mutable_while_loop()->mutable_body();
         b->mutable_parameters(0)->mutable_buffers()->RemoveLast();
       }},
      {"two parameters",
       [](pb::Kernel* k) {
         pb::Plan* b = k->mutable_while_loop()->mutable_body();
         *b->add_parameters() = b->parameters(0);
       }},
      {"state and initial state differ", [](pb::Kernel* k) { k->mutable_outputs()->RemoveLast(); }},
      {"missing buffer", [](pb::Kernel* k) { k->mutable_operands(0)->set_buffers(0, 100000); }},
      {"sub-plan arena too large",
       [](pb::Kernel* k) {
         k->mutable_while_loop()->mutable_body()->set_arena_bytes(int64_t{1} << 40);
       }},
      {"all-reduce in the body",
       [](pb::Kernel* k) { k->mutable_while_loop()->mutable_body()->set_replicated(true); }},
      {"no sub-plans", [](pb::Kernel* k) { k->mutable_while_loop()->Clear(); }},
  };
  for (const auto& [name, lie] : lies) {
    SCOPED_TRACE(name);
    pb::Plan p = base;
    lie(p.mutable_kernels(at));
    std::string bytes;
    ASSERT_TRUE(p.SerializeToString(&bytes));
    auto e = Executor::Create(bytes, {});
    ASSERT_FALSE(e.ok()) << "accepted";
    EXPECT_NE(e.status().message().find("plan: kernel"), std::string::npos) << e.status().message();
  }
}

}  // namespace
}  // namespace detrain::runtime
