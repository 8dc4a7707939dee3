// The generated CUDA programs, run on the host emulator (emulator.h), give the interpreter's and
// the CPU executor's bits: on random modules of every op family the generator covers, and on 3
// train steps of each example. The emulator runs each grid as launched and, where noted, with
// one block per grid dimension: every generated kernel loops over its blocks, so the grid may
// not change a bit either.
#include <gtest/gtest.h>

#include <cctype>
#include <chrono>

#include "compiler/codegen/cuda/cuda_program.h"
#include "compiler/interp/interpreter.h"
#include "compiler/ir/parser.h"
#include "compiler/ir/verifier.h"
#include "compiler/passes/pipeline.h"
#include "compiler/plan/builder.h"
#include "compiler/testing/random_module.h"
#include "driver/compile.h"
#include "runtime/executor.h"
#include "runtime/kernel_cases.h"
#include "runtime/loop_cases.h"
#include "runtime/runtime_test_util.h"
#include "tests/compiler/codegen/cuda/emulator.h"

namespace detrain::testing {
namespace {

using runtime::ExpectSameBits;
using runtime::FlattenLiteral;

double Seconds(std::chrono::steady_clock::time_point since) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - since).count();
}

// Returns whether the module was compared (the interpreter evaluated it).
bool CheckModule(const ir::Module& module, const std::vector<ir::Literal>& args) {
  auto expected = interp::Evaluate(module, args);
  if (!expected.ok()) return false;
  auto plan = runtime::OptimizedPlan(module);
  EXPECT_TRUE(plan.ok()) << plan.status().message();
  if (!plan.ok()) return false;
  auto program = codegen::cuda::GenerateCuda(*plan);
  EXPECT_TRUE(program.ok()) << program.status().message();
  if (!program.ok()) return false;
  auto emulator = CudaEmulator::Create(*program);
  EXPECT_TRUE(emulator.ok()) << emulator.status().message();
  if (!emulator.ok()) return false;
  for (uint32_t max_blocks : {0u, 1u}) {
    SCOPED_TRACE("max_blocks " + std::to_string(max_blocks));
    auto got = (*emulator)->RunPlan(*plan, args, max_blocks);
    EXPECT_TRUE(got.ok()) << got.status().message();
    if (!got.ok()) return false;
    ExpectSameBits(FlattenLiteral(*expected), *got);
  }
  return true;
}

TEST(CudaEmulation, RandomModules) {
  RandomModuleOptions options;
  options.exclude_ops = {ir::Opcode::kAllReduce};
  int compared = 0;
  const auto start = std::chrono::steady_clock::now();
  for (uint64_t seed = 1; seed <= 40; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    auto module = RandomModule(seed, options);
    compared += CheckModule(*module, RandomArguments(*module, seed * 31));
    if (::testing::Test::HasFailure()) return;
  }
  std::printf("%d modules compared in %.1f s\n", compared, Seconds(start));
  EXPECT_GE(compared, 35);
}

// Every kernel case of the CPU kernel tests (tests/runtime/kernel_cases.h).
class CudaKernels : public ::testing::TestWithParam<runtime::KernelCase> {};

TEST_P(CudaKernels, EqualInterpreter) {
  const runtime::KernelCase& k = GetParam();
  auto module = ir::ParseAndVerify(k.hlo);
  ASSERT_TRUE(module.ok()) << module.status().message();
  EXPECT_TRUE(CheckModule(**module, k.args));
}

INSTANTIATE_TEST_SUITE_P(Cases, CudaKernels, ::testing::ValuesIn(runtime::KernelCases()),
                         [](const ::testing::TestParamInfo<runtime::KernelCase>& info) {
                           std::string name;
                           for (char ch : info.param.name) name += std::isalnum(ch) ? ch : '_';
                           return name;
                         });

// The next step's arguments: the state outputs (all but the loss) replace the leading
// parameters; the key (the last parameter) is redrawn (as tests/runtime/contract_test.cc).
std::vector<ir::Literal> NextArguments(const ir::Module& step, std::vector<ir::Literal> args,
                                       const std::vector<ir::Literal>& outputs, int t) {
  for (size_t i = 0; i + 1 < outputs.size(); ++i) args[i] = outputs[i];
  args.back() = runtime::TrainStepArguments(step, 1000 + static_cast<uint64_t>(t)).back();
  return args;
}

// 3 train steps of an example on emulated GPUs through the executor (CUDA devices, the mesh,
// transfers between GPUs) equal the CPU executor's, bit for bit: for each (GPUs, devices) of
// `meshes`, with grids capped at `max_blocks` blocks per dimension (0: as launched).
void CheckExample(const std::string& name, const std::vector<std::pair<int, int>>& meshes,
                  uint32_t max_blocks) {
  const auto start = std::chrono::steady_clock::now();
  const std::string path = std::string(DETRAIN_SOURCE_DIR) + "/examples/" + name + "/train.dt";
  auto compiled = driver::Compile(path, {});
  ASSERT_TRUE(compiled.ok()) << compiled.status().message();
  auto step = ir::ParseAndVerify(compiled->stages.Find("hlo")->bytes);
  ASSERT_TRUE(step.ok()) << step.status().message();
  const std::string& plan = compiled->stages.Find("plan")->bytes;
  // Generated once, as a compile with the CUDA backend does, and given to every mesh's executor.
  auto generated = codegen::cuda::GenerateCuda(plan);
  ASSERT_TRUE(generated.ok()) << generated.status().message();
  auto program = std::make_shared<const codegen::cuda::CudaProgram>(std::move(*generated));
  auto cpu = runtime::Executor::Create(plan, {});
  ASSERT_TRUE(cpu.ok()) << cpu.status().message();
  std::vector<std::vector<ir::Literal>> inputs, outputs;
  std::vector<ir::Literal> args = runtime::TrainStepArguments(**step, 7);
  for (int t = 0; t < 3; ++t) {
    auto want = (*cpu)->Run({args});
    ASSERT_TRUE(want.ok()) << want.status().message();
    inputs.push_back(args);
    outputs.push_back((*want)[0]);
    args = NextArguments(**step, std::move(args), (*want)[0], t);
  }
  for (const auto& [gpus, devices] : meshes) {
    SCOPED_TRACE(name + " on " + std::to_string(gpus) + " GPUs, " + std::to_string(devices) +
                 " devices");
    auto between = std::make_shared<int64_t>(0);
    runtime::ExecutorOptions options;
    options.backend = runtime::Backend::kCuda;
    options.devices = devices;
    options.backend_options = EmulatedCuda(gpus, max_blocks, between, program);
    auto executor = runtime::Executor::Create(plan, options);
    ASSERT_TRUE(executor.ok()) << executor.status().message();
    for (int t = 0; t < 3; ++t) {
      SCOPED_TRACE("step " + std::to_string(t));
      auto got = (*executor)->Run({inputs[static_cast<size_t>(t)]});
      ASSERT_TRUE(got.ok()) << got.status().message();
      ExpectSameBits(outputs[static_cast<size_t>(t)], (*got)[0]);
      if (::testing::Test::HasFailure()) return;
    }
    if (gpus > 1 && devices > 1) {
      EXPECT_GT(*between, 0) << "no transfer between the GPUs";
    }
  }
  std::printf("%s: 3 steps equal on %zu meshes in %.1f s\n", name.c_str(), meshes.size(),
              Seconds(start));
}

// Loops with a data-dependent trip count: the CUDA device runs each while kernel's loop from the
// host (the condition's pred read back after each run), with the interpreter's bits; the
// generated source lists every loop's launches.
TEST(CudaEmulation, DataDependentLoops) {
  for (const runtime::LoopCase& c : runtime::LoopCases()) {
    SCOPED_TRACE(c.name);
    auto module = ir::ParseAndVerify(c.text);
    ASSERT_TRUE(module.ok()) << module.status().message();
    auto want = interp::Evaluate(**module, c.args);
    ASSERT_TRUE(want.ok()) << want.status().message();
    auto plan = runtime::OptimizedPlan(**module);
    ASSERT_TRUE(plan.ok()) << plan.status().message();
    auto program = codegen::cuda::GenerateCuda(*plan);
    ASSERT_TRUE(program.ok()) << program.status().message();
    ASSERT_FALSE(program->loops.empty());
    EXPECT_NE(program->source.find("//   loop 0 predicate at "), std::string::npos);
    for (uint32_t max_blocks : {0u, 1u}) {
      SCOPED_TRACE("max_blocks " + std::to_string(max_blocks));
      runtime::ExecutorOptions options;
      options.backend = runtime::Backend::kCuda;
      options.backend_options = EmulatedCuda(1, max_blocks);
      auto executor = runtime::Executor::Create(*plan, options);
      ASSERT_TRUE(executor.ok()) << executor.status().message();
      auto got = (*executor)->Run({c.args});
      ASSERT_TRUE(got.ok()) << got.status().message();
      ExpectSameBits(FlattenLiteral(*want), (*got)[0]);
    }
    // The emulator's own plan runner takes the same loops.
    auto emulator = CudaEmulator::Create(*program);
    ASSERT_TRUE(emulator.ok()) << emulator.status().message();
    auto direct = (*emulator)->RunPlan(*plan, c.args);
    ASSERT_TRUE(direct.ok()) << direct.status().message();
    ExpectSameBits(FlattenLiteral(*want), *direct);
  }
}

// A loop that never ends: its condition is a state element its body never changes (no kernel
// launches, only the state's copies, so that 2^18 iterations take seconds on the emulator).
TEST(CudaEmulation, ARunawayLoopFailsAtTheInterpretersBound) {
  auto module = ir::ParseAndVerify(R"(HloModule runaway

cond {
  p = (pred[], f32[2]) parameter(0)
  ROOT go = pred[] get-tuple-element(p), index=0
}

body {
  p = (pred[], f32[2]) parameter(0)
  go = pred[] get-tuple-element(p), index=0
  x = f32[2] get-tuple-element(p), index=1
  ROOT t = (pred[], f32[2]) tuple(go, x)
}

ENTRY main {
  go = pred[] parameter(0)
  x = f32[2] parameter(1)
  init = (pred[], f32[2]) tuple(go, x)
  w = (pred[], f32[2]) while(init), condition=cond, body=body
  ROOT r = f32[2] get-tuple-element(w), index=1
}
)");
  ASSERT_TRUE(module.ok()) << module.status().message();
  auto plan = runtime::OptimizedPlan(**module);
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  runtime::ExecutorOptions options;
  options.backend = runtime::Backend::kCuda;
  options.backend_options = EmulatedCuda(1);
  auto executor = runtime::Executor::Create(*plan, options);
  ASSERT_TRUE(executor.ok()) << executor.status().message();
  const ir::Literal x = ir::Literal::FromVector<float>(ir::ElementType::kF32, {2}, {1.0f, 2.0f});
  auto done = (*executor)->Run({{ir::Literal::Scalar<uint8_t>(ir::ElementType::kPred, 0), x}});
  ASSERT_TRUE(done.ok()) << done.status().message();
  ExpectSameBits({x}, (*done)[0]);
  auto got = (*executor)->Run({{ir::Literal::Scalar<uint8_t>(ir::ElementType::kPred, 1), x}});
  ASSERT_FALSE(got.ok());
  EXPECT_NE(got.status().message().find("the loops run more than " +
                                        std::to_string(interp::kMaxWhileIterations)),
            std::string::npos)
      << got.status().message();
}

// The CUDA device's own count of what it asked of the GPU (Executor::Traffic, which
// bench_peer_step prints per step) is what the GPUs saw: the same bytes each way, and its
// launches the kernels plus the copies on the device.
TEST(CudaEmulation, TheDevicesTrafficIsWhatTheGpuSaw) {
  const std::string path = std::string(DETRAIN_SOURCE_DIR) + "/examples/breast_cancer/train.dt";
  auto compiled = driver::Compile(path, {});
  ASSERT_TRUE(compiled.ok()) << compiled.status().message();
  auto step = ir::ParseAndVerify(compiled->stages.Find("hlo")->bytes);
  ASSERT_TRUE(step.ok());
  auto traffic = std::make_shared<GpuTraffic>();
  runtime::ExecutorOptions options;
  options.backend = runtime::Backend::kCuda;
  options.backend_options = EmulatedCuda(1, 0, nullptr, nullptr, traffic);
  auto executor = runtime::Executor::Create(compiled->stages.Find("plan")->bytes, options);
  ASSERT_TRUE(executor.ok()) << executor.status().message();
  const std::vector<ir::Literal> args = runtime::TrainStepArguments(**step, 7);
  for (int t = 0; t < 2; ++t) ASSERT_TRUE((*executor)->Run({args}).ok());
  const runtime::DeviceTraffic counted = (*executor)->Traffic();
  EXPECT_EQ(counted.bytes_in, traffic->to_device);
  EXPECT_EQ(counted.bytes_out, traffic->to_host);
  EXPECT_GE(counted.launches, traffic->launches);
  EXPECT_GT(traffic->launches, 100);
}

TEST(CudaEmulation, BreastCancerTrainSteps) {
  CheckExample("breast_cancer", {{1, 1}, {1, 8}, {2, 2}, {2, 8}}, 0);
}
TEST(CudaEmulation, DigitsTrainSteps) { CheckExample("digits", {{1, 1}, {2, 4}}, 0); }
// The transformer's grids are capped at 4 blocks a dimension (the emulator runs every block on
// one core); the kernel cases and random modules run their grids as launched.
TEST(CudaEmulation, CharLmTrainSteps) { CheckExample("charlm", {{1, 1}, {2, 8}}, 4); }

}  // namespace
}  // namespace detrain::testing
