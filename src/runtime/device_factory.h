// The one place that names every backend: opens the devices of `options.backend` for a
// validated plan (the CPU's cpu/cpu_backend.h, CUDA's cuda/cuda_backend.h). The executor
// includes this header and device.h, never a backend's.
//
// Thread safety: a pure function of its arguments; the factory it returns is used by one thread
// at a time.
#ifndef DETRAIN_RUNTIME_DEVICE_FACTORY_H_
#define DETRAIN_RUNTIME_DEVICE_FACTORY_H_

#include <memory>

#include "base/status.h"
#include "compiler/plan/reader.h"
#include "runtime/device.h"

namespace detrain::runtime {

// `plan` must outlive the factory and its devices. A backend's error names it ("--backend cuda:
// ...").
Result<std::unique_ptr<DeviceFactory>> OpenDevices(const plan::ValidatedPlan& plan,
                                                   const DeviceOptions& options);

}  // namespace detrain::runtime

#endif  // DETRAIN_RUNTIME_DEVICE_FACTORY_H_
