// The few definitions a header needs to be compiled for the host and for CUDA devices (nvcc and
// NVRTC alike): the DETRAIN_HD annotation, the fixed-width integer types, and the pragma that
// lets a host-and-device template take a host-only callable. Headers written against this one
// (base/math/, base/pairwise_tree.h, compiler/semantics/) include no other standard header under
// NVRTC, which ships none: there this header declares the fixed-width types itself, as glibc
// spells them on LP64 Linux, the data model NVRTC's device code follows (its built-in header
// already declares size_t), so that a translation unit
// of detrain's device headers compiles with no include path at all — no CUDA toolkit header is
// an input of the CUDA source stage (docs/cuda.md).
//
// Thread safety and determinism: macros and types only.
#ifndef DETRAIN_BASE_HOST_DEVICE_H_
#define DETRAIN_BASE_HOST_DEVICE_H_

#if defined(__CUDACC_RTC__)
typedef signed char int8_t;
typedef short int16_t;
typedef int int32_t;
typedef long int64_t;
typedef unsigned char uint8_t;
typedef unsigned short uint16_t;
typedef unsigned int uint32_t;
typedef unsigned long uint64_t;
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
