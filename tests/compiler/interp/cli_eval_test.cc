// `detrain eval`: runs JAX-exported HLO on .npy inputs, matched by name or position; every kind
// of bad input is an error with exit code 2.
#include <gtest/gtest.h>

#include "../ir/test_util.h"
#include "cli/cli_runner.h"

namespace detrain {
namespace {

using testing::RunDetrain;

std::string Case(const std::string& rel) {
  return (testing::JaxTestdata() / "data_movement" / rel).string();
}

TEST(CliEval, ByNameWritesOutputsEqualToJax) {
  std::string dir = testing::MakeTempDir();
  auto r = RunDetrain({"eval", Case("module.hlo"), "--input", "x=" + Case("in/p0.npy"), "--input",
                       "n=" + Case("in/p1.npy"), "--input", "i=" + Case("in/p2.npy"), "-o", dir});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (int i = 0; i < 10; ++i) {
    std::string name = "out" + std::to_string(i) + ".npy";
    EXPECT_EQ(testing::ReadTextFile(dir + "/" + name), testing::ReadTextFile(Case(name))) << name;
    EXPECT_NE(r.out.find(dir + "/" + name), std::string::npos);
  }
  std::filesystem::remove_all(dir);
}

TEST(CliEval, ByPositionAndSingleOutputNaming) {
  std::string mlp = (testing::JaxTestdata() / "mlp_forward").string();
  std::vector<std::string> args = {"eval", mlp + "/module.hlo"};
  for (int i = 0; i < 5; ++i) {
    args.push_back("--input");
    args.push_back("p" + std::to_string(i) + "=" + mlp + "/in/p" + std::to_string(i) + ".npy");
  }
  std::string dir = testing::MakeTempDir();
  args.push_back("-o");
  args.push_back(dir + "/new/sub");  // created
  auto r = RunDetrain(args);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(std::filesystem::exists(dir + "/new/sub/out.npy"));
  std::filesystem::remove_all(dir);
}

TEST(CliEval, MisShapedInputNamesTheExpectedShape) {
  auto r = RunDetrain({"eval", (testing::IrTestdata() / "xla_syntax.hlo").string(), "--input",
                       "x=" + Case("in/p0.npy"), "--input", "bias=" + Case("in/p0.npy")});
  EXPECT_EQ(r.exit_code, 2);  // x is f32[4,6], the module wants f32[2,3]
  EXPECT_NE(r.err.find("parameter 'x' expects f32[2,3]"), std::string::npos) << r.err;
}

TEST(CliEval, BadInputsExit2WithAClearMessage) {
  std::string m = Case("module.hlo");
  std::string x = "x=" + Case("in/p0.npy"), n = "n=" + Case("in/p1.npy"),
              i = "i=" + Case("in/p2.npy");
  auto missing = RunDetrain({"eval", m, "--input", x, "--input", n});
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_NE(missing.err.find("missing --input for parameter 2 'i' (s32[])"), std::string::npos)
      << missing.err;
  auto extra = RunDetrain({"eval", m, "--input", x, "--input", n, "--input", i, "--input",
                           "bogus=" + Case("in/p2.npy")});
  EXPECT_EQ(extra.exit_code, 2);
  EXPECT_NE(extra.err.find("--input bogus matches no parameter"), std::string::npos) << extra.err;
  auto shaped =
      RunDetrain({"eval", m, "--input", "x=" + Case("in/p1.npy"), "--input", n, "--input", i});
  EXPECT_EQ(shaped.exit_code, 2);
  EXPECT_NE(shaped.err.find("parameter 'x' expects f32[4,6]"), std::string::npos) << shaped.err;
  auto twice = RunDetrain({"eval", m, "--input", x, "--input", x});
  EXPECT_EQ(twice.exit_code, 2);
  auto not_npy = RunDetrain({"eval", m, "--input", "x=" + m, "--input", n, "--input", i});
  EXPECT_EQ(not_npy.exit_code, 2);
  EXPECT_NE(not_npy.err.find("not an .npy file"), std::string::npos) << not_npy.err;
  auto bad_hlo = RunDetrain({"eval", (testing::IrTestdata() / "invalid/unknown_op.hlo").string()});
  EXPECT_EQ(bad_hlo.exit_code, 2);
  EXPECT_NE(bad_hlo.err.find("unknown_op.hlo:6:19: unknown or unsupported op 'foo'"),
            std::string::npos)
      << bad_hlo.err;
}

TEST(CliEval, PrintsResultsWhenNoOutputDirIsGiven) {
  std::string dir = testing::MakeTempDir();
  std::string hlo = dir + "/t.hlo";
  {
    std::ofstream(hlo)
        << "HloModule t\n\nENTRY main {\n  ROOT c = f32[2] iota(), iota_dimension=0\n}\n";
  }
  auto r = RunDetrain({"eval", hlo});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "out = f32[2] {0, 1}\n");
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace detrain
