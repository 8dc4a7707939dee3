// The device interface every backend implements (STYLE.md point 7): load a plan, copy buffers
// in and out, launch a kernel, synchronize. The executor (executor.h) drives devices through it
// and owns placement and transfers; a device knows nothing of other devices.
//
// Backends are reached through a factory (device_factory.h): the executor names none of them.
// What is particular to one backend travels as BackendOptions, which the executor passes on
// unread (e.g. cuda/cuda_backend.h CudaOptions).
//
// Thread safety: a device is used by one thread at a time.
#ifndef DETRAIN_RUNTIME_DEVICE_H_
#define DETRAIN_RUNTIME_DEVICE_H_

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/isa.h"
#include "base/status.h"
#include "compiler/plan/reader.h"

namespace detrain::runtime {

enum class Backend : uint8_t { kCpu, kCuda };

// "cpu" / "cuda", and back (an unknown name is an error).
const char* BackendName(Backend backend);
Result<Backend> ParseBackend(std::string_view name);

// What one backend needs beyond DeviceOptions: derived by the backend that reads it (its own
// folder declares the type), opaque to everything between the caller and it.
struct BackendOptions {
  virtual ~BackendOptions() = default;
};

// The exact load-time rewrites a device made to a plan (cpu/plan_folds.h), for ExecutorStats.
struct LoadRewrites {
  int64_t transposes = 0;
  int64_t dot_trees = 0;
  int64_t scalar_broadcasts = 0;
  int64_t fused_elementwise = 0;
  int64_t generated_loops = 0;  // elementwise programs run as generated loops (cpu/fused_loops.h)
  int64_t views = 0;            // buffers placed inside another as views (cpu/plan_views.h)
};

// What a device with memory of its own (a GPU) was asked to do, counted since it was made: its
// launches (the program's and its copies on the device) and the bytes copied to it and back.
struct DeviceTraffic {
  int64_t launches = 0;
  int64_t bytes_in = 0;
  int64_t bytes_out = 0;
};

// One buffer for Device::DigestBuffers.
struct BufferDigest {
  int32_t id = 0;
  int64_t bytes = 0;        // the buffer's exact size
  std::string_view prefix;  // attest::ChunkedTensorPrefix of the tensor it holds
};

class Device {
 public:
  virtual ~Device() = default;
  virtual std::string Name() const = 0;
  // Allocates the plan's arena and prepares its kernels; the plan must outlive the device.
  virtual Status Load(const plan::ValidatedPlan& plan) = 0;
  // Copies `bytes` (the buffer's exact size) into / out of buffer `id` of the loaded plan.
  virtual Status CopyIn(int32_t id, const void* src, int64_t bytes) = 0;
  virtual Status CopyOut(int32_t id, void* dst, int64_t bytes) = 0;
  // Runs kernel `id` of the loaded plan on its buffers. May return before it finishes.
  virtual Status Launch(int32_t id) = 0;
  // Waits for every launched kernel.
  virtual Status Synchronize() = 0;
  // Copies buffer `id` of this device into the same buffer of `to` (a device of the same mesh,
  // loaded with the same plan), after the work launched here before.
  virtual Status SendBuffer(int32_t id, Device* to) = 0;
  // The chunked XXH3-128 digests (attest/state_digest.h, policy xxh3-128-chunked) of `buffers`,
  // after the work launched before: 16 canonical bytes each, appended to `out` in order. This
  // default copies each buffer out and hashes it here; a device that hashes its buffers where
  // they lie (the CPU's arena, a GPU's memory) moves no more than the 16 bytes of each.
  virtual Status DigestBuffers(const std::vector<BufferDigest>& buffers, std::string* out);
  // What it was asked to do so far (nothing where its memory is the host's).
  virtual DeviceTraffic Traffic() const { return {}; }
  // The rewrites Load made (none unless the backend makes them).
  virtual LoadRewrites Rewrites() const { return {}; }
};

// What a backend is opened with.
struct DeviceOptions {
  Backend backend = Backend::kCpu;
  int threads = 1;         // the host threads a device may use; never changes a bit
  Isa isa = Isa::kScalar;  // the host ISA path (supported here); never changes a bit
  int mesh_devices = 1;    // the devices of the whole mesh (every rank's)
  // CPU: elementwise programs run as generated, compiled loops (cpu/fused_loops.h) instead of
  // the evaluator; never changes a bit.
  bool generated_loops = false;
  // With generated_loops: where this machine cannot compile them (no compiler), the evaluator
  // runs them instead of the load failing.
  bool loops_fallback = false;
  std::shared_ptr<const BackendOptions> backend_options;  // the backend's own, or null
};

// The devices of one executor, all of one backend, for one validated plan.
class DeviceFactory {
 public:
  virtual ~DeviceFactory() = default;
  // Device `index` of the mesh, loaded with the plan. `whole_plan`: it runs every kernel of the
  // plan (one device, or one replica), which allows rewrites across shards.
  virtual Result<std::unique_ptr<Device>> MakeDevice(int index, bool whole_plan) = 0;
  // What runs the plan, for environment.json: "cpu (avx2, 4 threads)", or each GPU used.
  virtual std::vector<std::string> Describe() const = 0;
};

}  // namespace detrain::runtime

#endif  // DETRAIN_RUNTIME_DEVICE_H_
