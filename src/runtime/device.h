// The device interface every backend implements (STYLE.md point 7): load a plan, copy buffers
// in and out, launch a kernel, synchronize. The executor (executor.h) drives devices through it
// and owns placement and transfers; a device knows nothing of other devices.
//
// Thread safety: a device is used by one thread at a time.
#ifndef DETRAIN_RUNTIME_DEVICE_H_
#define DETRAIN_RUNTIME_DEVICE_H_

#include <cstdint>
#include <string>

#include "base/status.h"
#include "schemas/cpu_plan.pb.h"

namespace detrain::runtime {

class Device {
 public:
  virtual ~Device() = default;
  virtual std::string Name() const = 0;
  // Allocates the plan's arena and prepares its kernels; the plan must outlive the device.
  virtual Status Load(const plan::v2::Plan& plan) = 0;
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
};

}  // namespace detrain::runtime

#endif  // DETRAIN_RUNTIME_DEVICE_H_
