// The CUDA backend behind the device factory (device_factory.h; docs/cuda.md): the plan's
// generated program (codegen/cuda) on the machine's GPUs (gpu.h), mesh device d on GPU d mod G.
// The program and its compiled images come from the compile when it made them (the stages cuda,
// ptx and cubin-*; CudaOptions), so the source is generated once per run; an executor made from
// plan bytes alone (detrain eval, tests) generates and compiles them here.
//
// Thread safety: OpenCudaDevices is a pure function of its arguments; the factory is used by one
// thread at a time. Determinism: the devices run the program's launches; nothing here computes.
#ifndef DETRAIN_RUNTIME_CUDA_CUDA_BACKEND_H_
#define DETRAIN_RUNTIME_CUDA_CUDA_BACKEND_H_

#include <memory>

#include "base/status.h"
#include "compiler/codegen/cuda/cuda_program.h"
#include "compiler/plan/reader.h"
#include "runtime/cuda/gpu.h"
#include "runtime/device.h"
#include "runtime/executor.h"

namespace detrain::runtime::cuda {

// What the CUDA backend reads from ExecutorOptions::backend_options.
struct CudaOptions : BackendOptions {
  // The plan's program as the compile generated it; null: generated from the plan here.
  std::shared_ptr<const codegen::cuda::CudaProgram> program;
  // The program compiled; null: compiled here (NVRTC, nvJitLink). Empty images load nothing,
  // which an emulator needs none of.
  std::shared_ptr<const CudaImages> images;
  // The GPUs; empty: the driver's (OpenDriverSystem). Tests pass an emulator.
  GpuSystemFactory gpu_system;
};

// Whether `options` bring GPUs of their own (an emulator) instead of the driver's.
bool HasGpuSystem(const BackendOptions* options);

// `options` with the program and images a compile made for the plan it runs, where the backend
// is CUDA and `options` name none of their own (an emulator's GPUs or a test's empty images stay
// as given); otherwise `options` unchanged.
ExecutorOptions WithCompiledCuda(const ExecutorOptions& options,
                                 std::shared_ptr<const codegen::cuda::CudaProgram> program,
                                 std::shared_ptr<const CudaImages> images);

// The CUDA backend's factory for `plan` (options.backend_options: CudaOptions, or null). Errors
// from the generator and the GPUs say "--backend cuda".
Result<std::unique_ptr<DeviceFactory>> OpenCudaDevices(const plan::ValidatedPlan& plan,
                                                       const DeviceOptions& options);

}  // namespace detrain::runtime::cuda

#endif  // DETRAIN_RUNTIME_CUDA_CUDA_BACKEND_H_
