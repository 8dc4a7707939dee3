// See cpu_device.h.
#include "runtime/cpu/cpu_device.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "base/budget.h"
#include "compiler/codegen/common/kernel_spec.h"
#include "runtime/cpu/checked.h"

namespace detrain::runtime::cpu {

// Arenas above this are refused rather than attempted (a plan is a file and can lie).
constexpr int64_t kMaxArenaBytes = int64_t{64} << 30;

Result<std::vector<ArrayRef>> CheckBuffers(const plan::v2::Plan& plan) {
  if (plan.arena_bytes() < 0 || plan.arena_bytes() > kMaxArenaBytes) {
    return InvalidArgument("plan: arena of " + std::to_string(plan.arena_bytes()) + " bytes");
  }
  // Kernels access elements through typed pointers: every buffer must be aligned to at least 8.
  const int64_t align = plan.alignment();
  if (align < 8 || align > 4096 || (align & (align - 1)) != 0) {
    return InvalidArgument("plan: buffer alignment " + std::to_string(align) +
                           " (a power of two from 8 to 4096)");
  }
  DETRAIN_RETURN_IF_ERROR(CheckTotalBytes(plan.arena_bytes(), "the plan's buffer arena"));
  std::vector<ArrayRef> out;
  for (int i = 0; i < plan.buffers_size(); ++i) {
    const plan::v2::Buffer& b = plan.buffers(i);
    ArrayRef a;
    a.id = i;
    if (b.id() != i)
      return InvalidArgument("plan: buffer ids out of order at " + std::to_string(i));
    DETRAIN_ASSIGN_OR_RETURN(a.type, codegen::FromPlanType(b.type()));
    a.dims.assign(b.dims().begin(), b.dims().end());
    DETRAIN_ASSIGN_OR_RETURN(a.elements, CheckedElementCount(a.dims));
    int size = ir::ElementTypeByteSize(a.type);
    if (a.elements > kMaxArenaBytes / size)
      return InvalidArgument("plan: buffer " + std::to_string(i) + " is too large");
    a.bytes = a.elements * size;
    a.offset = b.offset();
    DETRAIN_RETURN_IF_ERROR(CheckTensorBytes(a.bytes, "plan: buffer " + std::to_string(i)));
    if (b.size() != a.bytes || a.offset < 0 || a.offset % align != 0 ||
        a.offset > plan.arena_bytes() - a.bytes) {
      return InvalidArgument("plan: buffer " + std::to_string(i) + " does not fit the arena");
    }
    out.push_back(std::move(a));
  }
  return out;
}

CpuDevice::CpuDevice(int index, ThreadPool* pool, Isa isa, bool whole_plan)
    : index_(index), whole_plan_(whole_plan) {
  ctx_.pool = pool;
  ctx_.isa = isa;
}

CpuDevice::~CpuDevice() {
  std::free(arena_);
  std::free(scratch_);
}

std::string CpuDevice::Name() const { return "cpu:" + std::to_string(index_); }

Status CpuDevice::Load(const plan::v2::Plan& plan) {
  plan_ = &plan;
  DETRAIN_ASSIGN_OR_RETURN(buffers_, CheckBuffers(plan));
  std::free(arena_);
  size_t bytes = static_cast<size_t>((plan.arena_bytes() + 63) / 64 * 64 + 64);
  arena_ = static_cast<uint8_t*>(std::aligned_alloc(64, bytes));
  if (arena_ == nullptr)
    return FailedPrecondition("cannot allocate a " + std::to_string(bytes) + "-byte arena");
  std::memset(arena_, 0, bytes);
  kernels_.clear();
  int64_t scratch = 0;
  DETRAIN_ASSIGN_OR_RETURN(kernels_, PrepareKernels(plan, buffers_, whole_plan_, &folds_));
  for (const auto& kernel : kernels_) {
    if (kernel) scratch = std::max(scratch, kernel->ScratchBytes());
  }
  DETRAIN_RETURN_IF_ERROR(CheckTotalBytes(scratch, "the kernels' scratch space"));
  std::free(scratch_);
  const size_t scratch_alloc = static_cast<size_t>((scratch + 63) / 64 * 64 + 64);
  scratch_ = static_cast<uint8_t*>(std::aligned_alloc(64, scratch_alloc));
  if (scratch_ == nullptr)
    return FailedPrecondition("cannot allocate " + std::to_string(scratch) + " bytes of scratch");
  ctx_.scratch = scratch_;
  ctx_.scratch_bytes = scratch;
  return Status::Ok();
}

Status CpuDevice::CopyIn(int32_t id, const void* src, int64_t bytes) {
  if (id < 0 || id >= static_cast<int32_t>(buffers_.size()) ||
      buffers_[static_cast<size_t>(id)].bytes != bytes) {
    return InvalidArgument(Name() + ": copy into buffer " + std::to_string(id) +
                           " of the wrong size");
  }
  if (bytes > 0)
    std::memcpy(arena_ + buffers_[static_cast<size_t>(id)].offset, src, static_cast<size_t>(bytes));
  return Status::Ok();
}

Status CpuDevice::CopyOut(int32_t id, void* dst, int64_t bytes) {
  if (id < 0 || id >= static_cast<int32_t>(buffers_.size()) ||
      buffers_[static_cast<size_t>(id)].bytes != bytes) {
    return InvalidArgument(Name() + ": copy out of buffer " + std::to_string(id) +
                           " of the wrong size");
  }
  if (bytes > 0)
    std::memcpy(dst, arena_ + buffers_[static_cast<size_t>(id)].offset, static_cast<size_t>(bytes));
  return Status::Ok();
}

Status CpuDevice::SendBuffer(int32_t id, Device* to) {
  if (id < 0 || id >= static_cast<int32_t>(buffers_.size()))
    return InvalidArgument(Name() + ": no buffer " + std::to_string(id));
  const ArrayRef& b = buffers_[static_cast<size_t>(id)];
  return to->CopyIn(id, arena_ + b.offset, b.bytes);  // arena to arena: one process
}

Status CpuDevice::Launch(int32_t id) {
  if (id < 0 || id >= static_cast<int32_t>(kernels_.size()))
    return InvalidArgument(Name() + ": no kernel " + std::to_string(id));
  const auto& kernel = kernels_[static_cast<size_t>(id)];
  return kernel ? kernel->Run(arena_, ctx_) : Status::Ok();
}

}  // namespace detrain::runtime::cpu
