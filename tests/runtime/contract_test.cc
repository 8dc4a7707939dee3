// The determinism contract end to end (DESIGN.md §2): for each example, 3 train steps give
// identical parameters, optimizer state, count and losses for threads {1, 2, 4} x every ISA path
// this CPU has x devices {1, 2, 4, 8}, equal to the reference interpreter's — with the plan's
// state updated in place (plan format 3), and with the state passed once and then left resident
// in the executor from step to step (threads 2, devices 1 and 2).
#include <gtest/gtest.h>

#include "compiler/interp/interpreter.h"
#include "compiler/ir/parser.h"
#include "compiler/ir/verifier.h"
#include "driver/compile.h"
#include "runtime/executor.h"
#include "runtime_test_util.h"
#include "schemas/plan.pb.h"

namespace detrain::runtime {
namespace {

constexpr int kSteps = 3;

// The next step's arguments: the state outputs (all but the loss) replace the leading
// parameters; the key (the last parameter) is redrawn.
std::vector<ir::Literal> NextArguments(const ir::Module& step, std::vector<ir::Literal> args,
                                       const std::vector<ir::Literal>& outputs, int t) {
  for (size_t i = 0; i + 1 < outputs.size(); ++i) args[i] = outputs[i];
  args.back() = TrainStepArguments(step, 1000 + static_cast<uint64_t>(t)).back();
  return args;
}

// Resident state (Executor::SetCarry): the state passed once, then each step takes the previous
// step's results where they lie — in place on one device (the plan donated the state's slices),
// read out and copied in across devices — with the same bits as passing them.
void CheckResident(const std::string& plan, const ExecutorOptions& options, const ir::Module& step,
                   const std::vector<ir::Literal>& first,
                   const std::vector<std::vector<ir::Literal>>& expected) {
  auto executor = Executor::Create(plan, options);
  ASSERT_TRUE(executor.ok()) << executor.status().message();
  Executor& e = **executor;
  std::vector<int> carry(first.size(), -1);
  for (size_t i = 0; i + 1 < expected[0].size(); ++i) carry[i] = static_cast<int>(i);
  ASSERT_TRUE(e.SetCarry(carry).ok());
  std::vector<const ir::Literal*> in(first.size(), nullptr);
  EXPECT_EQ(e.RunKeep(in).code(), StatusCode::kFailedPrecondition) << "carried before any run";
  std::vector<ir::Literal> a = first;
  std::vector<ir::Literal> got(expected[0].size());
  for (int t = 0; t < kSteps; ++t) {
    for (size_t i = 0; i < a.size(); ++i) in[i] = t > 0 && carry[i] >= 0 ? nullptr : &a[i];
    Status st = e.RunKeep(in);
    ASSERT_TRUE(st.ok()) << st.message();
    for (size_t o = 0; o < got.size(); ++o)
      ASSERT_TRUE(e.ReadResult(static_cast<int>(o), &got[o]).ok());
    ExpectSameBits(expected[static_cast<size_t>(t)], got);
    if (::testing::Test::HasFailure()) return;
    a.back() = TrainStepArguments(step, 1000 + static_cast<uint64_t>(t)).back();
  }
  const int64_t state = static_cast<int64_t>(expected[0].size()) - 1;
  if (options.devices == 1) {
    EXPECT_GT(e.resident_arguments(), 0) << "no state stayed where it was";
    EXPECT_LE(e.resident_arguments(), (kSteps - 1) * state);
  } else {
    EXPECT_EQ(e.resident_arguments(), 0) << "across devices the state is copied in";
  }
  in.back() = nullptr;  // the key is carried from no result
  EXPECT_EQ(e.RunKeep(in).code(), StatusCode::kInvalidArgument);
  carry.back() = 0;  // the key from the first parameter's result: another type
  EXPECT_EQ(e.SetCarry(carry).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(e.SetCarry({0}).code(), StatusCode::kInvalidArgument) << "one entry per parameter";
}

// kSteps runs of `e` from `first`, each equal to the interpreter's step; stops at the first
// failure.
void CheckTrajectory(Executor& e, const ir::Module& step, const std::vector<ir::Literal>& first,
                     const std::vector<std::vector<ir::Literal>>& expected) {
  std::vector<ir::Literal> a = first;
  for (int t = 0; t < kSteps; ++t) {
    auto got = e.Run({a});
    ASSERT_TRUE(got.ok()) << got.status().message();
    ExpectSameBits(expected[static_cast<size_t>(t)], (*got)[0]);
    if (::testing::Test::HasFailure()) return;
    a = NextArguments(step, std::move(a), (*got)[0], t);
  }
}

void CheckExample(const std::string& name) {
  std::string path = std::string(DETRAIN_SOURCE_DIR) + "/examples/" + name + "/train.dt";
  auto compiled = driver::Compile(path, {});
  ASSERT_TRUE(compiled.ok()) << compiled.status().message();
  auto step = ir::ParseAndVerify(compiled->stages.Find("hlo")->bytes);
  ASSERT_TRUE(step.ok()) << step.status().message();
  // The interpreter's trajectory.
  std::vector<std::vector<ir::Literal>> expected;
  std::vector<ir::Literal> args = TrainStepArguments(**step, 7);
  const std::vector<ir::Literal> first = args;
  for (int t = 0; t < kSteps; ++t) {
    auto out = interp::Evaluate(**step, args);
    ASSERT_TRUE(out.ok()) << out.status().message();
    expected.push_back(FlattenLiteral(*out));
    args = NextArguments(**step, std::move(args), expected.back(), t);
  }
  const std::string& plan = compiled->stages.Find("plan")->bytes;
  // The plan updates the state in place (format 3's donation): the contract below holds with it.
  plan::v2::Plan proto;
  ASSERT_TRUE(proto.ParseFromString(plan));
  int donated = 0;
  for (const plan::v2::Buffer& b : proto.buffers()) donated += b.has_donor() ? 1 : 0;
  EXPECT_GT(donated, 0) << "no state buffer is updated in place";
  for (Isa isa : SupportedIsas()) {
    for (int threads : {1, 2, 4}) {
      for (int devices : {1, 2, 4, 8}) {
        SCOPED_TRACE(name + " " + std::string(IsaName(isa)) + " threads " +
                     std::to_string(threads) + " devices " + std::to_string(devices));
        ExecutorOptions options;
        options.isa = isa;
        options.threads = threads;
        options.devices = devices;
        auto executor = Executor::Create(plan, options);
        ASSERT_TRUE(executor.ok()) << executor.status().message();
        CheckTrajectory(**executor, **step, first, expected);
        if (::testing::Test::HasFailure()) return;
        if (devices > 1) {
          EXPECT_GT((*executor)->stats().transfers, 0)
              << "a mesh of devices that never exchanged data";
        }
        // Resident: in place (one device) and read out and copied in (two); more devices take the
        // second path too.
        if (threads == 2 && devices <= 2) CheckResident(plan, options, **step, first, expected);
      }
    }
    // The elementwise programs as generated, compiled loops (runtime/cpu/fused_loops.h), shared
    // by the devices of a mesh: the same trajectory (a mesh and the resident state on the best
    // path only: the scalar path's GEMMs make charlm's steps slow).
    for (int devices : {1, 2}) {
      if (devices > 1 && isa != BestIsa()) continue;
      SCOPED_TRACE(name + " " + std::string(IsaName(isa)) + " generated loops, devices " +
                   std::to_string(devices));
      ExecutorOptions options;
      options.isa = isa;
      options.threads = 2;
      options.devices = devices;
      options.generated_loops = true;
      auto executor = Executor::Create(plan, options);
      ASSERT_TRUE(executor.ok()) << executor.status().message();
      EXPECT_GT((*executor)->stats().generated_loops, 0);
      CheckTrajectory(**executor, **step, first, expected);
      if (::testing::Test::HasFailure()) return;
      if (isa == BestIsa()) CheckResident(plan, options, **step, first, expected);
    }
  }
}

// The transformer takes minutes on the scalar path: it runs in the `slow` binary (the default test
// run includes it; the sanitizer run does not).
#ifdef DETRAIN_SLOW_EXAMPLES
TEST(Contract, CharLm) { CheckExample("charlm"); }
#else
TEST(Contract, BreastCancer) { CheckExample("breast_cancer"); }
TEST(Contract, Digits) { CheckExample("digits"); }
#endif

}  // namespace
}  // namespace detrain::runtime
