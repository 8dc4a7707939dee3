// The stage table of each example: stage names, numbers and file names in chain order; every
// digest is the SHA-256 of its bytes; the transform records chain (each names a stage before it
// and holds that stage's digest; the main chain is program -> source -> hlo -> opt-hlo -> plan);
// the pipeline's pass records link stage 2 to stage 3; the typed configuration is stage 1's
// header; and the train step's entry signature gives every parameter its role.
#include "driver/stage_table.h"

#include <gtest/gtest.h>

#include "attest/canonical_json.h"
#include "attest/sha256.h"
#include "compiler/ir/verifier.h"
#include "compiler/plan/builder.h"
#include "driver/compile.h"
#include "test_util.h"

namespace detrain::driver {
namespace {

using plan::ParamRole;

struct Expected {
  const char* name;
  int number;
  const char* file;
  const char* transform;
  const char* input;
};

const Expected kDtChain[] = {
    {"program", 0, "00.program.dt", "", ""},
    {"source", 1, "01.source.hlo", "lower-source-graph", "program"},
    {"hlo", 2, "02.hlo.hlo", "lower-train-step", "source"},
    {"init", 2, "02.init.json", "init-plan", "source"},
    {"eval", 2, "02.eval.hlo", "lower-eval", "program"},
    {"opt-hlo", 3, "03.opt-hlo.hlo", "pass-pipeline", "hlo"},
    {"plan", 4, "04.plan.pb", "cpu-plan", "opt-hlo"},
    {"eval-plan", 4, "04.eval-plan.pb", "cpu-plan", "eval"},
};

class ExampleTableTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    if (!test::HaveData(GetParam())) GTEST_SKIP() << "data for " << GetParam() << " is missing";
    Result<CompileResult> c = Compile(test::ExamplePath(GetParam()), {});
    ASSERT_TRUE(c.ok()) << c.status().message();
    result_ = std::move(*c);
  }
  CompileResult result_;
};

TEST_P(ExampleTableTest, RecordsChainFromProgramToPlan) {
  const std::vector<StageRecord>& records = result_.stages.records();
  ASSERT_EQ(records.size(), std::size(kDtChain));
  for (size_t i = 0; i < records.size(); ++i) {
    const StageRecord& r = records[i];
    const Expected& e = kDtChain[i];
    EXPECT_EQ(r.name, e.name);
    EXPECT_EQ(r.number, e.number) << r.name;
    EXPECT_EQ(r.file_name, e.file) << r.name;
    EXPECT_EQ(r.sha256, attest::Sha256Hex(r.bytes)) << r.name;
    EXPECT_EQ(r.transform.name, e.transform) << r.name;
    EXPECT_EQ(r.transform.input_stage, e.input) << r.name;
    if (i == 0) {
      EXPECT_TRUE(r.transform.input_sha256.empty());
      continue;
    }
    const StageRecord* input = result_.stages.Find(r.transform.input_stage);
    ASSERT_NE(input, nullptr) << r.name;
    EXPECT_LT(input - records.data(), static_cast<std::ptrdiff_t>(i))
        << r.name << " reads a later stage";
    EXPECT_EQ(r.transform.input_sha256, input->sha256) << r.name;
    Result<nlohmann::json> options = attest::ParseJson(r.transform.options);
    ASSERT_TRUE(options.ok()) << r.name << ": " << r.transform.options;
    EXPECT_EQ(*attest::CanonicalJson(*options), r.transform.options) << r.name << ": not canonical";
  }
  // The main chain, stage number by stage number.
  const char* chain[] = {kStageProgram, kStageSource, kStageHlo, kStageOptHlo, kStagePlan};
  for (size_t i = 1; i < std::size(chain); ++i) {
    EXPECT_EQ(result_.stages.Find(chain[i])->transform.input_sha256,
              result_.stages.Find(chain[i - 1])->sha256)
        << chain[i];
  }
}

TEST_P(ExampleTableTest, PipelineAndPlanRecords) {
  const StageRecord& hlo = *result_.stages.Find(kStageHlo);
  const StageRecord& opt = *result_.stages.Find(kStageOptHlo);
  EXPECT_EQ(opt.transform.pipeline, passes::kDefaultPipeline);
  EXPECT_EQ(
      opt.transform.options,
      *attest::CanonicalJson(nlohmann::json{{"pipeline", std::string(passes::kDefaultPipeline)}}));
  const auto& passes = opt.transform.passes;
  ASSERT_FALSE(passes.empty());
  EXPECT_EQ(passes.front().input_sha256, hlo.sha256);
  for (size_t i = 1; i < passes.size(); ++i) {
    EXPECT_EQ(passes[i].input_sha256, passes[i - 1].output_sha256) << passes[i].pass;
  }
  EXPECT_EQ(passes.back().output_sha256, opt.sha256);
  ASSERT_EQ(result_.pass_dumps.size(), passes.size());
  EXPECT_EQ(result_.pass_dumps.back().second, opt.bytes);
  const StageRecord& plan = *result_.stages.Find(kStagePlan);
  EXPECT_EQ(plan.transform.plan_format_version, plan::kPlanFormatVersion);
  EXPECT_GT(result_.peak_bytes, 0);
  const StageRecord& eval = *result_.stages.Find(kStageEval);
  EXPECT_EQ(
      eval.transform.options,
      *attest::CanonicalJson(nlohmann::json{{"rows", result_.config->resolved->validation_rows}}));
}

TEST_P(ExampleTableTest, RecordJsonForTheManifest) {
  nlohmann::json program = StageRecordJson(*result_.stages.Find(kStageProgram));
  EXPECT_FALSE(program.contains("transform"));
  EXPECT_EQ(program["file"], "00.program.dt");
  const StageRecord& opt = *result_.stages.Find(kStageOptHlo);
  nlohmann::json j = StageRecordJson(opt);
  EXPECT_EQ(j["stage"], "opt-hlo");
  EXPECT_EQ(j["number"], 3);
  EXPECT_EQ(j["size"], opt.bytes.size());
  EXPECT_EQ(j["sha256"], opt.sha256);
  EXPECT_EQ(j["transform"]["input_sha256"], result_.stages.Find(kStageHlo)->sha256);
  EXPECT_EQ(j["transform"]["options"]["pipeline"], std::string(passes::kDefaultPipeline));
  EXPECT_EQ(j["transform"]["passes"].size(), opt.transform.passes.size());
  nlohmann::json chain = StageChainJson(result_.stages);
  ASSERT_EQ(chain.size(), result_.stages.records().size());
  for (size_t i = 0; i < chain.size(); ++i) {
    EXPECT_EQ(chain[i], StageRecordJson(result_.stages.records()[i]));
  }
  EXPECT_EQ(StageRecordJson(*result_.stages.Find(kStagePlan))["transform"]["plan_format_version"],
            plan::kPlanFormatVersion);
}

TEST_P(ExampleTableTest, TypedConfigIsStageOneHeader) {
  ASSERT_TRUE(result_.config.has_value());
  const frontend::RunConfig& c = *result_.config;
  ASSERT_TRUE(c.resolved.has_value());
  ASSERT_TRUE(c.train.steps.has_value());  // given, or resolved from epochs
  if (c.train.epochs.has_value()) {
    EXPECT_EQ(*c.train.steps, *c.train.epochs * (c.resolved->train_rows / c.train.batch));
  }
  const std::string& source = result_.stages.Find(kStageSource)->bytes;
  const std::string line = source.substr(0, source.find('\n', source.find('\n') + 1));
  EXPECT_EQ(line, "// detrain.source-graph.v1\n// config " + *frontend::CanonicalRunConfig(c));
}

// The roles line up with the lowered train step's parameters (train_step.h's signature).
TEST_P(ExampleTableTest, SignatureRolesMatchTheTrainStep) {
  const frontend::RunConfig& c = *result_.config;
  const plan::EntrySignature& sig = result_.signature;
  EXPECT_EQ(sig.shards, c.train.shards);
  Result<std::unique_ptr<ir::Module>> step =
      ir::ParseAndVerify(result_.stages.Find(kStageHlo)->bytes);
  ASSERT_TRUE(step.ok());
  std::vector<ir::Instruction*> params = (*step)->entry()->Parameters();
  ASSERT_EQ(sig.roles.size(), params.size());
  const size_t n = c.params.size();
  const size_t slots = static_cast<size_t>(frontend::OptimizerSlots(c.optimizer.kind));
  for (size_t i = 0; i < params.size(); ++i) {
    const std::string& name = params[i]->name;
    ParamRole role = sig.roles[i];
    if (i < n) {
      EXPECT_EQ(role, ParamRole::kParameter) << name;
      EXPECT_EQ(name, c.params[i].name);
    } else if (i < n + n * slots) {
      EXPECT_EQ(role, ParamRole::kOptimizerState) << name;
      EXPECT_EQ(name, c.params[(i - n) / slots].name + "_s" + std::to_string((i - n) % slots));
    } else if (name == "count") {
      EXPECT_EQ(role, ParamRole::kStep);
    } else if (name == "learning_rate") {
      EXPECT_EQ(role, ParamRole::kLearningRate);
    } else if (name == "key") {
      EXPECT_EQ(role, ParamRole::kKey);
      EXPECT_EQ(i + 1, params.size());
    } else {
      // The loss's batch inputs: x (features) then y (labels) in every example.
      EXPECT_EQ(role, name == "y" ? ParamRole::kLabels : ParamRole::kBatch) << name;
      EXPECT_EQ(params[i]->shape.dim(0), c.train.batch) << name;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Examples, ExampleTableTest,
                         ::testing::Values("breast_cancer", "digits", "charlm"));

// The role lists in full, written out per example: parameters, slots, and the fixed tail.
TEST(SignatureTest, RolesPerExample) {
  struct Case {
    const char* example;
    size_t params, slots;
  };
  for (const Case& e : {Case{"breast_cancer", 4, 2}, Case{"digits", 6, 2}, Case{"charlm", 17, 2}}) {
    if (!test::HaveData(e.example)) continue;
    CompileOptions front_only;
    front_only.backend = false;
    Result<CompileResult> c = Compile(test::ExamplePath(e.example), front_only);
    ASSERT_TRUE(c.ok()) << c.status().message();
    std::vector<ParamRole> want(e.params, ParamRole::kParameter);
    want.insert(want.end(), e.params * e.slots, ParamRole::kOptimizerState);
    for (ParamRole r : {ParamRole::kStep, ParamRole::kLearningRate, ParamRole::kBatch,
                        ParamRole::kLabels, ParamRole::kKey}) {
      want.push_back(r);
    }
    EXPECT_EQ(c->signature.roles, want) << e.example;
    EXPECT_EQ(c->signature.shards, 8) << e.example;
  }
}

TEST(StageTableTest, UnknownOrMissingInputIsAnInternalError) {
  StageTable t;
  Status st = t.Add("hlo", "x", TransformOf("lower-train-step", "source"), ProgramKind::kDt);
  EXPECT_EQ(st.code(), StatusCode::kInternal);
  EXPECT_EQ(st.message(), "stage 'hlo' reads stage 'source', which is not in the table yet");
  EXPECT_EQ(t.Add("stage-9", "x", {}, ProgramKind::kDt).code(), StatusCode::kInternal);
  ASSERT_TRUE(t.Add("program", "p", {}, ProgramKind::kHlo).ok());
  EXPECT_EQ(t.records()[0].file_name, "00.program.hlo");
  EXPECT_EQ(t.Add("program", "p", {}, ProgramKind::kHlo).code(), StatusCode::kInternal);  // twice
  StageTable spec;
  ASSERT_TRUE(spec.Add("program", "{}", {}, ProgramKind::kRunSpec).ok());
  EXPECT_EQ(spec.records()[0].file_name, "00.program.json");
}

}  // namespace
}  // namespace detrain::driver
