// Invalid XLA text: every testdata/invalid/*.hlo here holds one line `// expected-error@+N:
// TEXT` (docs/ir.md "Tests"); importing and verifying it must fail with an error located on the
// line N below the comment whose message contains TEXT. The importer reads every file of the
// IR's own invalid tests the same way (it only adds to the IR's parser), and malformed bf16/f16
// text fails cleanly.
#include <gtest/gtest.h>

#include "../ir/invalid_test_util.h"
#include "compiler/xla_import/import.h"

namespace detrain::xla_import {
namespace {

using testing::ExpectCleanResult;
using testing::ExpectTruncatedAndCorruptedFailCleanly;

TEST(InvalidXla, EachFileFailsWithTheExpectedErrorOnTheExpectedLine) {
  testing::ExpectEachFileFails(&ParseAndVerifyHloText, testing::XlaImportTestdata() / "invalid",
                               20);
}

TEST(InvalidXla, TheIrsInvalidFilesFailAsTheyDoThere) {
  testing::ExpectEachFileFails(&ParseAndVerifyHloText, testing::IrTestdata() / "invalid", 30);
}

// bf16 and f16 text (half_types.cc runs before the verifier, on whatever the parser accepted):
// truncated and corrupted, nested 65 tuples deep, sized past int64, operands missing.
TEST(InvalidXla, HalfTypedModulesFailCleanly) {
  std::string text = testing::ReadTextFile(testing::XlaImportTestdata() / "half_types.hlo");
  ASSERT_GT(text.size(), 400u);
  ExpectTruncatedAndCorruptedFailCleanly(&ParseAndVerifyHloText, text);
  std::string deep = "bf16[]";
  for (int i = 0; i < 65; ++i) deep = "(" + deep + ")";
  auto nested =
      ParseAndVerifyHloText("HloModule m\nENTRY e {\n  ROOT p = " + deep + " parameter(0)\n}\n");
  ASSERT_FALSE(nested.ok());
  EXPECT_NE(nested.status().message().find("nests deeper than 64"), std::string::npos)
      << nested.status().message();
  EXPECT_FALSE(ParseAndVerifyHloText("HloModule m\nENTRY e {\n  ROOT p = f16[9223372036854775808] "
                                     "parameter(0)\n}\n")
                   .ok());
  EXPECT_FALSE(
      ParseAndVerifyHloText("HloModule m\nENTRY e {\n  ROOT p = bf16[4611686018427387904,4] "
                            "parameter(0)\n}\n")
          .ok());
  for (const char* op : {"round-to-bf16()", "add()", "select()", "compare(), direction=EQ",
                         "bitcast-convert()", "reduce(), dimensions={0}"}) {
    SCOPED_TRACE(op);
    ExpectCleanResult(&ParseAndVerifyHloText,
                      std::string("HloModule m\nENTRY e {\n  x = bf16[2] parameter(0)\n  ROOT y = "
                                  "bf16[2] ") +
                          op + "\n}\n");
  }
}

}  // namespace
}  // namespace detrain::xla_import
