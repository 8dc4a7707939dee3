// See cuda_backend.h.
#include "runtime/cuda/cuda_backend.h"

#include <algorithm>
#include <string>
#include <vector>

#include "runtime/cuda/cuda_device.h"

namespace detrain::runtime::cuda {
namespace {

class CudaDevices : public DeviceFactory {
 public:
  CudaDevices(const plan::ValidatedPlan& plan, int mesh_devices,
              std::shared_ptr<const codegen::cuda::CudaProgram> program,
              std::shared_ptr<GpuSystem> gpus)
      : plan_(plan),
        mesh_devices_(mesh_devices),
        program_(std::move(program)),
        gpus_(std::move(gpus)) {}

  Result<std::unique_ptr<Device>> MakeDevice(int index, bool /*whole_plan*/) override {
    auto device =
        std::make_unique<CudaDevice>(index, gpus_, index % gpus_->DeviceCount(), program_.get());
    DETRAIN_RETURN_IF_ERROR(device->Load(plan_));
    return std::unique_ptr<Device>(std::move(device));
  }

  std::vector<std::string> Describe() const override {
    std::vector<std::string> out;
    for (int g = 0; g < std::min(gpus_->DeviceCount(), mesh_devices_); ++g)
      out.push_back("gpu " + std::to_string(g) + ": " + gpus_->Describe(g));
    return out;
  }

 private:
  const plan::ValidatedPlan& plan_;
  int mesh_devices_;
  std::shared_ptr<const codegen::cuda::CudaProgram> program_;
  std::shared_ptr<GpuSystem> gpus_;
};

}  // namespace

bool HasGpuSystem(const BackendOptions* options) {
  const auto* cuda = dynamic_cast<const CudaOptions*>(options);
  return cuda != nullptr && cuda->gpu_system;
}

ExecutorOptions WithCompiledCuda(const ExecutorOptions& options,
                                 std::shared_ptr<const codegen::cuda::CudaProgram> program,
                                 std::shared_ptr<const CudaImages> images) {
  if (options.backend != Backend::kCuda) return options;
  auto cuda = std::make_shared<CudaOptions>();
  if (const auto* given = dynamic_cast<const CudaOptions*>(options.backend_options.get()))
    *cuda = *given;
  if (cuda->program == nullptr) cuda->program = std::move(program);
  if (cuda->images == nullptr) cuda->images = std::move(images);
  ExecutorOptions out = options;
  out.backend_options = std::move(cuda);
  return out;
}

Result<std::unique_ptr<DeviceFactory>> OpenCudaDevices(const plan::ValidatedPlan& plan,
                                                       const DeviceOptions& options) {
  const auto* given = dynamic_cast<const CudaOptions*>(options.backend_options.get());
  std::shared_ptr<const codegen::cuda::CudaProgram> program =
      given != nullptr ? given->program : nullptr;
  if (program == nullptr) {
    Result<codegen::cuda::CudaProgram> generated = codegen::cuda::GenerateCuda(plan);
    if (!generated.ok()) return generated.status().WithContext("--backend cuda");
    program = std::make_shared<const codegen::cuda::CudaProgram>(std::move(*generated));
  }
  std::shared_ptr<const CudaImages> images = given != nullptr ? given->images : nullptr;
  if (images == nullptr) {
    DETRAIN_ASSIGN_OR_RETURN(CudaImages compiled, codegen::cuda::CompileImages(*program));
    images = std::make_shared<const CudaImages>(std::move(compiled));
  }
  Result<std::shared_ptr<GpuSystem>> gpus = given != nullptr && given->gpu_system
                                                ? given->gpu_system(*program, *images)
                                                : OpenDriverSystem(*program, *images);
  if (!gpus.ok()) return gpus.status().WithContext("--backend cuda");
  return std::unique_ptr<DeviceFactory>(
      new CudaDevices(plan, options.mesh_devices, std::move(program), std::move(*gpus)));
}

}  // namespace detrain::runtime::cuda
