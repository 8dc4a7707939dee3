// Hostile HLO text too big to commit as testdata/invalid files: generated deep nesting, long
// call chains, huge lists and names. Each must fail with a located message (or parse, where
// the input is legal) within a second or so, never overflow the stack or allocate without bound.
// The limits are those of docs/ir.md §3 and §5.
#include <gtest/gtest.h>

#include <chrono>

#include "compiler/interp/interpreter.h"
#include "compiler/ir/printer.h"
#include "compiler/ir/verifier.h"

namespace detrain::ir {
namespace {

std::string Module(const std::string& entry_body, const std::string& before = "") {
  return "HloModule t\n\n" + before + "ENTRY main {\n" + entry_body + "}\n";
}

// The message of a failed ParseAndVerify; "" (and a test failure) if it was accepted.
std::string ErrorOf(const std::string& text) {
  auto start = std::chrono::steady_clock::now();
  auto module = ParseAndVerify(text);
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_LT(seconds, 30.0) << "hostile input took " << seconds << " s";
  EXPECT_FALSE(module.ok()) << "accepted";
  return module.ok() ? "" : module.status().message();
}

std::string NestedTuple(int depth) {
  return std::string(static_cast<size_t>(depth), '(') + "f32[]" +
         std::string(static_cast<size_t>(depth), ')');
}

TEST(HostileHlo, TupleShapesNestAtMostTheLimit) {
  // At the limit: parses, verifies and prints.
  auto ok = ParseAndVerify(Module("  ROOT p = " + NestedTuple(64) + " parameter(0)\n"));
  ASSERT_TRUE(ok.ok()) << ok.status().message();
  EXPECT_TRUE(PrintModule(**ok).ok());
  for (int depth : {65, 100000, 1000000}) {
    SCOPED_TRACE(depth);
    std::string m = ErrorOf(Module("  ROOT p = " + NestedTuple(depth) + " parameter(0)\n"));
    // The 65th '(' is at column 12 + 64 of line 4.
    EXPECT_EQ(m.substr(0, m.find(": ")), "4:76") << m.substr(0, 200);
    EXPECT_NE(m.find("tuple shape nests deeper than 64 levels"), std::string::npos) << m;
  }
}

TEST(HostileHlo, ConstantBracesNestOnlyAsDeepAsTheRank) {
  std::string braces(1000000, '{');
  std::string m = ErrorOf(Module("  ROOT c = f32[1] constant(" + braces + "1})\n"));
  EXPECT_EQ(m.substr(0, m.find(": ")), "4:29") << m.substr(0, 200);
  EXPECT_NE(m.find("expected a constant element value"), std::string::npos) << m;
  // The deepest legal nesting: rank 64.
  std::string dims = "1", values = "0";
  for (int i = 1; i < kMaxRank; ++i) dims += ",1";
  for (int i = 0; i < kMaxRank; ++i) values = "{" + values + "}";
  auto ok = ParseAndVerify(Module("  ROOT c = f32[" + dims + "] constant(" + values + ")\n"));
  ASSERT_TRUE(ok.ok()) << ok.status().message();
  auto value = interp::Evaluate(**ok, {});
  ASSERT_TRUE(value.ok()) << value.status().message();
  EXPECT_EQ(value->element_count(), 1);
}

TEST(HostileHlo, HugeListsAndNamesFailWithShortMessages) {
  std::string zeros = "0";
  for (int i = 1; i < 1000000; ++i) zeros += ",0";
  std::string m =
      ErrorOf(Module("  x = f32[2,3] parameter(0)\n  ROOT t = f32[3,2] transpose(x), "
                     "dimensions={" +
                     zeros + "}\n"));
  EXPECT_EQ(m.substr(0, 2), "5:") << m.substr(0, 200);
  EXPECT_NE(m.find("(1000000 values)"), std::string::npos) << m.substr(0, 200);
  EXPECT_LT(m.size(), 400u);

  std::string name(10 << 20, 'a');  // a 10 MB identifier on a 10 MB line
  auto ok = ParseAndVerify(Module("  ROOT " + name + " = f32[] parameter(0)\n"));
  EXPECT_TRUE(ok.ok()) << ok.status().message().substr(0, 200);
  m = ErrorOf(Module("  ROOT x = f32[] " + name + "(0)\n"));
  EXPECT_EQ(m.substr(0, 5), "4:18:") << m.substr(0, 200);
  EXPECT_LT(m.size(), 400u);
}

TEST(HostileHlo, SliceWithTheLargestStrideHasOneElement) {
  auto module =
      ParseAndVerify(Module("  x = f32[10] parameter(0)\n"
                            "  ROOT s = f32[1] slice(x), slice={[0:10:9223372036854775807]}\n"));
  ASSERT_TRUE(module.ok()) << module.status().message();
  auto out = interp::Evaluate(
      **module,
      {Literal::FromVector<float>(ElementType::kF32, {10}, {7, 1, 2, 3, 4, 5, 6, 7, 8, 9})});
  ASSERT_TRUE(out.ok()) << out.status().message();
  EXPECT_EQ(out->Get<float>(0), 7.0f);
}

// `n` computations c0 .. c{n-1}, each adding its parameter to itself and calling the next
// `calls` times; the last returns its parameter. ENTRY calls c0.
std::string CallChain(int n, int calls, const std::string& op = "call") {
  std::string text = "HloModule chain\n\n";
  for (int i = n - 1; i >= 0; --i) {
    std::string c = "c" + std::to_string(i);
    text += c + " {\n  p = f32[] parameter(0)\n";
    if (i == n - 1) {
      text += "  ROOT a = f32[] add(p, p)\n}\n\n";
      continue;
    }
    std::string attr = op == "call" ? "to_apply=c" : "kind=kLoop, calls=c";
    std::string sum = "p";
    for (int k = 0; k < calls; ++k) {
      std::string r = "r" + std::to_string(k);
      text += "  " + r + " = f32[] " + op + "(" + sum + "), " + attr + std::to_string(i + 1) + "\n";
      sum = r;
    }
    text += "  ROOT a = f32[] add(" + sum + ", p)\n}\n\n";
  }
  text += "ENTRY main {\n  x = f32[] parameter(0)\n  ROOT y = f32[] call(x), to_apply=c0\n}\n";
  return text;
}

TEST(HostileHlo, CallChainsAreLimitedInDepth) {
  // ENTRY plus 255 computations: depth 256, the limit. Verifies, prints and evaluates.
  auto ok = ParseAndVerify(CallChain(static_cast<int>(kMaxCallDepth) - 1, 1));
  ASSERT_TRUE(ok.ok()) << ok.status().message();
  EXPECT_TRUE(ModuleFingerprint(**ok).ok());
  auto value = interp::Evaluate(**ok, {Literal::Scalar<float>(ElementType::kF32, 1.0f)});
  ASSERT_TRUE(value.ok()) << value.status().message();
  for (int n : {static_cast<int>(kMaxCallDepth), 50000}) {
    SCOPED_TRACE(n);
    std::string m = ErrorOf(CallChain(n, 1));
    EXPECT_NE(m.find("calls nest deeper than 256 levels"), std::string::npos) << m;
    EXPECT_TRUE(std::isdigit(static_cast<unsigned char>(m[0]))) << m;  // located
  }
  std::string m = ErrorOf(CallChain(50000, 1, "fusion"));
  EXPECT_NE(m.find("calls nest deeper than 256 levels"), std::string::npos) << m;
}

TEST(HostileHlo, CallGraphsThatExpandExponentiallyAreRejected) {
  // Each computation calls the next twice: 2^40 instructions once inlined.
  std::string m = ErrorOf(CallChain(40, 2));
  EXPECT_NE(m.find("expand to more than 4194304 instructions"), std::string::npos) << m;
  EXPECT_TRUE(std::isdigit(static_cast<unsigned char>(m[0]))) << m;
  // 2^12 is fine, and evaluates.
  auto ok = ParseAndVerify(CallChain(12, 2));
  ASSERT_TRUE(ok.ok()) << ok.status().message();
  EXPECT_TRUE(interp::Evaluate(**ok, {Literal::Scalar<float>(ElementType::kF32, 1.0f)}).ok());
}

TEST(HostileHlo, ManyComputationsCalledOnceAreFine) {
  // 20 000 computations, each called by ENTRY directly (wide, not deep).
  std::string text = "HloModule wide\n\n";
  const int n = 20000;
  for (int i = 0; i < n; ++i) {
    text +=
        "c" + std::to_string(i) + " {\n  p = f32[] parameter(0)\n  ROOT n = f32[] negate(p)\n}\n";
  }
  text += "ENTRY main {\n  x = f32[] parameter(0)\n";
  std::string last = "x";
  for (int i = 0; i < n; ++i) {
    std::string r = "r" + std::to_string(i);
    text += "  " + r + " = f32[] call(" + last + "), to_apply=c" + std::to_string(i) + "\n";
    last = r;
  }
  text += "  ROOT y = f32[] negate(" + last + ")\n}\n";
  auto ok = ParseAndVerify(text);
  ASSERT_TRUE(ok.ok()) << ok.status().message();
  EXPECT_TRUE(ModuleFingerprint(**ok).ok());
  auto value = interp::Evaluate(**ok, {Literal::Scalar<float>(ElementType::kF32, 2.0f)});
  ASSERT_TRUE(value.ok()) << value.status().message();
  EXPECT_EQ(value->Get<float>(0), -2.0f);  // 20 001 negations
}

TEST(HostileHlo, LongOperandChainsAreIterative) {
  const int n = 100000;
  std::string body = "  v0 = f32[] parameter(0)\n";
  for (int i = 1; i <= n; ++i) {
    body += "  v" + std::to_string(i) + " = f32[] negate(v" + std::to_string(i - 1) + ")\n";
  }
  auto ok = ParseAndVerify(Module(body));
  ASSERT_TRUE(ok.ok()) << ok.status().message();
  EXPECT_TRUE(ModuleFingerprint(**ok).ok());
  auto value = interp::Evaluate(**ok, {Literal::Scalar<float>(ElementType::kF32, 3.0f)});
  ASSERT_TRUE(value.ok()) << value.status().message();
  EXPECT_EQ(value->Get<float>(0), 3.0f);  // an even number of negations
}

TEST(HostileHlo, AnUnterminatedCommentIsReportedWhereItStarts) {
  std::string m = ErrorOf(Module("  ROOT x = f32[2] parameter(0) /* never closed\n"));
  EXPECT_EQ(m, "4:32: unterminated /* comment");
  m = ErrorOf(Module("  ROOT x = f32[2] parameter(0)\n") + "/*");
  EXPECT_EQ(m, "6:1: unterminated /* comment");
  EXPECT_TRUE(ParseAndVerify(Module("  ROOT x = f32[2] parameter(0)\n") + "/**/").ok());
}

}  // namespace
}  // namespace detrain::ir
