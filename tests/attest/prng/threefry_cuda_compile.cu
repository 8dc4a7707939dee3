// Compile-only test: threefry_block.h is valid CUDA device code (warnings as errors). The key
// schedule and block are called from a __global__ kernel, one block per thread. No GPU is needed.
#include "attest/prng/threefry_block.h"

namespace prng = detrain::prng;

__global__ void Threefry(uint32_t k0, uint32_t k1, const uint32_t* x0, const uint32_t* x1,
                         uint32_t* y0, uint32_t* y1, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  prng::ThreefryInjections schedule = prng::ThreefryKeySchedule(k0, k1);
  uint32_t a = x0[i], b = x1[i];
  prng::ThreefryBlock(schedule, a, b);
  y0[i] = a;
  y1[i] = b;
}
