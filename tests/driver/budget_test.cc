// The compile driver against the memory budget (base/budget.h; issue 35, class 11): what a
// program declares is accounted before anything of its size is allocated — each declared tensor
// in the front end, the training state after it, each plan's buffers with the state — and
// folding a splat of a declared size materializes nothing. With stages_before_budget the front
// end's stages all reach on_stage before the first excess is the error, so a verifier finds a
// program that differs from a record to differ under any budget. Each limit at the boundary and
// one past it.
#include "base/budget.h"

#include <gtest/gtest.h>
#include <sys/resource.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "compiler/ir/element_type.h"
#include "driver/compile.h"
#include "test_util.h"

namespace detrain::driver {
namespace {

using test::kRoot;
using test::Slurp;

constexpr int64_t kHuge = int64_t{1} << 50;  // a budget nothing here reaches

// Restores the default budget when a test ends, whatever it set.
class BudgetTest : public ::testing::Test {
 protected:
  void TearDown() override { SetMemoryBudget({0, 0}); }

  // The tiny test program with `extra` declared after b2, in a directory with its data.
  std::string Program(const std::string& name, const std::string& extra) {
    const std::string dir = ::testing::TempDir() + "/budget_" + name;
    std::filesystem::create_directories(dir);
    const std::string tiny = kRoot + "/tests/evidence/testdata/tiny/";
    std::filesystem::copy_file(tiny + "tiny.csv", dir + "/tiny.csv",
                               std::filesystem::copy_options::overwrite_existing);
    std::string text = Slurp(tiny + "train.dt");
    const std::string b2 = "param b2: f32[2]    = zeros\n";
    const size_t at = text.find(b2);
    EXPECT_NE(at, std::string::npos);
    text.insert(at + b2.size(), extra);
    std::ofstream(dir + "/train.dt") << text;
    return dir + "/train.dt";
  }

  // Options whose on_stage appends each stage's name to `seen`.
  static CompileOptions Recording(std::vector<std::string>* seen) {
    CompileOptions o;
    o.on_stage = [seen](const StageRecord& r) {
      seen->push_back(r.name);
      return Status::Ok();
    };
    return o;
  }
};

int64_t StateBytes(const CompileResult& c) {
  int64_t total = 0;
  for (const StateSpec& s : c.state) {
    total += s.shape.ElementCount() * ir::ElementTypeByteSize(s.shape.type());
  }
  return total;
}

int64_t PeakRssBytes() {
  struct rusage u {};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<int64_t>(u.ru_maxrss) * 1024;
}

// A parameter of 2.9 GiB that the loss does not use: its gradient is a splat of zeros, which
// folding used to materialize (3 GB, a minute) before making it a broadcast again.
TEST_F(BudgetTest, FoldingASplatOfADeclaredSizeMaterializesNothing) {
  SetMemoryBudget({kHuge, kHuge});
  const std::string path = Program("fold", "param big: f32[28000, 28000] = zeros\n");
  Result<CompileResult> c = Compile(path, {});
  ASSERT_TRUE(c.ok()) << c.status().message();
  for (const StageRecord& s : c->stages.records()) {
    EXPECT_LT(s.bytes.size(), size_t{1} << 20) << s.name;  // no constant of the declared size
  }
  EXPECT_NE(c->stages.Find(kStageOptHlo)->bytes.find("f32[28000,28000] broadcast("),
            std::string::npos);
  EXPECT_LT(PeakRssBytes(), int64_t{1} << 30);
}

// The state (parameters, two Adam slots each, the counter) and each plan's peak with the state,
// against the total budget: at the boundary and one past it.
TEST_F(BudgetTest, StateAndPlanBuffersAreAccountedAtTheBoundary) {
  const std::string path = Program("bounds", "param big: f32[65536] = zeros\n");
  SetMemoryBudget({kHuge, kHuge});
  Result<CompileResult> full = Compile(path, {});
  ASSERT_TRUE(full.ok()) << full.status().message();
  const int64_t state = StateBytes(*full);
  const int64_t peak = full->peak_bytes;
  EXPECT_GE(state, 3 * 65536 * 4);
  EXPECT_EQ(TrainerBytes(*full), state + peak);

  SetMemoryBudget({kHuge, state - 1});
  Result<CompileResult> c = Compile(path, {});
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(c.status().message(),
            path + ": the training state (16 tensors: parameters, optimizer slots, counter) " +
                "needs " + FormatBytes(state) + ", more than the total memory budget of " +
                FormatBytes(state - 1) +
                " (raise it with --max-memory SIZE, e.g. --max-memory 64G)");

  SetMemoryBudget({kHuge, state});  // the state fits; the plan's buffers with it do not
  c = Compile(path, {});
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(c.status().message().rfind("the peak of the plan's buffers with the training state "
                                       "needs " +
                                           FormatBytes(state + peak),
                                       0),
            0u)
      << c.status().message();

  SetMemoryBudget({kHuge, state + peak - 1});
  c = Compile(path, {});
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), StatusCode::kResourceExhausted);

  SetMemoryBudget({kHuge, state + peak});  // exactly fits (the eval plan needs less)
  c = Compile(path, {});
  ASSERT_TRUE(c.ok()) << c.status().message();
  for (size_t i = 0; i < c->stages.records().size(); ++i) {
    EXPECT_EQ(c->stages.records()[i].sha256, full->stages.records()[i].sha256);
  }
}

// Each stage reaches on_stage as it is made; an error from on_stage ends the compile there.
TEST_F(BudgetTest, OnStageSeesEachStageAndStopsTheCompile) {
  const std::string path = Program("on_stage", "");
  std::vector<std::string> seen;
  CompileOptions o = Recording(&seen);
  Result<CompileResult> c = Compile(path, o);
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(seen, (std::vector<std::string>{"program", "source", "hlo", "init", "eval", "opt-hlo",
                                            "plan", "eval-plan"}));
  seen.clear();
  o.on_stage = [&](const StageRecord& r) {
    seen.push_back(r.name);
    return r.name == kStageSource ? Cancelled("stage 1 differs") : Status::Ok();
  };
  c = Compile(path, o);
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().message(), "stage 1 differs");
  EXPECT_EQ(seen, (std::vector<std::string>{"program", "source"}));
}

// A declared tensor over the budget: without stages_before_budget the checker names it at its
// declaration before any stage; with it, stages 0 to 2 are made and reported first, then the
// same excess is the error (a limit, not a fault of the program), before the backend.
TEST_F(BudgetTest, StagesBeforeBudgetReportsTheFrontEndFirst) {
  SetMemoryBudget({int64_t{64} << 20, int64_t{64} << 20});
  const std::string path = Program("deferred", "param big: f32[28000, 28000] = zeros\n");
  std::vector<std::string> seen;
  CompileOptions o = Recording(&seen);
  Result<CompileResult> c = Compile(path, o);
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().message().rfind(path + ":10:7: error: parameter 'big' f32[28000,28000] " +
                                           "needs 2.9 GiB, more than the one-tensor memory budget",
                                       0),
            0u)
      << c.status().message();
  EXPECT_TRUE(seen.empty());

  o.stages_before_budget = true;
  c = Compile(path, o);
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(c.status().message(),
            path + ": parameter 'big' f32[28000,28000] needs 2.9 GiB, more than the one-tensor " +
                "memory budget of 64.0 MiB (raise it with --max-memory SIZE, e.g. --max-memory " +
                "64G)");
  EXPECT_EQ(seen, (std::vector<std::string>{"program", "source", "hlo", "init", "eval"}));
  EXPECT_LT(PeakRssBytes(), int64_t{1} << 30);

  // The scope ends with the compile: a later check on this thread is not deferred.
  EXPECT_FALSE(CheckDeclaredTensorBytes(int64_t{65} << 20, "x").ok());
}

// Deferred checks keep the first excess, succeed meanwhile, and nest; other checks are not
// deferred.
TEST_F(BudgetTest, DeferDeclaredSizesKeepsTheFirstExcess) {
  SetMemoryBudget({100, 1000});
  {
    DeferDeclaredSizes outer;
    EXPECT_TRUE(CheckDeclaredTensorBytes(100, "a").ok());
    EXPECT_TRUE(outer.excess().ok());
    EXPECT_TRUE(CheckDeclaredTensorBytes(101, "b").ok());
    EXPECT_TRUE(CheckDeclaredTotalBytes(1001, "c").ok());
    EXPECT_EQ(outer.excess().code(), StatusCode::kResourceExhausted);
    EXPECT_EQ(outer.excess().message().rfind("b needs 101 B", 0), 0u);
    EXPECT_FALSE(CheckTensorBytes(101, "a file").ok());  // an allocation: never deferred
    {
      DeferDeclaredSizes inner;
      EXPECT_TRUE(CheckDeclaredTotalBytes(1001, "d").ok());
      EXPECT_EQ(inner.excess().message().rfind("d needs", 0), 0u);
    }
    EXPECT_EQ(outer.excess().message().rfind("b needs", 0), 0u);
  }
  EXPECT_FALSE(CheckDeclaredTensorBytes(101, "e").ok());
}

}  // namespace
}  // namespace detrain::driver
