// The device headers compile through NVRTC (the CUDA backend's runtime compiler), which ships no
// C++ standard headers: a kernel that includes compiler/semantics/semantics.h (and with it
// base/math/crmath.h) and attest/prng/threefry_block.h, and uses their public functions, must
// compile to PTX with no warnings. NVRTC needs no GPU.
#include <gtest/gtest.h>
#include <nvrtc.h>

#include <string>

namespace {

constexpr const char* kSource = R"(
#include "attest/prng/threefry_block.h"
#include "compiler/semantics/semantics.h"
namespace sem = detrain::semantics;
struct AddF32 {
  __device__ float operator()(float a, float b) const { return a + b; }
};
template <typename T>
__device__ T Rules(T a, T b) {
  T r = sem::ApplyBinary(sem::BinaryOp::kPower, sem::ApplyUnary(sem::UnaryOp::kNegate, a), b);
  r = sem::Clamp(a, r, b);
  return sem::Compare(sem::Direction::kNe, r, a) ? sem::Select<T>(1, r, a) : b;
}
extern "C" __global__ void Kernel(const float* f, const int32_t* s, const uint64_t* u,
                                  const uint8_t* p, float* scratch, float* out, int64_t n) {
  out[0] = Rules(f[0], f[1]) + static_cast<float>(Rules(s[0], s[1])) +
           static_cast<float>(Rules(u[0], u[1])) + static_cast<float>(Rules(p[0], p[1]));
  out[1] = sem::ConvertElement<float>(u[0]) +
           static_cast<float>(sem::ConvertElement<int64_t>(f[2]));
  out[2] = sem::BitcastElement<float>(sem::ConvertElement<uint32_t>(s[2]));
  out[3] = sem::FmaChain(f, 1, f, 1, n);
  out[4] = sem::CanonicalReduce(n, 0.0f, [=](int64_t i) { return f[i]; }, AddF32{}, scratch);
  out[5] = static_cast<float>(sem::ConvertElement<uint8_t>(f[3]));
  detrain::prng::ThreefryInjections schedule = detrain::prng::ThreefryKeySchedule(7, 9);
  uint32_t x0 = static_cast<uint32_t>(s[3]), x1 = static_cast<uint32_t>(s[4]);
  detrain::prng::ThreefryBlock(schedule, x0, x1);
  out[6] = sem::BitcastElement<float>(x0 ^ x1);
  float arr[4] = {f[0], f[1], f[2], f[3]};
  detrain::crmath::ExpArray(arr, arr, 4);
  out[7] = arr[3];
}
)";

TEST(SemanticsNvrtc, HeadersCompileWithoutWarnings) {
  nvrtcProgram program;
  ASSERT_EQ(nvrtcCreateProgram(&program, kSource, "semantics_nvrtc.cu", 0, nullptr, nullptr),
            NVRTC_SUCCESS);
  std::string src_include = std::string("-I") + DETRAIN_SOURCE_DIR + "/src";
  // No toolkit include path: the headers must not need CUDA's own (cuda/std) headers.
  const char* options[] = {"-std=c++20", "--fmad=false", "-arch=compute_90", src_include.c_str()};
  nvrtcResult result = nvrtcCompileProgram(program, 4, options);
  size_t log_size = 0;
  nvrtcGetProgramLogSize(program, &log_size);
  std::string log(log_size, '\0');
  nvrtcGetProgramLog(program, log.data());
  while (!log.empty() && (log.back() == '\0' || log.back() == '\n')) log.pop_back();
  EXPECT_EQ(result, NVRTC_SUCCESS) << log;
  EXPECT_EQ(log, "") << "NVRTC warnings";
  size_t ptx_size = 0;
  if (result == NVRTC_SUCCESS) {
    nvrtcGetPTXSize(program, &ptx_size);
    EXPECT_GT(ptx_size, 100u);
  }
  nvrtcDestroyProgram(&program);
}

}  // namespace
