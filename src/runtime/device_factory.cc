// See device_factory.h. Each backend folder implements its factory; this file only chooses.
#include "runtime/device_factory.h"

#include <string>

#include "runtime/cpu/cpu_device.h"
#include "runtime/cuda/cuda_backend.h"

namespace detrain::runtime {

const char* BackendName(Backend backend) { return backend == Backend::kCuda ? "cuda" : "cpu"; }

Result<Backend> ParseBackend(std::string_view name) {
  if (name == "cpu") return Backend::kCpu;
  if (name == "cuda") return Backend::kCuda;
  return InvalidArgument("unknown backend '" + std::string(name) + "' (cpu or cuda)");
}

Result<std::unique_ptr<DeviceFactory>> OpenDevices(const plan::ValidatedPlan& plan,
                                                   const DeviceOptions& options) {
  switch (options.backend) {
    case Backend::kCpu:
      return cpu::OpenCpuDevices(plan, options);
    case Backend::kCuda:
      return cuda::OpenCudaDevices(plan, options);
  }
  return Internal("unknown backend");
}

}  // namespace detrain::runtime
