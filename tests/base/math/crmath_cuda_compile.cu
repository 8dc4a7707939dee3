// Compile-only test: the math header is valid CUDA device code. Every function, scalar and
// array variant, is called from a __global__ kernel; nvcc must compile it with warnings as
// errors (a host-only call from device code is a warning in nvcc). No GPU is needed.
#include "base/math/crmath.h"

namespace cr = detrain::crmath;

__global__ void AllFunctions(const float* x, const float* y, float* out, size_t n) {
  size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
  if (i >= n) return;
  float v = x[i];
  float acc = cr::Exp(v) + cr::Expm1(v) + cr::Exp2(v) + cr::Log(v) + cr::Log1p(v) + cr::Log2(v) +
              cr::Tanh(v) + cr::Logistic(v) + cr::Erf(v) + cr::Rsqrt(v) + cr::Pow(v, y[i]) +
              cr::Erfinv(v) + cr::Sin(v) + cr::Cos(v);
  out[i] = acc;
}

__global__ void AllArrays(const float* x, const float* y, float* out, size_t n) {
  cr::ExpArray(x, out, n);
  cr::Expm1Array(x, out, n);
  cr::Exp2Array(x, out, n);
  cr::LogArray(x, out, n);
  cr::Log1pArray(x, out, n);
  cr::Log2Array(x, out, n);
  cr::TanhArray(x, out, n);
  cr::LogisticArray(x, out, n);
  cr::ErfArray(x, out, n);
  cr::RsqrtArray(x, out, n);
  cr::ErfinvArray(x, out, n);
  cr::PowArray(x, y, out, n);
}
