// Golden text tests of the CUDA code generator (STYLE.md point 5): each testdata/NAME.hlo, through
// the default pipeline and the plan, gives exactly testdata/NAME.cu.txt — but the device headers'
// digests, which the header comment lists and which change with any edit of a header (written
// as "sha256 ..." in the goldens; cuda_toolchain_test and the stage digests cover them). Each
// golden module is also run on the host emulator against the interpreter, so a golden records
// code that computes the right bits.
//
// To regenerate after a reviewed change: DETRAIN_REGENERATE_GOLDEN=1 (test-only), then review
// the diff like code.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>

#include "base/file_io.h"
#include "compiler/codegen/cuda/cuda_program.h"
#include "compiler/interp/interpreter.h"
#include "compiler/ir/verifier.h"
#include "compiler/passes/pipeline.h"
#include "compiler/plan/builder.h"
#include "compiler/testing/random_module.h"
#include "runtime/executor.h"
#include "runtime/runtime_test_util.h"
#include "tests/compiler/codegen/cuda/emulator.h"

namespace detrain::codegen::cuda {
namespace {

namespace fs = std::filesystem;

std::string WithoutHeaderDigests(const std::string& text) {
  static const std::regex digest(R"(^(//   \S+) sha256 [0-9a-f]{64}$)", std::regex::multiline);
  return std::regex_replace(text, digest, "$1 sha256 ...");
}

class CudaGolden : public ::testing::TestWithParam<std::string> {};

TEST_P(CudaGolden, SourceIsTheGolden) {
  const fs::path dir = fs::path(DETRAIN_SOURCE_DIR) / "tests/compiler/codegen/cuda/testdata";
  auto text = ReadFile((dir / (GetParam() + ".hlo")).string());
  ASSERT_TRUE(text.ok()) << text.status().message();
  auto module = ir::ParseAndVerify(*text);
  ASSERT_TRUE(module.ok()) << module.status().message();
  auto plan = runtime::OptimizedPlan(**module);
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  auto program = GenerateCuda(*plan);
  ASSERT_TRUE(program.ok()) << program.status().message();
  const std::string got = WithoutHeaderDigests(program->source);
  const fs::path golden = dir / (GetParam() + ".cu.txt");
  const char* regenerate = std::getenv("DETRAIN_REGENERATE_GOLDEN");
  if (regenerate != nullptr && std::string(regenerate) == "1") {
    std::ofstream(golden, std::ios::binary) << got;
  }
  auto want = ReadFile(golden.string());
  ASSERT_TRUE(want.ok()) << want.status().message() << " (DETRAIN_REGENERATE_GOLDEN=1 writes it)";
  EXPECT_EQ(got, *want) << "the generated source differs from " << golden;

  // The golden computes the interpreter's bits.
  std::vector<ir::Literal> args = testing::RandomArguments(**module, 17);
  auto expected = interp::Evaluate(**module, args);
  ASSERT_TRUE(expected.ok()) << expected.status().message();
  auto emulator = testing::CudaEmulator::Create(*program);
  ASSERT_TRUE(emulator.ok()) << emulator.status().message();
  auto results = (*emulator)->RunPlan(*plan, args);
  ASSERT_TRUE(results.ok()) << results.status().message();
  runtime::ExpectSameBits(runtime::FlattenLiteral(*expected), *results);
}

INSTANTIATE_TEST_SUITE_P(Modules, CudaGolden,
                         ::testing::Values("elementwise_reduce", "reductions", "movement_indexing",
                                           "convolution"));

}  // namespace
}  // namespace detrain::codegen::cuda
