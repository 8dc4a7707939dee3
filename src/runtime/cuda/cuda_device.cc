// See cuda_device.h. Load allocates the arena and scratch, and uploads once every launch's
// arguments and every constant; Launch then only enqueues work.
#include "runtime/cuda/cuda_device.h"

#include <algorithm>

#include "attest/state_digest.h"
#include "compiler/interp/interpreter.h"

namespace detrain::runtime::cuda {

using Step = codegen::cuda::Launch;

CudaDevice::CudaDevice(int index, std::shared_ptr<GpuSystem> system, int gpu,
                       const codegen::cuda::CudaProgram* program)
    : index_(index), system_(std::move(system)), gpu_(gpu), program_(program) {}

CudaDevice::~CudaDevice() {
  for (DevicePtr p : {arena_, scratch_, args_, constants_, digest_memory_, digest_items_}) {
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
  traffic_.bytes_in += args_bytes;
  if (args_bytes > 0)
    DETRAIN_RETURN_IF_ERROR(system_->ToDevice(gpu_, args_, args.data(), args_bytes));
  const int64_t constant_bytes = static_cast<int64_t>(constants.size());
  DETRAIN_ASSIGN_OR_RETURN(constants_,
                           system_->Allocate(gpu_, std::max<int64_t>(constant_bytes, 8)));
  traffic_.bytes_in += constant_bytes;
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
  traffic_.bytes_in += bytes;
  return system_->ToDevice(gpu_, arena_ + static_cast<DevicePtr>(plan_->buffer(id).offset), src,
                           bytes);
}

Status CudaDevice::CopyOut(int32_t id, void* dst, int64_t bytes) {
  DETRAIN_RETURN_IF_ERROR(CheckBuffer(id, bytes));
  if (bytes == 0) return Status::Ok();
  traffic_.bytes_out += bytes;
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
    if (l.kind != Step::Kind::kLoop) ++traffic_.launches;  // a kernel, or a copy on the device
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
          ++traffic_.bytes_out;
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
  ++traffic_.launches;
  if (peer->gpu_ == gpu_)
    return system_->OnDevice(gpu_, peer->arena_ + offset, arena_ + offset, bytes);
  return system_->Between(gpu_, arena_ + offset, peer->gpu_, peer->arena_ + offset, bytes);
}

Status CudaDevice::PrepareDigest(const std::vector<BufferDigest>& buffers) {
  for (DevicePtr* p : {&digest_memory_, &digest_items_}) {
    if (*p != 0) system_->Free(gpu_, *p);
    *p = 0;
  }
  digest_key_.clear();
  // Memory: per buffer its prefix and then its leaves; then the buffers' digests, 16 bytes each.
  std::string memory;
  std::vector<long long> leaves = {0}, tensors = {0};
  for (const BufferDigest& b : buffers) {
    const int64_t begin = static_cast<int64_t>(memory.size());
    memory += b.prefix;
    const DevicePtr offset = static_cast<DevicePtr>(plan_->buffer(b.id).offset);
    for (int64_t at = 0; at < b.bytes; at += attest::kDigestChunkBytes) {
      leaves.insert(leaves.end(), {static_cast<long long>(offset + static_cast<DevicePtr>(at)),
                                   std::min(attest::kDigestChunkBytes, b.bytes - at),
                                   static_cast<long long>(memory.size())});
      memory.append(16, '\0');
    }
    tensors.insert(tensors.end(), {begin, static_cast<long long>(memory.size()) - begin, 0});
  }
  memory.resize((memory.size() + 15) / 16 * 16, '\0');
  digest_out_ = static_cast<int64_t>(memory.size());
  for (size_t i = 0; i < buffers.size(); ++i)
    tensors[3 * i + 3] = digest_out_ + 16 * static_cast<long long>(i);
  memory.append(16 * buffers.size(), '\0');
  leaves[0] = static_cast<long long>((leaves.size() - 1) / 3);
  tensors[0] = static_cast<long long>(buffers.size());
  std::vector<long long> items = leaves;
  digest_tensor_items_ = static_cast<int64_t>(items.size());
  items.insert(items.end(), tensors.begin(), tensors.end());
  const int64_t memory_bytes = static_cast<int64_t>(memory.size());
  const int64_t item_bytes = static_cast<int64_t>(items.size() * sizeof(long long));
  DETRAIN_ASSIGN_OR_RETURN(digest_memory_,
                           system_->Allocate(gpu_, std::max<int64_t>(memory_bytes, 16)));
  DETRAIN_ASSIGN_OR_RETURN(digest_items_, system_->Allocate(gpu_, item_bytes));
  traffic_.bytes_in += memory_bytes + item_bytes;
  if (memory_bytes > 0)
    DETRAIN_RETURN_IF_ERROR(system_->ToDevice(gpu_, digest_memory_, memory.data(), memory_bytes));
  DETRAIN_RETURN_IF_ERROR(system_->ToDevice(gpu_, digest_items_, items.data(), item_bytes));
  auto launch = [](const char* function, long long n) {
    Step l;
    l.function = function;
    l.block = codegen::cuda::kDigestBlock;
    l.grid[0] = static_cast<uint32_t>(
        std::max<long long>(1, std::min<long long>((n + l.block - 1) / l.block, 65535)));
    return l;
  };
  digest_leaves_ = launch(codegen::cuda::kDigestLeaves, leaves[0]);
  digest_tensors_ = launch(codegen::cuda::kDigestTensors, tensors[0]);
  return Status::Ok();
}

Status CudaDevice::DigestBuffers(const std::vector<BufferDigest>& buffers, std::string* out) {
  // A train loop digests the same buffers every step: the layout is made once for them.
  std::string key;
  for (const BufferDigest& b : buffers) {
    DETRAIN_RETURN_IF_ERROR(CheckBuffer(b.id, b.bytes));
    key += std::to_string(b.id) + ":" + std::to_string(b.bytes) + ":" +
           std::to_string(b.prefix.size()) + ":";
    key += b.prefix;
  }
  if (key != digest_key_ || digest_memory_ == 0) {
    DETRAIN_RETURN_IF_ERROR(PrepareDigest(buffers));
    digest_key_ = std::move(key);
  }
  traffic_.launches += 2;
  DETRAIN_RETURN_IF_ERROR(
      system_->Launch(gpu_, digest_leaves_, arena_, digest_memory_, digest_items_));
  DETRAIN_RETURN_IF_ERROR(system_->Launch(
      gpu_, digest_tensors_, arena_, digest_memory_,
      digest_items_ + static_cast<DevicePtr>(digest_tensor_items_ * sizeof(long long))));
  const size_t at = out->size();
  out->resize(at + 16 * buffers.size());
  if (buffers.empty()) return Status::Ok();
  traffic_.bytes_out += static_cast<int64_t>(16 * buffers.size());
  return system_->ToHost(gpu_, out->data() + at,
                         digest_memory_ + static_cast<DevicePtr>(digest_out_),
                         static_cast<int64_t>(16 * buffers.size()));
}

}  // namespace detrain::runtime::cuda
