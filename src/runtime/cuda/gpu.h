// The GPUs a CUDA device runs on, behind one narrow interface (STYLE.md point 7): memory, copies
// (host, device, and between GPUs), launches of the generated program's functions, and
// synchronization. The driver's implementation (driver_system.h) uses the CUDA driver API
// (libcuda.so.1) and NCCL (libnccl.so.2), both loaded when a run asks for a GPU; tests drive
// the same CUDA device and executor code through a host emulator of the generated program.
//
// Ordering: the work given to one GPU — copies and launches — runs in the order it was given
// (one stream per GPU). ToHost waits for it; Between is ordered after the earlier work of both
// GPUs and before their later work.
//
// Thread safety: one thread at a time per system. Determinism: a system moves bytes and runs
// the program's functions; nothing it does depends on timing.
#ifndef DETRAIN_RUNTIME_CUDA_GPU_H_
#define DETRAIN_RUNTIME_CUDA_GPU_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "base/status.h"
#include "compiler/codegen/cuda/cuda_program.h"
#include "compiler/codegen/cuda/toolchain.h"

namespace detrain::runtime::cuda {

// The program's compiled forms (the stages ptx and cubin-*), as the toolchain makes them.
using codegen::cuda::CudaImages;

using DevicePtr = uint64_t;

class GpuSystem {
 public:
  virtual ~GpuSystem() = default;
  virtual int DeviceCount() const = 0;
  // For environment.json: the GPU's name, architecture and the image it loaded.
  virtual std::string Describe(int gpu) const = 0;
  virtual Result<DevicePtr> Allocate(int gpu, int64_t bytes) = 0;
  virtual void Free(int gpu, DevicePtr ptr) = 0;
  virtual Status ToDevice(int gpu, DevicePtr dst, const void* src, int64_t bytes) = 0;
  virtual Status ToHost(int gpu, void* dst, DevicePtr src, int64_t bytes) = 0;
  virtual Status OnDevice(int gpu, DevicePtr dst, DevicePtr src, int64_t bytes) = 0;
  // `bytes` from GPU `from` to GPU `to` (point to point: NCCL send/receive on the driver's).
  virtual Status Between(int from, DevicePtr src, int to, DevicePtr dst, int64_t bytes) = 0;
  // A kKernel launch of the program: function<<<grid, block>>>(arena, scratch, args).
  virtual Status Launch(int gpu, const codegen::cuda::Launch& launch, DevicePtr arena,
                        DevicePtr scratch, DevicePtr args) = 0;
  virtual Status Synchronize(int gpu) = 0;
};

// Opens the GPUs with `program` loaded from `images`.
using GpuSystemFactory = std::function<Result<std::shared_ptr<GpuSystem>>(
    const codegen::cuda::CudaProgram& program, const CudaImages& images)>;

// The machine's NVIDIA GPUs through the driver API (driver_system.cc). An error that says why
// where this detrain was built without CUDA, no driver is installed, or no GPU is present.
Result<std::shared_ptr<GpuSystem>> OpenDriverSystem(const codegen::cuda::CudaProgram& program,
                                                    const CudaImages& images);

// How many GPUs the driver sees: a cheap check before a run compiles for them. An error says why
// there are none (no CUDA in this build, no driver, no GPU).
Result<int> CountDriverGpus();

}  // namespace detrain::runtime::cuda

#endif  // DETRAIN_RUNTIME_CUDA_GPU_H_
