// See cuda_device.h. Load allocates the arena and scratch, and uploads once every launch's
// arguments and every constant; Launch then only enqueues work.
#include "runtime/cuda/cuda_device.h"

#include <algorithm>

#include "compiler/interp/interpreter.h"

namespace detrain::runtime::cuda {

using Step = codegen::cuda::Launch;

CudaDevice::CudaDevice(int index, std::shared_ptr<GpuSystem> system, int gpu,
                       const codegen::cuda::CudaProgram* program)
    : index_(index), system_(std::move(system)), gpu_(gpu), program_(program) {}

CudaDevice::~CudaDevice() {
  for (DevicePtr p : {arena_, scratch_, args_, constants_}) {
    if (p != 0) system_->Free(gpu_, p);
  }
}

std::string CudaDevice::Name() const {
  return "cuda:" + std::to_string(index_) + " (gpu " + std::to_string(gpu_) + ")";
}

Status CudaDevice::Load(const plan::ValidatedPlan& plan) {
  if (program_->launches.size() != plan.kernels().size())
    return Internal("the CUDA program was not generated from this plan");
  plan_ = &plan;
  // Sizes were checked by the plan reader (compiler/plan/reader.h).
  DETRAIN_ASSIGN_OR_RETURN(
      arena_, system_->Allocate(gpu_, std::max<int64_t>(plan.proto().arena_bytes(), 1)));
  DETRAIN_ASSIGN_OR_RETURN(scratch_,
                           system_->Allocate(gpu_, std::max<int64_t>(program_->scratch_bytes, 1)));
  std::vector<long long> args;
  std::string constants;
  at_.clear();
  for (const auto& steps : program_->launches)
    DETRAIN_RETURN_IF_ERROR(Place(steps, &args, &constants));
  for (const auto& loop : program_->loops) {
    DETRAIN_RETURN_IF_ERROR(Place(loop.condition, &args, &constants));
    DETRAIN_RETURN_IF_ERROR(Place(loop.body, &args, &constants));
  }
  const int64_t args_bytes = static_cast<int64_t>(args.size() * sizeof(long long));
  DETRAIN_ASSIGN_OR_RETURN(args_, system_->Allocate(gpu_, std::max<int64_t>(args_bytes, 8)));
  if (args_bytes > 0)
    DETRAIN_RETURN_IF_ERROR(system_->ToDevice(gpu_, args_, args.data(), args_bytes));
  const int64_t constant_bytes = static_cast<int64_t>(constants.size());
  DETRAIN_ASSIGN_OR_RETURN(constants_,
                           system_->Allocate(gpu_, std::max<int64_t>(constant_bytes, 8)));
  if (constant_bytes > 0)
    DETRAIN_RETURN_IF_ERROR(system_->ToDevice(gpu_, constants_, constants.data(), constant_bytes));
  return Status::Ok();
}

Status CudaDevice::CheckBuffer(int32_t id, int64_t bytes) const {
  if (plan_ == nullptr || id < 0 || id >= static_cast<int32_t>(plan_->buffers().size()) ||
      plan_->buffer(id).bytes != bytes) {
    return InvalidArgument(Name() + ": buffer " + std::to_string(id) + " of the wrong size");
  }
  return Status::Ok();
}

Status CudaDevice::CopyIn(int32_t id, const void* src, int64_t bytes) {
  DETRAIN_RETURN_IF_ERROR(CheckBuffer(id, bytes));
  if (bytes == 0) return Status::Ok();
  return system_->ToDevice(gpu_, arena_ + static_cast<DevicePtr>(plan_->buffer(id).offset), src,
                           bytes);
}

Status CudaDevice::CopyOut(int32_t id, void* dst, int64_t bytes) {
  DETRAIN_RETURN_IF_ERROR(CheckBuffer(id, bytes));
  if (bytes == 0) return Status::Ok();
  return system_->ToHost(gpu_, dst, arena_ + static_cast<DevicePtr>(plan_->buffer(id).offset),
                         bytes);
}

Status CudaDevice::Place(const std::vector<Step>& steps, std::vector<long long>* args,
                         std::string* constants) {
  for (const Step& l : steps) {
    if (l.kind == Step::Kind::kKernel) {
      at_[&l] = static_cast<int64_t>(args->size());
      args->insert(args->end(), l.args.begin(), l.args.end());
    } else if (l.kind == Step::Kind::kConstant) {
      if (static_cast<int64_t>(l.constant.size()) != l.bytes)
        return InvalidArgument("plan: a constant's size differs from its buffer's");
      at_[&l] = static_cast<int64_t>(constants->size());
      *constants += l.constant;
      constants->resize((constants->size() + 15) / 16 * 16, '\0');
    } else if (l.kind == Step::Kind::kLoop &&
               (l.loop < 0 || static_cast<size_t>(l.loop) >= program_->loops.size())) {
      return Internal("the CUDA program names a missing loop");
    }
  }
  return Status::Ok();
}

Status CudaDevice::RunSteps(const std::vector<Step>& steps, int64_t* iterations) {
  for (const Step& l : steps) {
    switch (l.kind) {
      case Step::Kind::kKernel:
        DETRAIN_RETURN_IF_ERROR(
            system_->Launch(gpu_, l, arena_, scratch_,
                            args_ + static_cast<DevicePtr>(at_.at(&l) * sizeof(long long))));
        break;
      case Step::Kind::kCopy:
        DETRAIN_RETURN_IF_ERROR(system_->OnDevice(gpu_, arena_ + static_cast<DevicePtr>(l.dst),
                                                  arena_ + static_cast<DevicePtr>(l.src), l.bytes));
        break;
      case Step::Kind::kConstant:
        DETRAIN_RETURN_IF_ERROR(system_->OnDevice(gpu_, arena_ + static_cast<DevicePtr>(l.dst),
                                                  constants_ + static_cast<DevicePtr>(at_.at(&l)),
                                                  l.bytes));
        break;
      case Step::Kind::kLoop: {
        // One budget for a loop and the loops nested in it, as the interpreter's and the CPU's.
        const codegen::cuda::Loop& loop = program_->loops[static_cast<size_t>(l.loop)];
        int64_t own = 0;
        int64_t* count = iterations != nullptr ? iterations : &own;
        for (;;) {
          DETRAIN_RETURN_IF_ERROR(RunSteps(loop.condition, count));
          uint8_t go = 0;  // ToHost waits for the condition's launches
          DETRAIN_RETURN_IF_ERROR(
              system_->ToHost(gpu_, &go, arena_ + static_cast<DevicePtr>(loop.predicate), 1));
          if (go == 0) break;
          if (++*count > interp::kMaxWhileIterations) {
            return InvalidArgument("while '" + loop.name + "': the loops run more than " +
                                   std::to_string(interp::kMaxWhileIterations) + " iterations");
          }
          DETRAIN_RETURN_IF_ERROR(RunSteps(loop.body, count));
        }
        break;
      }
    }
  }
  return Status::Ok();
}

Status CudaDevice::Launch(int32_t id) {
  if (plan_ == nullptr || id < 0 || id >= static_cast<int32_t>(plan_->kernels().size()))
    return InvalidArgument(Name() + ": no kernel " + std::to_string(id));
  return RunSteps(program_->launches[static_cast<size_t>(id)], nullptr);
}

Status CudaDevice::Synchronize() { return system_->Synchronize(gpu_); }

Status CudaDevice::SendBuffer(int32_t id, Device* to) {
  if (plan_ == nullptr || id < 0 || id >= static_cast<int32_t>(plan_->buffers().size()))
    return InvalidArgument(Name() + ": no buffer " + std::to_string(id));
  const int64_t bytes = plan_->buffer(id).bytes;
  const DevicePtr offset = static_cast<DevicePtr>(plan_->buffer(id).offset);
  auto* peer = dynamic_cast<CudaDevice*>(to);
  if (peer == nullptr || peer->system_ != system_) {
    std::string staged(static_cast<size_t>(bytes), '\0');
    DETRAIN_RETURN_IF_ERROR(CopyOut(id, staged.data(), bytes));
    return to->CopyIn(id, staged.data(), bytes);
  }
  if (bytes == 0) return Status::Ok();
  if (peer->gpu_ == gpu_)
    return system_->OnDevice(gpu_, peer->arena_ + offset, arena_ + offset, bytes);
  return system_->Between(gpu_, arena_ + offset, peer->gpu_, peer->arena_ + offset, bytes);
}

}  // namespace detrain::runtime::cuda
