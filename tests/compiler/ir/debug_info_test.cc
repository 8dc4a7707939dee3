// HLO text printed with debug information (issue 19): the FileNames / FunctionNames /
// FileLocations / StackFrames tables and metadata strings with C escapes. Real exports from JAX
// (tools/export_jax_corpus.py; testdata/jax_debug/NAME/{lowered,lowered_debug}.hlo) parse to the
// same canonical module with and without the debug information — it is kept for people and
// never hashed — and the tables are kept and resolve. Malformed tables and escapes are in
// testdata/invalid (debug_table_*.hlo, string_*.hlo).
#include <gtest/gtest.h>

#include "compiler/ir/parser.h"
#include "compiler/ir/printer.h"
#include "compiler/ir/verifier.h"
#include "test_util.h"

namespace detrain::ir {
namespace {

std::unique_ptr<Module> MustParse(const std::string& text, const std::string& what) {
  auto module = ParseModule(text);
  EXPECT_TRUE(module.ok()) << what << ": " << module.status().message();
  if (!module.ok()) return nullptr;
  Status verified = VerifyModule(**module);
  EXPECT_TRUE(verified.ok()) << what << ": " << verified.message();
  return std::move(*module);
}

TEST(DebugInfo, RealExportsParseToTheSameModuleWithAndWithoutIt) {
  const auto dir = testing::IrTestdata() / "jax_debug";
  int checked = 0;
  for (const char* name : {"mlp_forward", "mlp_sgd_step", "conv2d_grad", "embedding_grad"}) {
    SCOPED_TRACE(name);
    const std::string plain = testing::ReadTextFile(dir / name / "lowered.hlo");
    const std::string debug = testing::ReadTextFile(dir / name / "lowered_debug.hlo");
    ASSERT_NE(debug.find("\nStackFrames\n"), std::string::npos) << "an export with the tables";
    auto a = MustParse(plain, "lowered.hlo");
    auto b = MustParse(debug, "lowered_debug.hlo");
    ASSERT_TRUE(a && b);
    Result<std::string> pa = PrintModule(*a), pb = PrintModule(*b);
    ASSERT_TRUE(pa.ok() && pb.ok());
    EXPECT_EQ(*pa, *pb);
    EXPECT_TRUE(a->debug_tables().empty());
    const DebugTables& t = b->debug_tables();
    ASSERT_FALSE(t.stack_frames.empty());
    // Every frame resolves to a file and line of the exporting script or a library.
    for (const auto& [id, frame] : t.stack_frames) {
      const std::string where = t.Describe(id);
      EXPECT_NE(where.find(".py:"), std::string::npos) << "frame " << id << ": " << where;
    }
    ++checked;
  }
  EXPECT_EQ(checked, 4);
  // The train step's dict parameters carry escaped quotes in their op names.
  EXPECT_NE(testing::ReadTextFile(dir / "mlp_sgd_step" / "lowered_debug.hlo").find("[\\'"),
            std::string::npos);
}

TEST(DebugInfo, EscapesDecodeAndAComputationNamedLikeATableIsAComputation) {
  const std::string text = R"(HloModule t

FileNames
1 "/tmp/a \"quoted\" path\\x.py"

FunctionNames
1 "f\t\101\x42"

FileLocations
1 {file_name_id=1 function_name_id=1 line=7 end_line=7 column=2 end_column=5}

StackFrames
1 {file_location_id=1 parent_frame_id=1}

FileNames {
  ROOT p = f32[] parameter(0)
}

ENTRY main {
  x = f32[] parameter(0), metadata={op_name="p[\'w1\']" stack_frame_id=1}
  ROOT c = f32[] call(x), to_apply=FileNames
}
)";
  auto m = MustParse(text, "inline module");
  ASSERT_TRUE(m);
  const DebugTables& t = m->debug_tables();
  EXPECT_EQ(t.file_names.at(1), "/tmp/a \"quoted\" path\\x.py");
  EXPECT_EQ(t.function_names.at(1), "f\tAB");
  EXPECT_EQ(t.file_locations.at(1).line, 7);
  EXPECT_EQ(t.Describe(1), "/tmp/a \"quoted\" path\\x.py:7 (f\tAB)");
  EXPECT_EQ(t.Describe(2), "");
  EXPECT_EQ(m->computations().size(), 2u);
}

}  // namespace
}  // namespace detrain::ir
