// The CUDA backend on a real GPU (docs/cuda.md): the generated programs, compiled by NVRTC and
// nvJitLink and run by the driver, give the interpreter's and the CPU executor's bits — every
// kernel case (tests/runtime/kernel_cases.h: NaN payloads, signed zeros, long reductions, GEMM
// tiles), random modules of every op family, and 3 train steps of each example on 1 device and
// on meshes of 2 and 8 devices (across GPUs where the machine has several: NCCL transfers).
//
// Without a GPU (no driver, no device, or a build without CUDA) every test skips and says why;
// tools/gpu-check.sh runs them where there is one (ctest -L gpu).
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>

#include "compiler/interp/interpreter.h"
#include "compiler/ir/verifier.h"
#include "compiler/passes/pipeline.h"
#include "compiler/plan/builder.h"
#include "compiler/testing/random_module.h"
#include "driver/compile.h"
#include "kernel_cases.h"
#include "loop_cases.h"
#include "runtime/cuda/cuda_backend.h"
#include "runtime/cuda/gpu.h"
#include "runtime/executor.h"
#include "runtime_test_util.h"

namespace detrain::runtime {
namespace {

// The source tree: compiled in, or (tools/gpu-check.sh on a GPU machine, where the tree is
// elsewhere) the environment's DETRAIN_SOURCE_DIR. Test-only.
std::string SourceDir() {
  const char* dir = std::getenv("DETRAIN_SOURCE_DIR");
  return dir != nullptr && *dir != '\0' ? dir : DETRAIN_SOURCE_DIR;
}

double Seconds(std::chrono::steady_clock::time_point since) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - since).count();
}

// The number of GPUs, or skips the test with the reason there are none.
#define DETRAIN_REQUIRE_GPU(count)                                                   \
  int count = 0;                                                                     \
  {                                                                                  \
    Result<int> gpus = cuda::CountDriverGpus();                                      \
    if (!gpus.ok()) GTEST_SKIP() << "no GPU to run on: " << gpus.status().message(); \
    count = *gpus;                                                                   \
  }

ExecutorOptions OnGpus(int devices) {
  ExecutorOptions o;
  o.backend = Backend::kCuda;
  o.devices = devices;
  return o;
}

// The module on the GPU equals the interpreter; false when the interpreter refuses it.
bool CheckOnGpu(const ir::Module& module, const std::vector<ir::Literal>& args) {
  auto expected = interp::Evaluate(module, args);
  if (!expected.ok()) return false;
  auto plan = OptimizedPlan(module);
  EXPECT_TRUE(plan.ok()) << plan.status().message();
  if (!plan.ok()) return false;
  auto executor = Executor::Create(*plan, OnGpus(1));
  EXPECT_TRUE(executor.ok()) << executor.status().message();
  if (!executor.ok()) return false;
  auto got = (*executor)->Run({args});
  EXPECT_TRUE(got.ok()) << got.status().message();
  if (!got.ok()) return false;
  ExpectSameBits(FlattenLiteral(*expected), (*got)[0]);
  return true;
}

class GpuKernels : public ::testing::TestWithParam<KernelCase> {};

TEST_P(GpuKernels, EqualInterpreter) {
  DETRAIN_REQUIRE_GPU(gpus);
  const KernelCase& k = GetParam();
  auto module = ir::ParseAndVerify(k.hlo);
  ASSERT_TRUE(module.ok()) << module.status().message();
  EXPECT_TRUE(CheckOnGpu(**module, k.args));
}

INSTANTIATE_TEST_SUITE_P(Cases, GpuKernels, ::testing::ValuesIn(KernelCases()),
                         [](const ::testing::TestParamInfo<KernelCase>& info) {
                           std::string name;
                           for (char ch : info.param.name) name += std::isalnum(ch) ? ch : '_';
                           return name;
                         });

TEST(Gpu, RandomModules) {
  DETRAIN_REQUIRE_GPU(gpus);
  testing::RandomModuleOptions options;
  options.exclude_ops = {ir::Opcode::kAllReduce};
  int compared = 0;
  for (uint64_t seed = 1; seed <= 60; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    auto module = testing::RandomModule(seed, options);
    compared += CheckOnGpu(*module, testing::RandomArguments(*module, seed * 31));
    if (::testing::Test::HasFailure()) return;
  }
  EXPECT_GE(compared, 50);
}

// Loops with a data-dependent trip count: the host runs each loop, reading back its pred.
TEST(Gpu, DataDependentLoops) {
  DETRAIN_REQUIRE_GPU(gpus);
  for (const LoopCase& c : LoopCases()) {
    SCOPED_TRACE(c.name);
    auto module = ir::ParseAndVerify(c.text);
    ASSERT_TRUE(module.ok()) << module.status().message();
    EXPECT_TRUE(CheckOnGpu(**module, c.args));
  }
}

std::vector<ir::Literal> NextArguments(const ir::Module& step, std::vector<ir::Literal> args,
                                       const std::vector<ir::Literal>& outputs, int t) {
  for (size_t i = 0; i + 1 < outputs.size(); ++i) args[i] = outputs[i];
  args.back() = TrainStepArguments(step, 1000 + static_cast<uint64_t>(t)).back();
  return args;
}

class GpuExamples : public ::testing::TestWithParam<std::string> {};

// 3 train steps on the GPU(s) equal the CPU's, on 1, 2 and 8 devices.
TEST_P(GpuExamples, TrainStepsEqualTheCpu) {
  DETRAIN_REQUIRE_GPU(gpus);
  const auto start = std::chrono::steady_clock::now();
  const std::string path = SourceDir() + "/examples/" + GetParam() + "/train.dt";
  driver::CompileOptions copts;
  copts.cuda = true;
  auto compiled = driver::Compile(path, copts);
  ASSERT_TRUE(compiled.ok()) << compiled.status().message();
  auto step = ir::ParseAndVerify(compiled->stages.Find("hlo")->bytes);
  ASSERT_TRUE(step.ok()) << step.status().message();
  const std::string& plan = compiled->stages.Find("plan")->bytes;
  auto images = std::make_shared<cuda::CudaImages>();
  images->ptx = compiled->stages.Find("ptx")->bytes;
  for (const char* arch : {"sm_80", "sm_90"})
    images->cubins.emplace_back(arch, compiled->stages.Find(std::string("cubin-") + arch)->bytes);
  auto cpu = Executor::Create(plan, {});
  ASSERT_TRUE(cpu.ok()) << cpu.status().message();
  std::vector<std::vector<ir::Literal>> inputs, outputs;
  std::vector<ir::Literal> args = TrainStepArguments(**step, 7);
  for (int t = 0; t < 3; ++t) {
    auto want = (*cpu)->Run({args});
    ASSERT_TRUE(want.ok()) << want.status().message();
    inputs.push_back(args);
    outputs.push_back((*want)[0]);
    args = NextArguments(**step, std::move(args), (*want)[0], t);
  }
  for (int devices : {1, 2, 8}) {
    SCOPED_TRACE(GetParam() + " on " + std::to_string(devices) + " devices, " +
                 std::to_string(gpus) + " GPUs");
    // The compile's executable: the program as stage "cuda" has it, and its images.
    ExecutorOptions options =
        cuda::WithCompiledCuda(OnGpus(devices), compiled->cuda.at("").program, images);
    auto executor = Executor::Create(plan, options);
    ASSERT_TRUE(executor.ok()) << executor.status().message();
    for (int t = 0; t < 3; ++t) {
      auto got = (*executor)->Run({inputs[static_cast<size_t>(t)]});
      ASSERT_TRUE(got.ok()) << got.status().message();
      ExpectSameBits(outputs[static_cast<size_t>(t)], (*got)[0]);
      if (::testing::Test::HasFailure()) return;
    }
    if (devices == 1) {
      for (const std::string& d : (*executor)->stats().devices) std::printf("  %s\n", d.c_str());
    }
  }
  std::printf("%s: 3 steps on the GPU equal the CPU's on 1, 2 and 8 devices (%.1f s)\n",
              GetParam().c_str(), Seconds(start));
}

INSTANTIATE_TEST_SUITE_P(Examples, GpuExamples,
                         ::testing::Values("breast_cancer", "digits", "charlm"));

// Without a GPU the backend says why, and the CPU still runs.
TEST(GpuAbsent, ClearErrorWithoutAGpu) {
  Result<int> gpus = cuda::CountDriverGpus();
  if (gpus.ok()) GTEST_SKIP() << "this machine has " << *gpus << " GPU(s)";
  EXPECT_FALSE(gpus.status().message().empty());
  auto plan = plan::BuildPlan(**ir::ParseAndVerify(
      "HloModule m\nENTRY main {\n  a = f32[4] parameter(0)\n  ROOT n = f32[4] negate(a)\n}\n"));
  ASSERT_TRUE(plan.ok());
  ExecutorOptions options = OnGpus(1);
  auto empty = std::make_shared<cuda::CudaOptions>();
  empty->images = std::make_shared<const cuda::CudaImages>();
  options.backend_options = empty;
  auto executor = Executor::Create(plan->bytes, options);
  ASSERT_FALSE(executor.ok());
  EXPECT_NE(executor.status().message().find("--backend cuda"), std::string::npos)
      << executor.status().message();
}

}  // namespace
}  // namespace detrain::runtime
