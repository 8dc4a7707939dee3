// Property: for random modules, print -> parse -> print is the identity byte for byte, the
// reparsed module verifies, and it computes bit for bit what the original computes. The
// modules use every op family and element type (all-reduce included, evaluated on one replica).
#include <gtest/gtest.h>

#include "compiler/interp/interpreter.h"
#include "compiler/ir/printer.h"
#include "compiler/ir/verifier.h"
#include "compiler/testing/random_module.h"

namespace detrain::ir {
namespace {

TEST(RoundTripProperty, PrintParsePrintIsIdentityOnRandomModules) {
  int nontrivial = 0;
  for (uint64_t seed = 1; seed <= 300; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    auto module = testing::RandomModule(seed, testing::RandomModuleOptions::Replicated());
    ASSERT_NE(module, nullptr);
    ASSERT_TRUE(VerifyModule(*module).ok()) << VerifyModule(*module).message();
    auto text = PrintModule(*module);
    ASSERT_TRUE(text.ok());
    auto reparsed = ParseAndVerify(*text);
    ASSERT_TRUE(reparsed.ok()) << reparsed.status().message() << "\n" << *text;
    auto text2 = PrintModule(**reparsed);
    ASSERT_TRUE(text2.ok());
    ASSERT_EQ(*text2, *text);
    auto args = testing::RandomArguments(*module, seed);
    auto a = interp::Evaluate(*module, args);
    auto b = interp::Evaluate(**reparsed, args);
    ASSERT_TRUE(a.ok() && b.ok());
    EXPECT_TRUE(a->BitwiseEqual(*b));
    nontrivial += module->entry()->instructions().size() > 8;
  }
  EXPECT_GT(nontrivial, 100);
}

TEST(RoundTripProperty, RandomModulesAreReproducibleFromTheSeed) {
  auto a = testing::RandomModule(42);
  auto b = testing::RandomModule(42);
  EXPECT_EQ(*PrintModule(*a), *PrintModule(*b));
  EXPECT_NE(*PrintModule(*a), *PrintModule(*testing::RandomModule(43)));
}

}  // namespace
}  // namespace detrain::ir
