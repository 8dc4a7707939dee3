// The CPU device: one arena of the plan's size (anonymous memory: only the pages a kernel writes
// take memory), the plan's kernels prepared for it
// (cpu/kernels.h), run synchronously on a shared thread pool with a chosen ISA path; and the CPU
// backend's factory (device_factory.h), which owns that pool.
//
// Determinism: kernels split work between threads only between output elements, in fixed
// blocks, and every ISA path gives the same bits; so neither the pool's size nor the ISA
// changes a result. Thread safety: one thread at a time (see device.h).
#ifndef DETRAIN_RUNTIME_CPU_CPU_DEVICE_H_
#define DETRAIN_RUNTIME_CPU_CPU_DEVICE_H_

#include <memory>
#include <vector>

#include "runtime/cpu/kernels.h"
#include "runtime/device.h"

namespace detrain::runtime::cpu {

class CpuDevice : public Device {
 public:
  // `pool` must outlive the device; `isa` must be supported here (base/isa.h ClampIsa).
  // `whole_plan`: this device runs every kernel of the plans it loads (one device, or one
  // replica), which allows rewrites across shards (PrepareKernels).
  // `loops`, when not null, makes the elementwise kernels' generated loops (fused_loops.h) at
  // Load; devices of one executor share it.
  // `loops_fallback`: a machine that cannot compile them keeps the evaluator (no error).
  CpuDevice(int index, ThreadPool* pool, Isa isa, bool whole_plan = false,
            std::shared_ptr<FusedLoops> loops = nullptr, bool loops_fallback = false);
  ~CpuDevice() override;

  std::string Name() const override;
  Status Load(const plan::ValidatedPlan& plan) override;
  Status CopyIn(int32_t id, const void* src, int64_t bytes) override;
  Status CopyOut(int32_t id, void* dst, int64_t bytes) override;
  // Hashed in the arena, on the pool: nothing is copied.
  Status DigestBuffers(const std::vector<BufferDigest>& buffers, std::string* out) override;
  Status Launch(int32_t id) override;
  Status Synchronize() override { return Status::Ok(); }
  Status SendBuffer(int32_t id, Device* to) override;
  LoadRewrites Rewrites() const override {
    return {folds_.transposes,        folds_.dot_trees, folds_.scalar_broadcasts,
            folds_.fused_elementwise, generated_loops_, views_};
  }

 private:
  int index_;
  bool whole_plan_;
  ExecContext ctx_;
  void FreeArena();

  uint8_t* arena_ = nullptr;  // mmap'd: page-aligned, zero until written
  size_t arena_bytes_ = 0;
  uint8_t* scratch_ = nullptr;  // ctx_.scratch: the kernels' shared scratch space
  std::vector<ArrayRef> buffers_;
  // The plan with views placed (plan_views.h), when this device placed any: its kernels point
  // into it, so it outlives them.
  std::unique_ptr<plan::ValidatedPlan> placed_;
  int64_t views_ = 0;
  std::shared_ptr<FusedLoops> loops_;  // before kernels_: its code outlives theirs
  bool loops_fallback_ = false;
  std::vector<std::unique_ptr<CpuKernel>> kernels_;
  FoldCounts folds_;
  int64_t generated_loops_ = 0;  // this device's elementwise programs given a generated loop
};

// The CPU backend: devices on `options.isa` sharing one pool of `options.threads` threads.
Result<std::unique_ptr<DeviceFactory>> OpenCpuDevices(const plan::ValidatedPlan& plan,
                                                      const DeviceOptions& options);

}  // namespace detrain::runtime::cpu

#endif  // DETRAIN_RUNTIME_CPU_CPU_DEVICE_H_
