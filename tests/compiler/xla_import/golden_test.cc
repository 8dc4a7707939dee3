// Golden canonical text of imported XLA text: testdata/X.hlo must import as exactly
// testdata/X.canonical.hlo, and the real JAX modules under
// tests/compiler/interp/testdata/jax/NAME/module.hlo as testdata/jax_NAME.canonical.hlo. Each
// golden is canonical text, which the IR's own parser reads back to itself (no XLA hooks needed);
// and the IR's goldens import exactly as the IR's parser reads them. A golden change is a
// behaviour change (STYLE.md point 5): it changes every fingerprint. Regenerate one with
// `detrain compile X.hlo > X.canonical.hlo` and review the diff.
#include <gtest/gtest.h>

#include "../ir/test_util.h"
#include "compiler/ir/printer.h"
#include "compiler/ir/verifier.h"
#include "compiler/xla_import/import.h"

namespace detrain::xla_import {
namespace {

using testing::FilesEndingWith;
using testing::ReadTextFile;

// The canonical text of `text` read by `parse`; "" (and a test failure) on an error.
template <typename Parse>
std::string Canonical(Parse parse, const std::string& text) {
  auto module = parse(text);
  EXPECT_TRUE(module.ok()) << module.status().message();
  if (!module.ok()) return "";
  auto printed = ir::PrintModule(**module);
  EXPECT_TRUE(printed.ok());
  return printed.ok() ? *printed : "";
}

std::string Imported(const std::string& text) { return Canonical(&ParseAndVerifyHloText, text); }

void ExpectGolden(const std::filesystem::path& input, const std::filesystem::path& golden) {
  SCOPED_TRACE(input.string());
  std::string expected = ReadTextFile(golden);
  ASSERT_FALSE(expected.empty()) << "missing golden " << golden;
  EXPECT_EQ(Imported(ReadTextFile(input)), expected);
  EXPECT_EQ(Canonical(&ir::ParseAndVerify, expected), expected)
      << "the golden must be a fixed point of the IR's own parser";
}

TEST(XlaGolden, HandWrittenModules) {
  int checked = 0;
  for (const auto& input : FilesEndingWith(testing::XlaImportTestdata(), ".hlo")) {
    std::string name = input.filename().string();
    if (name.find(".canonical.") != std::string::npos) continue;
    ExpectGolden(input, input.parent_path() / (input.stem().string() + ".canonical.hlo"));
    ++checked;
  }
  EXPECT_GE(checked, 1);
}

TEST(XlaGolden, JaxExportedModules) {
  int checked = 0;
  for (const auto& entry : std::filesystem::directory_iterator(testing::JaxTestdata())) {
    if (!entry.is_directory()) continue;
    ExpectGolden(entry.path() / "module.hlo",
                 testing::XlaImportTestdata() /
                     ("jax_" + entry.path().filename().string() + ".canonical.hlo"));
    ++checked;
  }
  EXPECT_EQ(checked, 12);
}

// The importer only adds to the IR's parser: what the IR reads, it reads the same.
TEST(XlaGolden, TheIrsModulesImportAsTheIrReadsThem) {
  int checked = 0;
  for (const auto& input : FilesEndingWith(testing::IrTestdata(), ".hlo")) {
    SCOPED_TRACE(input.string());
    const std::string text = ReadTextFile(input);
    EXPECT_EQ(Imported(text), Canonical(&ir::ParseAndVerify, text));
    ++checked;
  }
  EXPECT_GE(checked, 6);
}

}  // namespace
}  // namespace detrain::xla_import
