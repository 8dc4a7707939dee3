// Golden canonical text: testdata/X.hlo, read by the IR's own parser, must print exactly as
// testdata/X.canonical.hlo. (Text that needs XLA's constructs, and the real JAX modules, are the
// importer's goldens: tests/compiler/xla_import/golden_test.cc.) A golden change is a behaviour
// change (STYLE.md point 5): it changes every fingerprint. Regenerate one with
// `detrain compile X.hlo > X.canonical.hlo` and review the diff.
#include <gtest/gtest.h>

#include <set>

#include "compiler/ir/printer.h"
#include "compiler/ir/verifier.h"
#include "test_util.h"

namespace detrain::ir {
namespace {

using testing::FilesEndingWith;
using testing::ReadTextFile;

std::string Canonical(const std::string& text) {
  auto module = ParseAndVerify(text);
  EXPECT_TRUE(module.ok()) << module.status().message();
  if (!module.ok()) return "";
  auto printed = PrintModule(**module);
  EXPECT_TRUE(printed.ok());
  return printed.ok() ? *printed : "";
}

void ExpectGolden(const std::filesystem::path& input, const std::filesystem::path& golden) {
  SCOPED_TRACE(input.string());
  std::string expected = ReadTextFile(golden);
  ASSERT_FALSE(expected.empty()) << "missing golden " << golden;
  EXPECT_EQ(Canonical(ReadTextFile(input)), expected);
  EXPECT_EQ(Canonical(expected), expected) << "the golden itself must be a fixed point";
}

TEST(Golden, HandWrittenModules) {
  auto inputs = FilesEndingWith(testing::IrTestdata(), ".hlo");
  int checked = 0;
  for (const auto& input : inputs) {
    std::string name = input.filename().string();
    if (name.find(".canonical.") != std::string::npos) continue;
    ExpectGolden(input, input.parent_path() / (input.stem().string() + ".canonical.hlo"));
    ++checked;
  }
  EXPECT_GE(checked, 2);
}

TEST(Golden, FingerprintIsSha256OfCanonicalText) {
  auto module = ParseAndVerify(ReadTextFile(testing::IrTestdata() / "xla_syntax.hlo"));
  ASSERT_TRUE(module.ok());
  auto fp = ModuleFingerprint(**module);
  ASSERT_TRUE(fp.ok());
  EXPECT_EQ(fp->size(), 64u);
  auto reparsed = ParseAndVerify(ReadTextFile(testing::IrTestdata() / "xla_syntax.canonical.hlo"));
  ASSERT_TRUE(reparsed.ok());
  EXPECT_EQ(*ModuleFingerprint(**reparsed), *fp);
}

TEST(Golden, AllOpsModuleCoversTheWholeOpTable) {
  auto module = ParseAndVerify(ReadTextFile(testing::IrTestdata() / "all_ops.hlo"));
  ASSERT_TRUE(module.ok()) << module.status().message();
  std::set<Opcode> seen;
  for (const auto& c : (*module)->computations()) {
    for (const auto& instr : c->instructions()) seen.insert(instr->opcode);
  }
  for (Opcode op : AllOpcodes())
    EXPECT_TRUE(seen.count(op)) << OpcodeName(op) << " is missing from all_ops.hlo";
}

}  // namespace
}  // namespace detrain::ir
