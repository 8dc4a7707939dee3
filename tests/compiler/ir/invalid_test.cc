// Invalid IR: every testdata/invalid/*.hlo holds one line `// expected-error@+N: TEXT`; parsing
// and verifying the file must fail with an error located on the line N below the comment
// whose message contains TEXT (docs/ir.md "Test files").
#include <gtest/gtest.h>

#include <cctype>

#include "compiler/ir/verifier.h"
#include "test_util.h"

namespace detrain::ir {
namespace {

struct Expectation {
  int line = 0;
  std::string text;
};

Expectation FindExpectation(const std::string& source) {
  std::istringstream lines(source);
  std::string line;
  int number = 0;
  const std::string marker = "// expected-error@+";
  while (std::getline(lines, line)) {
    ++number;
    size_t pos = line.find(marker);
    if (pos == std::string::npos) continue;
    size_t colon = line.find(':', pos);
    int offset = std::stoi(line.substr(pos + marker.size(), colon - pos - marker.size()));
    return {number + offset, line.substr(colon + 2)};
  }
  return {};
}

TEST(InvalidIr, EachFileFailsWithTheExpectedErrorOnTheExpectedLine) {
  auto files = testing::FilesEndingWith(testing::IrTestdata() / "invalid", ".hlo");
  ASSERT_GE(files.size(), 30u);
  for (const auto& file : files) {
    SCOPED_TRACE(file.filename().string());
    std::string source = testing::ReadTextFile(file);
    Expectation want = FindExpectation(source);
    ASSERT_GT(want.line, 0) << "no // expected-error@+N: line";
    auto module = ParseAndVerify(source);
    ASSERT_FALSE(module.ok()) << "the file was accepted";
    const std::string& message = module.status().message();
    EXPECT_EQ(message.substr(0, message.find(':')), std::to_string(want.line)) << message;
    EXPECT_NE(message.find(want.text), std::string::npos) << message;
  }
}

}  // namespace
}  // namespace detrain::ir

namespace detrain::ir {
namespace {

// Malformed input of every kind (SQLite's rule): every prefix of a valid module, and the module
// with single bytes replaced, must parse or fail with a located message — never crash.
// Parsing `input` either succeeds or fails with a located error (or one about the module as a
// whole); never a crash.
void ExpectCleanResult(const std::string& input) {
  auto module = ParseAndVerify(input);
  if (module.ok()) return;
  const std::string& m = module.status().message();
  bool located = !m.empty() && std::isdigit(static_cast<unsigned char>(m[0]));
  EXPECT_TRUE(located || m.find("ENTRY") != std::string::npos ||
              m.find("cycle") != std::string::npos || m.find("recursion") != std::string::npos)
      << m;
}

// Every prefix of `text`, and `text` with each character replaced in turn.
void ExpectTruncatedAndCorruptedFailCleanly(const std::string& text) {
  for (size_t n = 0; n < text.size(); ++n) ExpectCleanResult(text.substr(0, n));
  const char kReplacements[] = {'(', ')', '{', '}', ',',  '=', '0',
                                '9', 'x', '%', '"', '\n', '-', '['};
  for (size_t i = 0; i < text.size(); ++i) {
    std::string corrupted = text;
    corrupted[i] = kReplacements[i % sizeof(kReplacements)];
    ExpectCleanResult(corrupted);
  }
}

TEST(InvalidIr, TruncatedAndCorruptedModulesFailCleanly) {
  std::string text = testing::ReadTextFile(testing::IrTestdata() / "all_ops.canonical.hlo");
  ASSERT_GT(text.size(), 1000u);
  ExpectTruncatedAndCorruptedFailCleanly(text);
  EXPECT_FALSE(
      ParseAndVerify("HloModule m\nENTRY e {\n  ROOT c = f32[99999999999999] constant(0)\n}\n")
          .ok());
  EXPECT_FALSE(
      ParseAndVerify("HloModule m\nENTRY e {\n  ROOT c = f32[100000,100000] constant(0)\n}\n")
          .ok());
}

// bf16 and f16 text (half_types.cc runs before the verifier, on whatever the parser accepted):
// truncated and corrupted, nested 65 tuples deep, sized past int64, operands missing.
TEST(InvalidIr, HalfTypedModulesFailCleanly) {
  std::string text = testing::ReadTextFile(testing::IrTestdata() / "half_types.hlo");
  ASSERT_GT(text.size(), 400u);
  ExpectTruncatedAndCorruptedFailCleanly(text);
  std::string deep = "bf16[]";
  for (int i = 0; i < 65; ++i) deep = "(" + deep + ")";
  auto nested = ParseAndVerify("HloModule m\nENTRY e {\n  ROOT p = " + deep + " parameter(0)\n}\n");
  ASSERT_FALSE(nested.ok());
  EXPECT_NE(nested.status().message().find("nests deeper than 64"), std::string::npos)
      << nested.status().message();
  EXPECT_FALSE(ParseAndVerify("HloModule m\nENTRY e {\n  ROOT p = f16[9223372036854775808] "
                              "parameter(0)\n}\n")
                   .ok());
  EXPECT_FALSE(ParseAndVerify("HloModule m\nENTRY e {\n  ROOT p = bf16[4611686018427387904,4] "
                              "parameter(0)\n}\n")
                   .ok());
  for (const char* op : {"round-to-bf16()", "add()", "select()", "compare(), direction=EQ",
                         "bitcast-convert()", "reduce(), dimensions={0}"}) {
    SCOPED_TRACE(op);
    ExpectCleanResult(std::string("HloModule m\nENTRY e {\n  x = bf16[2] parameter(0)\n  ROOT y = "
                                  "bf16[2] ") +
                      op + "\n}\n");
  }
}

}  // namespace
}  // namespace detrain::ir
