// `detrain run --attest` and `detrain verify`, run as a user runs them: exit codes (0 verified,
// 1 failed or incomplete, 2 input error), the one-line verdict on stderr, and --json on stdout.
// The tamper cases themselves are tests/evidence/bundle_tamper_test.cc; these check what the
// command makes of a few of them.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "cli/cli_runner.h"

namespace detrain::testing {
namespace {

namespace fs = std::filesystem;

const std::string kProgram =
    std::string(DETRAIN_SOURCE_DIR) + "/tests/evidence/testdata/tiny/train.dt";

std::string Slurp(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

class VerifyCliTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    root_ = MakeTempDir();
    CliResult r = RunDetrain({"run", kProgram, "--attest", "--embed-data", "-o", root_ + "/b"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }
  static void TearDownTestSuite() { fs::remove_all(root_); }
  void SetUp() override {
    dir_ = root_ + "/" + ::testing::UnitTest::GetInstance()->current_test_info()->name();
    fs::copy(root_ + "/b", dir_, fs::copy_options::recursive);
  }
  static std::string root_;
  std::string dir_;
};

std::string VerifyCliTest::root_;

TEST_F(VerifyCliTest, PristineBundleVerifies) {
  CliResult r = RunDetrain({"verify", dir_});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("integrity: ok"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("recompile: ok"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("verified: 24 steps, 24 replayed; final step hash "), std::string::npos)
      << r.err;
  CliResult nr = RunDetrain({"verify", dir_, "--no-replay"});
  EXPECT_EQ(nr.exit_code, 0) << nr.err;
  EXPECT_NE(nr.err.find("verified: 24 steps, recompiled, not replayed"), std::string::npos)
      << nr.err;
}

TEST_F(VerifyCliTest, TamperedBundleFailsWithExitOne) {
  std::string text = Slurp(dir_ + "/steps.jsonl");
  text[text.size() / 2] = static_cast<char>(text[text.size() / 2] ^ 1);
  std::ofstream(dir_ + "/steps.jsonl", std::ios::binary | std::ios::trunc) << text;
  CliResult r = RunDetrain({"verify", dir_, "--json"});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("integrity: FAILED"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("detrain verify: FAILED: steps.jsonl: content differs from manifest.json"),
            std::string::npos)
      << r.err;
  nlohmann::json report = nlohmann::json::parse(r.out, nullptr, /*allow_exceptions=*/false);
  ASSERT_TRUE(report.is_object()) << r.out;
  EXPECT_EQ(report["outcome"], "failed");
  EXPECT_EQ(report["exit_code"], 1);
  ASSERT_EQ(report["phases"].size(), 1u);
  EXPECT_EQ(report["phases"][0]["phase"], "integrity");
  EXPECT_EQ(report["phases"][0]["ok"], false);
}

TEST_F(VerifyCliTest, IncompleteBundleFailsWithExitOne) {
  fs::remove(dir_ + "/manifest.json");
  CliResult r = RunDetrain({"verify", dir_});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("detrain verify: INCOMPLETE: the bundle is incomplete (no manifest.json)"),
            std::string::npos)
      << r.err;
}

TEST_F(VerifyCliTest, InputErrorsExitTwo) {
  CliResult missing = RunDetrain({"verify", root_ + "/no-such-bundle"});
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_NE(missing.err.find("no-such-bundle: no such bundle directory"), std::string::npos)
      << missing.err;
  // A format this detrain does not read (the version is judged before the root digest).
  const std::string path = dir_ + "/manifest.json";
  nlohmann::json m = nlohmann::json::parse(Slurp(path));
  m["format_version"] = 2;
  std::ofstream(path, std::ios::binary | std::ios::trunc) << m.dump();
  CliResult v2 = RunDetrain({"verify", dir_});
  EXPECT_EQ(v2.exit_code, 2) << v2.err;
  EXPECT_NE(v2.err.find("detrain verify: manifest.json: bundle format version 2; this detrain "
                        "reads format version 1"),
            std::string::npos)
      << v2.err;
  // A hostile manifest is a failed verification, never a crash.
  std::ofstream(path, std::ios::binary | std::ios::trunc) << std::string(100000, '[');
  CliResult deep = RunDetrain({"verify", dir_});
  EXPECT_EQ(deep.exit_code, 1) << deep.err;
  EXPECT_NE(deep.err.find("nested more than 256 deep"), std::string::npos) << deep.err;
  // Usage errors.
  CliResult range = RunDetrain({"verify", root_ + "/b", "--steps", "5"});
  EXPECT_EQ(range.exit_code, 2);
  EXPECT_NE(range.err.find("--steps '5': expected A:B"), std::string::npos) << range.err;
  CliResult outside = RunDetrain({"verify", root_ + "/b", "--steps", "0:99"});
  EXPECT_EQ(outside.exit_code, 2) << outside.err;
  EXPECT_NE(outside.err.find("--steps 0:99 is outside the bundle's steps 0:24"), std::string::npos)
      << outside.err;
}

}  // namespace
}  // namespace detrain::testing
