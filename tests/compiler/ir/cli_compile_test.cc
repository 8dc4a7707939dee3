// `detrain compile`: canonical text, stage digests, and errors as FILE:LINE:COLUMN, exit 2.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "attest/sha256.h"
#include "cli/cli_runner.h"
#include "test_util.h"

namespace detrain {
namespace {

using testing::RunDetrain;

std::string Testdata(const std::string& name) { return (testing::IrTestdata() / name).string(); }

TEST(CliCompile, EmitsCanonicalHlo) {
  auto r = RunDetrain({"compile", Testdata("xla_syntax.hlo"), "--emit", "hlo"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, testing::ReadTextFile(Testdata("xla_syntax.canonical.hlo")));
  EXPECT_EQ(RunDetrain({"compile", Testdata("xla_syntax.hlo")}).out, r.out);  // hlo is the default
}

TEST(CliCompile, HashesPrintsOneLinePerStage) {
  auto r = RunDetrain({"compile", Testdata("xla_syntax.hlo"), "--hashes"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::string program = attest::Sha256Hex(testing::ReadTextFile(Testdata("xla_syntax.hlo")));
  std::string hlo = attest::Sha256Hex(testing::ReadTextFile(Testdata("xla_syntax.canonical.hlo")));
  // Stages 0 and 2, then the optimized module (3) and the CPU plan (4).
  EXPECT_EQ(r.out.rfind("stage program sha256:" + program + "\nstage hlo sha256:" + hlo +
                            "\nstage opt-hlo sha256:",
                        0),
            0u)
      << r.out;
  EXPECT_NE(r.out.find("\nstage plan sha256:"), std::string::npos) << r.out;
  auto j = RunDetrain({"compile", Testdata("xla_syntax.canonical.hlo"), "--hashes", "--json"});
  ASSERT_EQ(j.exit_code, 0) << j.err;
  auto json = nlohmann::json::parse(j.out);
  EXPECT_EQ(json["stages"][1]["stage"], "hlo");
  EXPECT_EQ(json["stages"][1]["sha256"], hlo);
  EXPECT_EQ(json["stages"][0]["sha256"], hlo);  // the canonical file is its own canonical form
}

TEST(CliCompile, ParseAndVerifyErrorsAreLocated) {
  std::string parse_error = Testdata("invalid/unknown_op.hlo");
  auto r = RunDetrain({"compile", parse_error});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, parse_error + ":6:19: unknown or unsupported op 'foo'\n");
  EXPECT_EQ(r.out, "");
  std::string verify_error = Testdata("invalid/shape_mismatch.hlo");
  r = RunDetrain({"compile", verify_error});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err.rfind(verify_error + ":7:8: instruction 'y' (add): operands of add", 0), 0u)
      << r.err;
}

TEST(CliCompile, UnsupportedInputsAndStagesExit2) {
  auto dt = RunDetrain({"compile", "/nonexistent/model.dt"});
  EXPECT_EQ(dt.exit_code, 2);
  EXPECT_NE(dt.err.find("/nonexistent/model.dt: no such file"), std::string::npos) << dt.err;
  auto other = RunDetrain({"compile", Testdata("xla_syntax.hlo") + ".txt"});
  EXPECT_EQ(other.exit_code, 2);
  EXPECT_NE(other.err.find("expected a .dt program, HLO text (.hlo) or a run spec (.json)"),
            std::string::npos)
      << other.err;
  auto eval = RunDetrain({"compile", Testdata("xla_syntax.hlo"), "--emit", "eval-plan"});
  EXPECT_EQ(eval.exit_code, 2);
  EXPECT_NE(eval.err.find("has no such stage"), std::string::npos) << eval.err;
  // The CUDA stages of HLO input: PTX where this detrain has NVRTC, else a clear error.
  auto ptx = RunDetrain({"compile", Testdata("xla_syntax.hlo"), "--emit", "ptx"});
  if (ptx.exit_code == 0) {
    EXPECT_NE(ptx.out.find(".target sm_80"), std::string::npos) << ptx.out.substr(0, 400);
  } else {
    EXPECT_EQ(ptx.exit_code, 2);
    EXPECT_NE(ptx.err.find("without the CUDA toolkit"), std::string::npos) << ptx.err;
  }
  EXPECT_EQ(RunDetrain({"compile", Testdata("xla_syntax.hlo"), "--emit", "bogus"}).exit_code, 2);
  auto missing = RunDetrain({"compile", "/nonexistent/x.hlo"});
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_NE(missing.err.find("/nonexistent/x.hlo"), std::string::npos);
}

}  // namespace
}  // namespace detrain
