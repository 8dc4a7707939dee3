// `detrain math`, run as a user runs it (the built binary): output format, decimal and bit
// pattern inputs, pow pairs, and every kind of bad argument (exit code 2, message naming it).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "cli/cli_runner.h"

namespace detrain::testing {
namespace {

TEST(MathCliTest, ExpOfOneAsDecimalAndBits) {
  CliResult r = RunDetrain({"math", "exp", "1", "0x3f800000"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["function"], "exp");
  ASSERT_EQ(j["results"].size(), 2u);
  for (const auto& e : j["results"]) {
    EXPECT_EQ(e["input"], "0x3f800000");
    EXPECT_EQ(e["output"], "0x402df854");  // e rounded to float32
    EXPECT_EQ(e["value"], "2.7182817");
  }
}

TEST(MathCliTest, DecimalsAreRoundedCorrectlyAndValuesRoundTrip) {
  // 0.1 -> 0x3dcccccd (nearest float); log2(0.125) = -3 exactly.
  CliResult r = RunDetrain({"math", "log2", "0.125", "-0", "inf", "nan", "1e-45", "0.1"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  nlohmann::json j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j["results"].size(), 6u);
  EXPECT_EQ(j["results"][0]["output"], "0xc0400000");
  EXPECT_EQ(j["results"][0]["value"], "-3");
  EXPECT_EQ(j["results"][1]["input"], "0x80000000");
  EXPECT_EQ(j["results"][1]["value"], "-inf");
  EXPECT_EQ(j["results"][2]["output"], "0x7f800000");
  EXPECT_EQ(j["results"][4]["input"], "0x00000001");  // 1e-45 rounds to the least subnormal
  EXPECT_EQ(j["results"][4]["value"], "-149");
  EXPECT_EQ(j["results"][5]["input"], "0x3dcccccd");
}

TEST(MathCliTest, PowTakesPairs) {
  CliResult r = RunDetrain({"math", "pow", "9", "0.5", "-2", "3"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["function"], "pow");
  ASSERT_EQ(j["results"].size(), 2u);
  EXPECT_EQ(j["results"][0]["input"], nlohmann::json({"0x41100000", "0x3f000000"}));
  EXPECT_EQ(j["results"][0]["value"], "3");
  EXPECT_EQ(j["results"][1]["value"], "-8");
}

TEST(MathCliTest, EveryFunctionNameWorks) {
  for (const char* f : {"exp", "expm1", "exp2", "log", "log1p", "log2", "tanh", "logistic", "erf",
                        "rsqrt", "erfinv", "sin", "cos"}) {
    CliResult r = RunDetrain({"math", f, "0.5"});
    EXPECT_EQ(r.exit_code, 0) << f << ": " << r.err;
    EXPECT_EQ(nlohmann::json::parse(r.out)["function"], f);
  }
}

TEST(MathCliTest, BadArgumentsExitTwoAndNameTheArgument) {
  struct Bad {
    std::vector<std::string> args;
    std::string mention;
  };
  const Bad bad[] = {
      {{"math", "sinh", "1"}, "sinh"},
      {{"math", "exp", "1.5x"}, "1.5x"},
      {{"math", "exp", "0x3f80"}, "0x3f80"},  // bit pattern needs 8 hex digits
      {{"math", "exp", "0x3f80000g"}, "0x3f80000g"},
      {{"math", "exp", "1", ""}, "''"},
      {{"math", "log", "1e60"}, "1e60"},        // outside the float32 range
      {{"math", "pow", "2", "3", "4"}, "'4'"},  // pairs only
  };
  for (const Bad& b : bad) {
    CliResult r = RunDetrain(b.args);
    EXPECT_EQ(r.exit_code, 2) << b.mention;
    EXPECT_NE(r.err.find(b.mention), std::string::npos) << r.err;
    EXPECT_TRUE(r.out.empty()) << r.out;
  }
  EXPECT_EQ(RunDetrain({"math", "exp"}).exit_code, 2);  // no X
  EXPECT_EQ(RunDetrain({"math"}).exit_code, 2);
}

}  // namespace
}  // namespace detrain::testing
