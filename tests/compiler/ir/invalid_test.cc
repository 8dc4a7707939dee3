// Invalid IR: every testdata/invalid/*.hlo holds one line `// expected-error@+N: TEXT`; parsing
// and verifying the file with the IR's own parser must fail with an error located on the line N
// below the comment whose message contains TEXT (docs/ir.md "Test files"). The files that need
// XLA's constructs are the importer's (tests/compiler/xla_import/invalid_test.cc), which also
// checks that it reports every file here exactly as the IR's parser does.
#include <gtest/gtest.h>

#include "compiler/ir/verifier.h"
#include "invalid_test_util.h"

namespace detrain::ir {
namespace {

using testing::ExpectTruncatedAndCorruptedFailCleanly;

TEST(InvalidIr, EachFileFailsWithTheExpectedErrorOnTheExpectedLine) {
  testing::ExpectEachFileFails(&ParseAndVerify, testing::IrTestdata() / "invalid", 30);
}

// Malformed input of every kind (SQLite's rule): every prefix of a valid module, and the module
// with single bytes replaced, must parse or fail with a located message — never crash.
TEST(InvalidIr, TruncatedAndCorruptedModulesFailCleanly) {
  std::string text = testing::ReadTextFile(testing::IrTestdata() / "all_ops.canonical.hlo");
  ASSERT_GT(text.size(), 1000u);
  ExpectTruncatedAndCorruptedFailCleanly(&ParseAndVerify, text);
  EXPECT_FALSE(
      ParseAndVerify("HloModule m\nENTRY e {\n  ROOT c = f32[99999999999999] constant(0)\n}\n")
          .ok());
  EXPECT_FALSE(
      ParseAndVerify("HloModule m\nENTRY e {\n  ROOT c = f32[100000,100000] constant(0)\n}\n")
          .ok());
}

}  // namespace
}  // namespace detrain::ir
