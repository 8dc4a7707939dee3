// The CUDA device (runtime/device.h): a plan's arena in one GPU's memory, run by the generated
// program's launch plan (codegen/cuda/cuda_program.h) — for each plan kernel, its launches, copies
// and constants in order. Several CUDA devices may share one GPU (a mesh larger than the
// machine's GPU count): each has its own arena. Kernels run asynchronously on the GPU's stream;
// CopyOut and Synchronize wait.
//
// Determinism: the launches are the program's; a device adds no arithmetic. Thread safety: one
// thread at a time (device.h).
#ifndef DETRAIN_RUNTIME_CUDA_CUDA_DEVICE_H_
#define DETRAIN_RUNTIME_CUDA_CUDA_DEVICE_H_

#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "runtime/cuda/gpu.h"
#include "runtime/device.h"

namespace detrain::runtime::cuda {

class CudaDevice : public Device {
 public:
  // Device `index` of the mesh on GPU `gpu` of `system`; `program` must be the plan's and
  // outlive the device.
  CudaDevice(int index, std::shared_ptr<GpuSystem> system, int gpu,
             const codegen::cuda::CudaProgram* program);
  ~CudaDevice() override;

  std::string Name() const override;
  Status Load(const plan::ValidatedPlan& plan) override;
  Status CopyIn(int32_t id, const void* src, int64_t bytes) override;
  Status CopyOut(int32_t id, void* dst, int64_t bytes) override;
  Status Launch(int32_t id) override;
  Status Synchronize() override;
  Status SendBuffer(int32_t id, Device* to) override;
  // On the GPU, by the program's digest kernels (codegen/cuda/cuda_program.h kDigestLeaves):
  // the buffers stay where they are and 16 bytes per buffer come back.
  Status DigestBuffers(const std::vector<BufferDigest>& buffers, std::string* out) override;
  DeviceTraffic Traffic() const override { return traffic_; }

  int gpu() const { return gpu_; }

 private:
  Status CheckBuffer(int32_t id, int64_t bytes) const;
  // Records where `steps`' arguments and constants go in args_ and constants_ (Load).
  Status Place(const std::vector<codegen::cuda::Launch>& steps, std::vector<long long>* args,
               std::string* constants);
  // Lays out the digest of `buffers` in GPU memory (their prefixes, room for their leaves, the
  // kernels' items), once for each new set of buffers.
  Status PrepareDigest(const std::vector<BufferDigest>& buffers);
  // Enqueues `steps`; a kLoop step runs its loop from the host. `iterations`: the count of the
  // loop that holds these steps (null outside any loop).
  Status RunSteps(const std::vector<codegen::cuda::Launch>& steps, int64_t* iterations);

  int index_;
  std::shared_ptr<GpuSystem> system_;
  int gpu_;
  const codegen::cuda::CudaProgram* program_;
  const plan::ValidatedPlan* plan_ = nullptr;
  DevicePtr arena_ = 0, scratch_ = 0, args_ = 0, constants_ = 0;
  // Per launch step of the program (loops' included): where its arguments start in args_ (in
  // long longs), or where its constant's bytes are in constants_. Looked up, never iterated.
  std::unordered_map<const codegen::cuda::Launch*, int64_t> at_;
  // The state digest's layout (PrepareDigest): for which buffers, its GPU memory (the prefixes
  // and leaves, then the digests) and items, the two launches and where the digests are.
  DeviceTraffic traffic_;
  std::string digest_key_;
  DevicePtr digest_memory_ = 0, digest_items_ = 0;
  codegen::cuda::Launch digest_leaves_, digest_tensors_;
  int64_t digest_tensor_items_ = 0;  // where the tensor items start in digest_items_ (words)
  int64_t digest_out_ = 0;           // where the digests are in digest_memory_
};

}  // namespace detrain::runtime::cuda

#endif  // DETRAIN_RUNTIME_CUDA_CUDA_DEVICE_H_
