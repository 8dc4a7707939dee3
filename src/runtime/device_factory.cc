// See device_factory.h (and device.h: what every device shares). Each backend folder implements
// its factory; this file only chooses.
#include "runtime/device_factory.h"

#include <string>

#include "attest/state_digest.h"
#include "runtime/cpu/cpu_device.h"
#include "runtime/cuda/cuda_backend.h"

namespace detrain::runtime {

const char* BackendName(Backend backend) { return backend == Backend::kCuda ? "cuda" : "cpu"; }

Result<Backend> ParseBackend(std::string_view name) {
  if (name == "cpu") return Backend::kCpu;
  if (name == "cuda") return Backend::kCuda;
  return InvalidArgument("unknown backend '" + std::string(name) + "' (cpu or cuda)");
}

Status Device::DigestBuffers(const std::vector<BufferDigest>& buffers, std::string* out) {
  std::vector<std::string> data(buffers.size());
  std::vector<attest::ChunkedInput> inputs;
  for (size_t i = 0; i < buffers.size(); ++i) {
    data[i].resize(static_cast<size_t>(buffers[i].bytes));
    DETRAIN_RETURN_IF_ERROR(CopyOut(buffers[i].id, data[i].data(), buffers[i].bytes));
    inputs.push_back({buffers[i].prefix, data[i]});
  }
  for (const attest::Digest128& d : attest::ChunkedDigests(inputs, nullptr))
    out->append(reinterpret_cast<const char*>(d.data()), d.size());
  return Status::Ok();
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
