// The few definitions a header needs to be compiled for the host and for CUDA devices (nvcc and
// NVRTC alike): the DETRAIN_HD annotation, the fixed-width integer types, and the pragma that
// lets a host-and-device template take a host-only callable. Headers written against this one
// (base/math/, base/pairwise_tree.h, compiler/semantics/) include no other standard header under
// NVRTC, which ships none; compile NVRTC programs with -I<cuda>/include/cccl for cuda/std.
//
// Thread safety and determinism: macros and types only.
#ifndef DETRAIN_BASE_HOST_DEVICE_H_
#define DETRAIN_BASE_HOST_DEVICE_H_

#if defined(__CUDACC_RTC__)
#include <cuda/std/cstddef>
#include <cuda/std/cstdint>
#else
#include <cstddef>
#include <cstdint>
#endif

#ifndef DETRAIN_HD
#if defined(__CUDACC__)
#define DETRAIN_HD __host__ __device__
#else
#define DETRAIN_HD
#endif
#endif

// Placed before a DETRAIN_HD template that calls a callable parameter: nvcc then accepts a
// host-only callable in a host instantiation (it warns otherwise). Nothing on host compilers.
#if defined(__CUDACC__)
#define DETRAIN_HD_TEMPLATE _Pragma("nv_exec_check_disable")
#else
#define DETRAIN_HD_TEMPLATE
#endif

#endif  // DETRAIN_BASE_HOST_DEVICE_H_
