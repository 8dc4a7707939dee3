// Force-included (g++ -include) before a generated CUDA translation unit to compile it as host
// code for the emulator (emulator.h). It maps the CUDA C++ subset the generator writes onto C++:
// qualifiers vanish (__CUDACC__ and __CUDACC_RTC__ are defined so that the headers read as NVRTC
// reads them),
// __shared__ becomes static (blocks run one at a time, so a static is the
// block's shared memory), and every thread of a block is a fiber (ucontext) that runs until it
// reaches __syncthreads() or returns; the block's fibers resume together once all have reached
// the barrier. threadIdx/blockIdx are set by the scheduler before it resumes a fiber (one OS
// thread runs them all). A block whose threads leave the kernel while others wait at a barrier
// is reported, which real hardware leaves undefined.
//
// Test-only. Thread safety: one launch at a time per loaded program.
#ifndef DETRAIN_TESTS_CUDA_EMULATION_PRELUDE_H_
#define DETRAIN_TESTS_CUDA_EMULATION_PRELUDE_H_

#include <ucontext.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

// The device headers then take the paths they take under NVRTC (the portable crmath array loop,
// no x86 SIMD, no host-only includes; base/host_device.h's integer typedefs are glibc's own);
// __CUDA_ARCH__ stays undefined, so bit casts go through memcpy.
#define __CUDACC__ 1
#define __CUDACC_RTC__ 1
#define __noinline__ __attribute__((noinline))
#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __launch_bounds__(n)
#define __restrict__ __restrict
#define __shared__ static

struct dt_emu_dim3 {
  unsigned x = 0, y = 0, z = 0;
};

inline dt_emu_dim3 threadIdx, blockIdx, blockDim, gridDim;

// fmaf as NVIDIA GPUs compute it: IEEE, but a NaN result is the canonical NaN 0x7fffffff
// whatever the operands' payloads (x86, whose fmaf the host would run, returns the first NaN
// operand quieted — as detrain's semantics::FmaNan defines it, which would hide a kernel that
// skips the NaN rule).
namespace dt_emu {
inline float GpuFmaf(float a, float b, float c) {
  const float r = std::fma(a, b, c);
  if (r != r) {
    const uint32_t canonical = 0x7fffffffu;
    float n;
    std::memcpy(&n, &canonical, sizeof n);
    return n;
  }
  return r;
}
// sqrtf and fmodf likewise: a GPU's sqrt.rn and fmodf return 0x7fffffff for a NaN operand and
// for an invalid one (sqrt(-1), fmod(inf, y), fmod(x, 0)), where x86 and glibc return the
// operand's NaN or the default NaN 0xffc00000 — the rule semantics::Sqrt and Remainder write out.
inline float Canonical(float r) {
  if (r != r) {
    const uint32_t canonical = 0x7fffffffu;
    std::memcpy(&r, &canonical, sizeof r);
  }
  return r;
}
inline float GpuSqrtf(float x) { return Canonical(std::sqrt(x)); }
inline float GpuFmodf(float a, float b) { return Canonical(std::fmod(a, b)); }
}  // namespace dt_emu
#define fmaf(a, b, c) dt_emu::GpuFmaf(a, b, c)
#define sqrtf(x) dt_emu::GpuSqrtf(x)
#define fmodf(a, b) dt_emu::GpuFmodf(a, b)

namespace dt_emu {

using Kernel = void (*)(unsigned char*, unsigned char*, const long long*);

struct Fiber {
  ucontext_t context;
  std::vector<char> stack;
  unsigned index = 0;
  bool done = false;
  bool waiting = false;
};

struct Launch {
  ucontext_t scheduler;
  Fiber* current = nullptr;
  Kernel kernel = nullptr;
  unsigned char* arena = nullptr;
  unsigned char* scratch = nullptr;
  const long long* args = nullptr;
};

inline Launch launch;
inline std::vector<Fiber> fibers;

inline void SetThread(const Fiber& f) {
  threadIdx.x = f.index;
  threadIdx.y = 0;
  threadIdx.z = 0;
}

inline void FiberMain() {
  launch.kernel(launch.arena, launch.scratch, launch.args);
  launch.current->done = true;
  swapcontext(&launch.current->context, &launch.scheduler);
}

}  // namespace dt_emu

inline void __syncthreads() {
  dt_emu::Fiber* f = dt_emu::launch.current;
  f->waiting = true;
  swapcontext(&f->context, &dt_emu::launch.scheduler);
}

// Runs kernel<<<grid, block>>>(arena, scratch, args). Returns 0, or 1 with `error` set.
extern "C" int dt_emu_launch(dt_emu::Kernel kernel, const unsigned* grid, unsigned block,
                             unsigned char* arena, unsigned char* scratch, const long long* args,
                             char* error, size_t error_size) {
  using dt_emu::fibers;
  using dt_emu::launch;
  constexpr size_t kStack = 256 * 1024;
  launch.kernel = kernel;
  launch.arena = arena;
  launch.scratch = scratch;
  launch.args = args;
  if (fibers.size() < block) fibers.resize(block);
  for (unsigned i = 0; i < block; ++i) {
    if (fibers[i].stack.size() < kStack) fibers[i].stack.resize(kStack);
  }
  gridDim.x = grid[0];
  gridDim.y = grid[1];
  gridDim.z = grid[2];
  blockDim.x = block;
  blockDim.y = 1;
  blockDim.z = 1;
  for (unsigned z = 0; z < grid[2]; ++z) {
    for (unsigned y = 0; y < grid[1]; ++y) {
      for (unsigned x = 0; x < grid[0]; ++x) {
        blockIdx.x = x;
        blockIdx.y = y;
        blockIdx.z = z;
        for (unsigned i = 0; i < block; ++i) {
          dt_emu::Fiber& f = fibers[i];
          f.index = i;
          f.done = false;
          f.waiting = false;
          getcontext(&f.context);
          f.context.uc_stack.ss_sp = f.stack.data();
          f.context.uc_stack.ss_size = f.stack.size();
          f.context.uc_link = nullptr;
          makecontext(&f.context, dt_emu::FiberMain, 0);
        }
        for (;;) {
          unsigned finished = 0, waiting = 0;
          for (unsigned i = 0; i < block; ++i) {
            dt_emu::Fiber& f = fibers[i];
            if (!f.done) {
              f.waiting = false;
              launch.current = &f;
              dt_emu::SetThread(f);
              swapcontext(&launch.scheduler, &f.context);
            }
            finished += f.done ? 1 : 0;
            waiting += f.waiting ? 1 : 0;
          }
          if (finished == block) break;
          if (finished != 0) {
            std::snprintf(error, error_size,
                          "block (%u, %u, %u): %u threads returned while %u wait at "
                          "__syncthreads()",
                          x, y, z, finished, waiting);
            return 1;
          }
        }
      }
    }
  }
  return 0;
}

#endif  // DETRAIN_TESTS_CUDA_EMULATION_PRELUDE_H_
