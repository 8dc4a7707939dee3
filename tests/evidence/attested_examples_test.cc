// The examples, trained with `run --attest` and verified (evidence/bundle/attested_run.h):
// breast_cancer in full, to its target validation accuracy; digits and charlm for a few steps.
// A test whose dataset is not on this machine is skipped (tools/setup.sh installs them).
#include <gtest/gtest.h>

#include <filesystem>

#include "base/fs.h"
#include "evidence/bundle/attested_run.h"
#include "evidence/verify/verifier.h"
#include "temp_dir.h"

namespace detrain::bundle {
namespace {

std::string Example(const std::string& name) {
  return std::string(DETRAIN_SOURCE_DIR) + "/examples/" + name + "/train.dt";
}

// Temporary directories named after this test.
class TempDir : public testutil::TempDir {
 public:
  TempDir() : testutil::TempDir("detrain_examples_test") {}
};

// Trains `program` into a bundle (threads 2), verifies it (jobs 2) and returns the summary.
RunSummary TrainAndVerify(const std::string& program, std::optional<int64_t> steps) {
  TempDir tmp;
  RunOptions o;
  o.program = program;
  o.output_dir = tmp.Sub("bundle");
  o.steps = steps;
  o.executor.threads = 2;
  o.detrain_version = "test";
  Result<RunSummary> r = RunAttested(o);
  EXPECT_TRUE(r.ok()) << r.status().message();
  if (!r.ok()) return {};
  EXPECT_TRUE(r->complete);
  EXPECT_FALSE(r->stopped) << r->stop_reason;
  verify::VerifyOptions v;
  v.bundle = o.output_dir;
  v.jobs = 2;
  verify::VerifyReport report = verify::VerifyBundle(v);
  EXPECT_EQ(report.outcome, verify::Outcome::kVerified) << report.message;
  EXPECT_EQ(report.final_step_hash, r->final_step_hash);
  EXPECT_EQ(report.steps_replayed, r->steps_done);
  return *r;
}

TEST(AttestedExamples, BreastCancerReachesItsAccuracy) {
  if (!PathExists("/usr/lib/python3/dist-packages/sklearn/datasets/data/breast_cancer.csv")) {
    GTEST_SKIP() << "python3-sklearn's breast_cancer.csv is not installed";
  }
  RunSummary r = TrainAndVerify(Example("breast_cancer"), std::nullopt);
  EXPECT_EQ(r.steps_done, 300);
  ASSERT_TRUE(r.last_eval.has_value() && r.last_eval->accuracy.has_value());
  EXPECT_GE(*r.last_eval->accuracy, 0.95f) << "validation loss " << r.last_eval->loss;
}

TEST(AttestedExamples, Digits) {
  if (!PathExists(std::string(DETRAIN_SOURCE_DIR) + "/examples/digits/digits.csv")) {
    GTEST_SKIP() << "examples/digits/digits.csv is not unpacked (tools/setup.sh)";
  }
  EXPECT_EQ(TrainAndVerify(Example("digits"), 20).steps_done, 20);
}

TEST(AttestedExamples, CharLm) {
  if (!PathExists("/usr/share/common-licenses/GPL-3")) {
    GTEST_SKIP() << "/usr/share/common-licenses/GPL-3 (base-files) is not there";
  }
  EXPECT_EQ(TrainAndVerify(Example("charlm"), 2).steps_done, 2);
}

}  // namespace
}  // namespace detrain::bundle
