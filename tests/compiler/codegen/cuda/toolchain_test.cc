// The CUDA stages without a GPU (docs/cuda.md): each example's generated source, PTX and cubins
// have the same digests across 10 compilations — three of them through the compile driver on 1,
// 2 and 8 threads (the cubins are assembled in parallel there), seven through the toolchain
// directly — and the generated source compiles through NVRTC with no warnings and no include path
// but the embedded device headers. The source needs exactly those headers: without any one of
// them NVRTC fails. Registered only where a CUDA toolkit was found. The default suite makes one
// direct compilation instead of seven (four in all: NVRTC and nvJitLink take seconds per example);
// cuda_toolchain_slow_test, in the long checks (label `long`), makes all ten.
#include "compiler/codegen/cuda/toolchain.h"

#include <gtest/gtest.h>

#include <chrono>
#include <map>

#include "attest/sha256.h"
#include "compiler/codegen/cuda/cuda_program.h"
#include "driver/compile.h"

#ifndef DETRAIN_DIRECT_COMPILATIONS
#define DETRAIN_DIRECT_COMPILATIONS 7
#endif

namespace detrain::codegen::cuda {
namespace {

double Seconds(std::chrono::steady_clock::time_point since) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - since).count();
}

// Digest of every CUDA stage by name.
std::map<std::string, std::string> CudaDigests(const driver::CompileResult& c) {
  std::map<std::string, std::string> out;
  for (const driver::StageRecord& r : c.stages.records()) {
    if (r.backend == driver::kBackendCuda) out[r.name] = r.sha256;
  }
  return out;
}

class CudaStages : public ::testing::TestWithParam<std::string> {};

TEST_P(CudaStages, IdenticalAcrossTenCompilationsAndThreadCounts) {
  ASSERT_TRUE(ToolchainAvailable());
  const auto start = std::chrono::steady_clock::now();
  const std::string path =
      std::string(DETRAIN_SOURCE_DIR) + "/examples/" + GetParam() + "/train.dt";
  std::map<std::string, std::string> first;
  std::string plan;
  for (int threads : {1, 2, 8}) {
    driver::CompileOptions options;
    options.cuda = true;
    options.threads = threads;
    auto compiled = driver::Compile(path, options);
    ASSERT_TRUE(compiled.ok()) << compiled.status().message();
    std::map<std::string, std::string> digests = CudaDigests(*compiled);
    EXPECT_EQ(digests.size(), 8u) << "cuda, ptx, two cubins, and the same for the eval plan";
    if (first.empty()) {
      first = digests;
      plan = compiled->stages.Find(driver::kStagePlan)->bytes;
    }
    EXPECT_EQ(digests, first) << "threads " << threads;
  }
  for (int i = 0; i < DETRAIN_DIRECT_COMPILATIONS; ++i) {
    auto program = GenerateCuda(plan);
    ASSERT_TRUE(program.ok()) << program.status().message();
    EXPECT_EQ(attest::Sha256Hex(program->source), first["cuda"]);
    std::string log;
    auto ptx = CompilePtx(program->source, &log);
    ASSERT_TRUE(ptx.ok()) << ptx.status().message();
    EXPECT_EQ(log, "") << "NVRTC warnings";
    EXPECT_EQ(attest::Sha256Hex(*ptx), first["ptx"]) << "compilation " << i + 4;
    for (const char* arch : kCubinArchs) {
      auto cubin = LinkCubin(*ptx, arch);
      ASSERT_TRUE(cubin.ok()) << cubin.status().message();
      EXPECT_EQ(attest::Sha256Hex(*cubin), first[std::string("cubin-") + arch])
          << arch << ", compilation " << i + 4;
    }
  }
  std::printf("%s: %d compilations, identical CUDA stages, %.1f s\n", GetParam().c_str(),
              3 + DETRAIN_DIRECT_COMPILATIONS, Seconds(start));
}

INSTANTIATE_TEST_SUITE_P(Examples, CudaStages,
                         ::testing::Values("breast_cancer", "digits", "charlm"));

// The generated source needs exactly the embedded headers (CMakeLists.txt's list): NVRTC
// compiles it with all of them, and fails without any one.
TEST(CudaToolchain, SourceNeedsExactlyTheEmbeddedHeaders) {
  const std::string path = std::string(DETRAIN_SOURCE_DIR) + "/examples/breast_cancer/train.dt";
  auto compiled = driver::Compile(path, {});
  ASSERT_TRUE(compiled.ok()) << compiled.status().message();
  auto program = GenerateCuda(compiled->stages.Find(driver::kStageEvalPlan)->bytes);
  ASSERT_TRUE(program.ok()) << program.status().message();
  ASSERT_TRUE(CompilePtx(program->source).ok());
  EXPECT_GE(DeviceHeaders().size(), 10u);
  for (const DeviceHeader& h : DeviceHeaders()) {
    SCOPED_TRACE(std::string(h.path));
    auto without = CompilePtxWithout(program->source, h.path);
    EXPECT_FALSE(without.ok()) << "compiles without " << h.path << ": drop it from the list";
  }
}

// A source NVRTC rejects is an error with NVRTC's log, not a crash.
TEST(CudaToolchain, CompileErrorsCarryTheLog) {
  auto ptx = CompilePtx("extern \"C\" __global__ void f() { undeclared(); }\n");
  ASSERT_FALSE(ptx.ok());
  EXPECT_NE(ptx.status().message().find("undeclared"), std::string::npos) << ptx.status().message();
  auto cubin = LinkCubin("not PTX", "sm_90");
  EXPECT_FALSE(cubin.ok());
}

}  // namespace
}  // namespace detrain::codegen::cuda
