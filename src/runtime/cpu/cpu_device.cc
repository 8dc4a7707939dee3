// See cpu_device.h.
#include "runtime/cpu/cpu_device.h"

#include <sys/mman.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "attest/state_digest.h"
#include "base/budget.h"
#include "runtime/cpu/plan_views.h"

namespace detrain::runtime::cpu {

CpuDevice::CpuDevice(int index, ThreadPool* pool, Isa isa, bool whole_plan,
                     std::shared_ptr<FusedLoops> loops, bool loops_fallback)
    : index_(index),
      whole_plan_(whole_plan),
      loops_(std::move(loops)),
      loops_fallback_(loops_fallback) {
  ctx_.pool = pool;
  ctx_.isa = isa;
}

CpuDevice::~CpuDevice() {
  FreeArena();
  std::free(scratch_);
}

void CpuDevice::FreeArena() {
  if (arena_ != nullptr) ::munmap(arena_, arena_bytes_);
  arena_ = nullptr;
  arena_bytes_ = 0;
}

std::string CpuDevice::Name() const { return "cpu:" + std::to_string(index_); }

Status CpuDevice::Load(const plan::ValidatedPlan& given) {
  // A device that runs every kernel places views where the plan made copies (plan_views.h);
  // its buffers then lie elsewhere in its arena than the plan says, which only this device sees.
  kernels_.clear();
  views_ = 0;
  placed_.reset();
  if (whole_plan_) {
    DETRAIN_ASSIGN_OR_RETURN(placed_, PlaceViews(given, &views_));
  }
  const plan::ValidatedPlan& plan = placed_ != nullptr ? *placed_ : given;
  buffers_ = plan.buffers();
  FreeArena();
  // Anonymous pages read as zero and take memory only once written: a buffer no kernel writes
  // (a dot a load-time rewrite folded away, cpu/plan_folds.h) costs address space, not memory.
  // Zero either way, as a cleared allocation was: no byte a kernel reads depends on the
  // allocator.
  const size_t bytes = static_cast<size_t>((plan.proto().arena_bytes() + 63) / 64 * 64 + 64);
  void* arena = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  // Within the budget (the plan reader checked it), but the system refuses: a limit of the
  // machine, as the budget's own refusals are.
  if (arena == MAP_FAILED)
    return ResourceExhausted("cannot allocate a " + std::to_string(bytes) + "-byte arena");
  arena_ = static_cast<uint8_t*>(arena);
  arena_bytes_ = bytes;
  kernels_.clear();
  int64_t scratch = 0;
  DETRAIN_ASSIGN_OR_RETURN(kernels_, PrepareKernels(plan, whole_plan_, &folds_));
  generated_loops_ = 0;
  if (loops_ != nullptr) {
    const int64_t before = loops_->requests();
    for (const auto& kernel : kernels_) {
      if (kernel) kernel->RequestLoops(*loops_);
    }
    const Status built = loops_->Build();
    if (built.ok()) {
      generated_loops_ = loops_->requests() - before;
    } else if (!loops_fallback_ || built.code() != StatusCode::kUnavailable) {
      return built;
    }  // else: no compiler here; every kernel keeps the evaluator (its slot stayed null)
  }
  for (const auto& kernel : kernels_) {
    if (kernel) scratch = std::max(scratch, kernel->ScratchBytes());
  }
  DETRAIN_RETURN_IF_ERROR(CheckTotalBytes(scratch, "the kernels' scratch space"));
  std::free(scratch_);
  const size_t scratch_alloc = static_cast<size_t>((scratch + 63) / 64 * 64 + 64);
  scratch_ = static_cast<uint8_t*>(std::aligned_alloc(64, scratch_alloc));
  if (scratch_ == nullptr)
    return ResourceExhausted("cannot allocate " + std::to_string(scratch) + " bytes of scratch");
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

Status CpuDevice::DigestBuffers(const std::vector<BufferDigest>& buffers, std::string* out) {
  std::vector<attest::ChunkedInput> inputs;
  for (const BufferDigest& b : buffers) {
    if (b.id < 0 || b.id >= static_cast<int32_t>(buffers_.size()) ||
        buffers_[static_cast<size_t>(b.id)].bytes != b.bytes) {
      return InvalidArgument(Name() + ": digest of buffer " + std::to_string(b.id) +
                             " of the wrong size");
    }
    const ArrayRef& a = buffers_[static_cast<size_t>(b.id)];
    inputs.push_back(
        {b.prefix,
         {reinterpret_cast<const char*>(arena_ + a.offset), static_cast<size_t>(a.bytes)}});
  }
  for (const attest::Digest128& d : attest::ChunkedDigests(inputs, ctx_.pool))
    out->append(reinterpret_cast<const char*>(d.data()), d.size());
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

namespace {

class CpuDevices : public DeviceFactory {
 public:
  CpuDevices(const plan::ValidatedPlan& plan, const DeviceOptions& options)
      : plan_(plan),
        options_(options),
        pool_(std::make_unique<ThreadPool>(static_cast<size_t>(options.threads))),
        loops_(options.generated_loops ? std::make_shared<FusedLoops>(options.isa) : nullptr) {}

  Result<std::unique_ptr<Device>> MakeDevice(int index, bool whole_plan) override {
    auto device = std::make_unique<CpuDevice>(index, pool_.get(), options_.isa, whole_plan, loops_,
                                              options_.loops_fallback);
    DETRAIN_RETURN_IF_ERROR(device->Load(plan_));
    return std::unique_ptr<Device>(std::move(device));
  }

  std::vector<std::string> Describe() const override {
    return {"cpu (" + std::string(IsaName(options_.isa)) + ", " + std::to_string(options_.threads) +
            " threads" + (loops_ != nullptr && loops_->loaded() > 0 ? ", generated loops" : "") +
            ")"};
  }

 private:
  const plan::ValidatedPlan& plan_;
  DeviceOptions options_;
  std::unique_ptr<ThreadPool> pool_;
  std::shared_ptr<FusedLoops> loops_;  // generated loops, shared by the devices; or null
};

}  // namespace

Result<std::unique_ptr<DeviceFactory>> OpenCpuDevices(const plan::ValidatedPlan& plan,
                                                      const DeviceOptions& options) {
  return std::unique_ptr<DeviceFactory>(new CpuDevices(plan, options));
}

}  // namespace detrain::runtime::cpu
