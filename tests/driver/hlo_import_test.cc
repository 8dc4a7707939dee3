// The HLO import path: XLA-style text becomes stage 0 as given and stage 2 canonical, then
// stages 3 and 4; every entry parameter is an input of one shard; errors name the file.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "compiler/ir/printer.h"
#include "compiler/ir/verifier.h"
#include "driver/compile.h"
#include "driver/dump.h"
#include "test_util.h"

namespace detrain::driver {
namespace {

const std::string kXla = test::kRoot + "/tests/compiler/ir/testdata/xla_syntax.hlo";

TEST(HloImportTest, StagesOfXlaText) {
  Result<CompileResult> c = Compile(kXla, {});
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(c->program_kind, driver::ProgramKind::kHlo);
  EXPECT_FALSE(c->config.has_value());
  std::vector<std::string> names, files;
  for (const StageRecord& r : c->stages.records()) {
    names.push_back(r.name);
    files.push_back(r.file_name);
  }
  EXPECT_EQ(names, (std::vector<std::string>{"program", "hlo", "opt-hlo", "plan"}));
  EXPECT_EQ(files, (std::vector<std::string>{"00.program.hlo", "02.hlo.hlo", "03.opt-hlo.hlo",
                                             "04.plan.pb"}));
  const StageRecord& program = *c->stages.Find(kStageProgram);
  const StageRecord& hlo = *c->stages.Find(kStageHlo);
  EXPECT_EQ(program.bytes, test::Slurp(kXla));
  EXPECT_EQ(hlo.transform.name, "canonicalize-hlo");
  EXPECT_EQ(hlo.transform.input_sha256, program.sha256);
  EXPECT_EQ(c->stages.Find(kStageOptHlo)->transform.input_sha256, hlo.sha256);
  // Stage 2 is the canonical text: it prints back to itself.
  Result<std::unique_ptr<ir::Module>> m = ir::ParseAndVerify(hlo.bytes);
  ASSERT_TRUE(m.ok()) << m.status().message();
  EXPECT_EQ(*ir::PrintModule(**m), hlo.bytes);
  EXPECT_EQ(c->signature.shards, 1);
  EXPECT_EQ(c->signature.roles, std::vector<plan::ParamRole>((*m)->entry()->Parameters().size(),
                                                             plan::ParamRole::kInput));
  EXPECT_EQ(c->signature.roles.size(), 2u);
}

TEST(HloImportTest, FrontOnlyAndCanonicalInputGiveTheSameStageTwo) {
  CompileOptions front_only;
  front_only.backend = false;
  Result<CompileResult> c = Compile(kXla, front_only);
  ASSERT_TRUE(c.ok()) << c.status().message();
  ASSERT_EQ(c->stages.records().size(), 2u);
  std::string dir = ::testing::TempDir() + "/hlo_import";
  std::filesystem::create_directories(dir);
  std::ofstream(dir + "/canonical.hlo") << c->stages.Find(kStageHlo)->bytes;
  Result<CompileResult> again = Compile(dir + "/canonical.hlo", {});
  ASSERT_TRUE(again.ok()) << again.status().message();
  EXPECT_EQ(again->stages.Find(kStageHlo)->sha256, c->stages.Find(kStageHlo)->sha256);
  Result<CompileResult> full = Compile(kXla, {});
  ASSERT_TRUE(full.ok());
  EXPECT_EQ(again->stages.Find(kStagePlan)->sha256, full->stages.Find(kStagePlan)->sha256);
}

TEST(HloImportTest, ErrorsNameTheFile) {
  std::string dir = ::testing::TempDir() + "/hlo_import_bad";
  std::filesystem::create_directories(dir);
  std::ofstream(dir + "/bad.hlo") << "HloModule m\nENTRY e {\n  ROOT x = f32[] frobnicate()\n}\n";
  Result<CompileResult> c = Compile(dir + "/bad.hlo", {});
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().message().rfind(dir + "/bad.hlo:3:", 0), 0u) << c.status().message();
  Result<CompileResult> missing = Compile(dir + "/missing.hlo", {});
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("missing.hlo"), std::string::npos);
}

TEST(DumpTest, DumpDirHoldsEveryStageAndTheSummary) {
  Result<CompileResult> c = Compile(kXla, {});
  ASSERT_TRUE(c.ok()) << c.status().message();
  std::string dir = ::testing::TempDir() + "/driver_dump";
  std::filesystem::remove_all(dir);
  ASSERT_TRUE(WriteDumpDir(dir, *c, "given/path.hlo").ok());
  for (const StageRecord& r : c->stages.records())
    EXPECT_EQ(test::Slurp(dir + "/" + r.file_name), r.bytes);
  for (const auto& [name, text] : c->pass_dumps)
    EXPECT_EQ(test::Slurp(dir + "/passes/" + name), text);
  EXPECT_TRUE(std::filesystem::exists(dir + "/" + kPlanTextFile));
  nlohmann::json summary = nlohmann::json::parse(test::Slurp(dir + "/summary.json"));
  EXPECT_EQ(summary, CompileSummary(*c, "given/path.hlo"));
  EXPECT_EQ(summary["file"], "given/path.hlo");
  EXPECT_EQ(summary["stages"].size(), c->stages.records().size());
  EXPECT_EQ(summary["passes"].size(), c->pass_dumps.size());
}

}  // namespace
}  // namespace detrain::driver
