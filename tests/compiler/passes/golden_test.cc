// Golden text tests for every pass (STYLE.md point 5). Each testdata/*.hlo file holds, in one
// file, the input module, the pass list and the expected canonical output:
//
//   // passes: simplify,cse          <- the pipeline spec to run
//   // replicas: 2                   <- optional: replicas for the interpreter check (default 1)
//   HloModule m ...                   <- the input module (any text the parser takes)
//   // expected:
//   // HloModule m                    <- the expected canonical text, each line behind "// "
//
// The parser treats `//` lines as comments, so the file itself parses as the input. Every
// golden input is also checked on the interpreter: the output computes the same bits.
// To regenerate after a reviewed behaviour change, run the test with
// DETRAIN_REGENERATE_GOLDEN=1 (test-only; rewrites the `// expected:` block) and review the
// diff like code.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <sstream>

#include "base/file_io.h"
#include "compiler/ir/printer.h"
#include "compiler/ir/verifier.h"
#include "compiler/passes/pipeline.h"
#include "pass_test_util.h"

namespace detrain::passes {
namespace {

namespace fs = std::filesystem;

struct GoldenFile {
  std::string spec, input, expected;
  int replicas = 1;
};

GoldenFile Split(const std::string& text) {
  GoldenFile g;
  std::istringstream in(text);
  std::string line;
  bool in_expected = false;
  while (std::getline(in, line)) {
    if (line.rfind("// passes: ", 0) == 0) {
      g.spec = line.substr(11);
    } else if (line.rfind("// replicas: ", 0) == 0) {
      g.replicas = std::stoi(line.substr(13));
    } else if (line == "// expected:") {
      in_expected = true;
    } else if (in_expected) {
      g.expected += (line.rfind("// ", 0) == 0 ? line.substr(3) : line == "//" ? "" : line) + "\n";
    } else {
      g.input += line + "\n";
    }
  }
  return g;
}

std::vector<fs::path> GoldenFiles() {
  std::vector<fs::path> files;
  for (const auto& e :
       fs::directory_iterator(fs::path(DETRAIN_SOURCE_DIR) / "tests/compiler/passes/testdata")) {
    if (e.path().extension() == ".hlo") files.push_back(e.path());
  }
  std::sort(files.begin(), files.end());
  return files;
}

TEST(PassGolden, EveryFileMatchesItsExpectedOutput) {
  auto files = GoldenFiles();
  ASSERT_GE(files.size(), KnownPasses().size());
  for (const fs::path& path : files) {
    SCOPED_TRACE(path.filename().string());
    auto text = ReadFile(path.string());
    ASSERT_TRUE(text.ok());
    GoldenFile g = Split(*text);
    ASSERT_FALSE(g.spec.empty()) << "no '// passes: ' line";
    auto input = ir::ParseAndVerify(g.input);
    ASSERT_TRUE(input.ok()) << input.status().message();
    auto result = RunPipeline(**input, g.spec, {});
    ASSERT_TRUE(result.ok()) << result.status().message();
    auto actual = ir::PrintModule(*result->module);
    ASSERT_TRUE(actual.ok());
    if (std::getenv("DETRAIN_REGENERATE_GOLDEN") != nullptr) {
      std::string out = text->substr(0, text->find("// expected:\n")) + "// expected:\n";
      std::istringstream lines(*actual);
      std::string line;
      while (std::getline(lines, line)) out += line.empty() ? "//\n" : "// " + line + "\n";
      ASSERT_TRUE(WriteFileAtomic(path.string(), out).ok());
      continue;
    }
    EXPECT_EQ(*actual, g.expected);
    std::string error;
    auto before = testing::EvaluateRandom(**input, 7, g.replicas, &error);
    ASSERT_FALSE(before.empty()) << error;
    auto after = testing::EvaluateRandom(*result->module, 7, g.replicas, &error);
    ASSERT_FALSE(after.empty()) << error;
    ASSERT_EQ(before.size(), after.size());
    for (size_t r = 0; r < before.size(); ++r)
      EXPECT_TRUE(before[r].BitwiseEqual(after[r])) << "replica " << r;
  }
}

TEST(PassGolden, EveryPassHasAGoldenFile) {
  std::string all;
  for (const fs::path& path : GoldenFiles()) all += Split(*ReadFile(path.string())).spec + ",";
  for (const std::string& pass : KnownPasses()) {
    EXPECT_NE(all.find(pass + ","), std::string::npos) << "no golden test runs " << pass;
  }
}

}  // namespace
}  // namespace detrain::passes
