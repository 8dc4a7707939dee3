// Compile-only test: the semantics headers are valid CUDA device code. Every public function is
// instantiated for every storage type from a __global__ kernel; nvcc must compile it with
// warnings as errors (a host-only call from device code is a warning in nvcc). No GPU is needed.
#include "compiler/semantics/semantics.h"

namespace sem = detrain::semantics;

template <typename T>
__device__ T AllScalarRules(T a, T b, T c, uint8_t p) {
  T acc = sem::ApplyUnary(sem::UnaryOp::kAbs, a);
  for (int op = 0; op <= static_cast<int>(sem::UnaryOp::kNot); ++op) {
    acc = sem::ApplyBinary(sem::BinaryOp::kAdd, acc,
                           sem::ApplyUnary(static_cast<sem::UnaryOp>(op), b));
  }
  for (int op = 0; op <= static_cast<int>(sem::BinaryOp::kShiftRightArithmetic); ++op) {
    acc = sem::ApplyBinary(static_cast<sem::BinaryOp>(op), acc, c);
  }
  acc = sem::Select(p, acc, sem::Clamp(a, b, c));
  acc = sem::MultiplyAccumulate(a, b, acc);
  return sem::Compare(sem::Direction::kLt, acc, a) ? acc : b;
}

template <typename To>
__device__ To AllConversionsTo(uint8_t p, int32_t s32, uint32_t u32, int64_t s64, uint64_t u64,
                               float f32) {
  return sem::ApplyBinary(
      sem::BinaryOp::kXor,
      sem::ApplyBinary(sem::BinaryOp::kXor, sem::ConvertElement<To>(p),
                       sem::ConvertElement<To>(s32)),
      sem::ApplyBinary(sem::BinaryOp::kXor,
                       sem::ApplyBinary(sem::BinaryOp::kXor, sem::ConvertElement<To>(u32),
                                        sem::ConvertElement<To>(s64)),
                       sem::ApplyBinary(sem::BinaryOp::kXor, sem::ConvertElement<To>(u64),
                                        sem::ConvertElement<To>(f32))));
}

__global__ void Scalars(const float* f, const int32_t* s, const uint32_t* u, const int64_t* sl,
                        const uint64_t* ul, const uint8_t* p, float* out) {
  int i = threadIdx.x;
  float r = AllScalarRules(f[i], f[i + 1], f[i + 2], p[i]);
  r += static_cast<float>(AllScalarRules(s[i], s[i + 1], s[i + 2], p[i]));
  r += static_cast<float>(AllScalarRules(u[i], u[i + 1], u[i + 2], p[i]));
  r += static_cast<float>(AllScalarRules(sl[i], sl[i + 1], sl[i + 2], p[i]));
  r += static_cast<float>(AllScalarRules(ul[i], ul[i + 1], ul[i + 2], p[i]));
  r += static_cast<float>(AllScalarRules(p[i], p[i + 1], p[i + 2], p[i]));
  r += sem::BitcastElement<float>(sem::BitcastElement<uint32_t>(s[i]));
  r += static_cast<float>(sem::BitcastElement<int64_t>(ul[i]));
  r += AllConversionsTo<float>(p[i], s[i], u[i], sl[i], ul[i], f[i]);
  r += static_cast<float>(AllConversionsTo<uint8_t>(p[i], s[i], u[i], sl[i], ul[i], f[i]));
  r += static_cast<float>(AllConversionsTo<int32_t>(p[i], s[i], u[i], sl[i], ul[i], f[i]));
  r += static_cast<float>(AllConversionsTo<uint32_t>(p[i], s[i], u[i], sl[i], ul[i], f[i]));
  r += static_cast<float>(AllConversionsTo<int64_t>(p[i], s[i], u[i], sl[i], ul[i], f[i]));
  r += static_cast<float>(AllConversionsTo<uint64_t>(p[i], s[i], u[i], sl[i], ul[i], f[i]));
  out[i] = r;
}

struct AddF32 {
  __device__ float operator()(float a, float b) const { return a + b; }
};

__global__ void Orders(const float* a, const float* b, int64_t n, float* scratch, float* out) {
  out[0] = sem::FmaChain(a, 1, b, n, n);
  out[1] = sem::CanonicalReduce(
      n, 0.0f, [=](int64_t i) { return a[i]; }, AddF32{}, scratch);
  out[2] = sem::PairwiseTreeInPlace(scratch, sem::ReduceLeafCount(n), AddF32{});
  out[3] = sem::DotChain<float>(
      n, [=](int64_t i) { return a[i]; }, [=](int64_t i) { return b[i]; });
  out[4] = sem::BlockTreeSplits(n, 4) ? 1.0f : 0.0f;
}
