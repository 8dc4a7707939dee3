// `detrain compile` on .dt programs, run as a user runs it.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "cli/cli_runner.h"

namespace detrain::testing {
namespace {

namespace fs = std::filesystem;
const std::string kExample = std::string(DETRAIN_SOURCE_DIR) + "/examples/breast_cancer/train.dt";

bool HaveData() {
  return fs::exists("/usr/lib/python3/dist-packages/sklearn/datasets/data/breast_cancer.csv");
}

TEST(CompileCliTest, HashesListEveryStage) {
  if (!HaveData()) GTEST_SKIP() << "python3-sklearn missing";
  CliResult r = RunDetrain({"compile", kExample, "--hashes"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::vector<std::string> names;
  std::istringstream lines(r.out);
  for (std::string line; std::getline(lines, line);) {
    ASSERT_EQ(line.rfind("stage ", 0), 0u) << line;
    names.push_back(line.substr(6, line.find(' ', 6) - 6));
    EXPECT_EQ(line.size(), line.find("sha256:") + 7 + 64) << line;
  }
  EXPECT_EQ(names, (std::vector<std::string>{"program", "source", "hlo", "init", "eval", "opt-hlo",
                                             "plan", "eval-plan"}));
  CliResult again = RunDetrain({"compile", kExample, "--hashes", "--threads", "2"});
  EXPECT_EQ(again.out, r.out);
}

std::string Slurp(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// The output the golden files hold is the output users and scripts see: byte for byte, for each
// example; --hashes --json and the dump's summary.json agree with it.
TEST(CompileCliTest, HashesEqualTheGoldens) {
  const std::string root = DETRAIN_SOURCE_DIR;
  for (const std::string ex : {"breast_cancer", "digits", "charlm"}) {
    const std::string data =
        ex == "digits"   ? root + "/examples/digits/digits.csv"
        : ex == "charlm" ? "/usr/share/common-licenses/GPL-3"
                         : "/usr/lib/python3/dist-packages/sklearn/datasets/data/breast_cancer.csv";
    if (!fs::exists(data)) continue;
    const std::string program = root + "/examples/" + ex + "/train.dt";
    CliResult r = RunDetrain({"compile", program, "--hashes"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.out, Slurp(root + "/tests/frontend/testdata/golden/" + ex + "/hashes.txt")) << ex;
    // Plan formats 2 (before donation) and 3 (before updates in place) are still written, byte
    // for byte as detrain wrote them then: their goldens are the digests from before formats 3
    // and 4; only the plans differ between the three.
    for (const std::string format : {"2", "3"}) {
      CliResult old = RunDetrain({"compile", program, "--hashes", "--plan-format", format});
      ASSERT_EQ(old.exit_code, 0) << old.err;
      EXPECT_EQ(old.out, Slurp(root + "/tests/frontend/testdata/golden/" + ex +
                               "/hashes.plan-format-" + format + ".txt"))
          << ex << ", format " << format;
    }
    CliResult json = RunDetrain({"compile", program, "--hashes", "--json"});
    ASSERT_EQ(json.exit_code, 0) << json.err;
    std::string lines;
    const nlohmann::json summary = nlohmann::json::parse(json.out);
    for (const auto& s : summary["stages"]) {
      lines += "stage " + s["stage"].get<std::string>() +
               " sha256:" + s["sha256"].get<std::string>() + "\n";
    }
    EXPECT_EQ(lines, r.out) << ex;
    std::string dir = MakeTempDir() + "/dump";
    ASSERT_EQ(RunDetrain({"compile", program, "--dump-dir", dir}).exit_code, 0);
    EXPECT_EQ(Slurp(dir + "/summary.json"), json.out) << ex;
  }
}

TEST(CompileCliTest, EmitStages) {
  if (!HaveData()) GTEST_SKIP() << "python3-sklearn missing";
  CliResult source = RunDetrain({"compile", kExample, "--emit", "source"});
  ASSERT_EQ(source.exit_code, 0) << source.err;
  EXPECT_EQ(source.out.rfind("// detrain.source-graph.v1\n// config {", 0), 0u);
  CliResult plan = RunDetrain({"compile", kExample, "--emit", "plan"});
  ASSERT_EQ(plan.exit_code, 0) << plan.err;
  EXPECT_NE(plan.out.find("module_name: \"train_step\""), std::string::npos);
  CliResult init = RunDetrain({"compile", kExample, "--emit", "init"});
  EXPECT_NE(
      nlohmann::json::parse(init.out)["params"][0]["key_path"].get<std::string>().find("fold_in"),
      std::string::npos);
}

TEST(CompileCliTest, DumpDirHoldsStagesPassesAndSummary) {
  if (!HaveData()) GTEST_SKIP() << "python3-sklearn missing";
  std::string dir = MakeTempDir() + "/dump";
  CliResult r = RunDetrain({"compile", kExample, "--dump-dir", dir});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  nlohmann::json summary = nlohmann::json::parse(std::ifstream(dir + "/summary.json"));
  EXPECT_EQ(summary["stages"].size(), 8u);
  EXPECT_FALSE(summary["pipeline"].get<std::string>().empty());
  for (const auto& s : summary["stages"])
    EXPECT_TRUE(fs::exists(dir + "/" + s["file"].get<std::string>())) << s;
  size_t pass_files = 0;
  for (const auto& e : fs::directory_iterator(dir + "/passes")) pass_files += e.is_regular_file();
  EXPECT_EQ(pass_files, summary["passes"].size());
  EXPECT_TRUE(fs::exists(dir + "/04.plan.txt"));
}

TEST(CompileCliTest, ProgramErrorsArePositioned) {
  std::string dir = MakeTempDir();
  std::ofstream(dir + "/bad.dt") << "param w: f32[2, 2] = zeros\nparam b f32[2] = zeros\n";
  CliResult r = RunDetrain({"compile", dir + "/bad.dt"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err.substr(0, r.err.find('\n')),
            dir + "/bad.dt:2:9: error: expected ':' and the parameter's type, found 'f32'");
  EXPECT_NE(r.err.find("    param b f32[2] = zeros\n            ^~~"), std::string::npos) << r.err;
}

TEST(CompileCliTest, BadPipelineAndStage) {
  if (!HaveData()) GTEST_SKIP() << "python3-sklearn missing";
  CliResult r = RunDetrain({"compile", kExample, "--hashes", "--pipeline", "cse,frobnicate"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("frobnicate"), std::string::npos) << r.err;
  CliResult stage = RunDetrain({"compile", kExample, "--emit", "frobnicate"});
  EXPECT_EQ(stage.exit_code, 2);
  EXPECT_NE(stage.err.find("frobnicate"), std::string::npos) << stage.err;
}

}  // namespace
}  // namespace detrain::testing
