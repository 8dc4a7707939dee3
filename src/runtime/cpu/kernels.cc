// See kernels.h: PrepareKernel checks a kernel's operands against the plan's buffers and hands
// it to the maker of its spec kind.
#include "runtime/cpu/kernels.h"

#include "runtime/cpu/isa_kernels.h"

namespace detrain::runtime::cpu {
namespace {

Status Bad(const plan::v2::Kernel& k, const std::string& what) {
  return InvalidArgument("plan: kernel " + std::to_string(k.id()) + " (" + k.name() + "): " + what);
}

}  // namespace

void ForBlocks(const ExecContext& ctx, int64_t blocks, const std::function<void(int64_t)>& fn) {
  if (blocks <= 0) return;
  if (blocks == 1 || ctx.pool == nullptr || ctx.pool->size() == 1) {
    for (int64_t b = 0; b < blocks; ++b) fn(b);
    return;
  }
  ctx.pool->ParallelFor(static_cast<size_t>(blocks),
                        [&](size_t b) { fn(static_cast<int64_t>(b)); });
}

const IsaKernels& KernelsFor(Isa isa) {
  switch (isa) {
    case Isa::kScalar:
      return isa_scalar::kKernels;
    case Isa::kAvx2:
      return isa_avx2::kKernels;
    case Isa::kAvx512:
      return isa_avx512::kKernels;
  }
  return isa_scalar::kKernels;
}

Result<std::unique_ptr<CpuKernel>> PrepareKernel(const plan::v2::Kernel& k,
                                                 const std::vector<ArrayRef>& buffers) {
  if (k.has_alias() || k.has_all_reduce()) return std::unique_ptr<CpuKernel>();
  if (k.has_while_loop()) return Bad(k, "a loop is prepared with its plan (PrepareKernels)");
  auto buffer = [&](int32_t id) -> Result<ArrayRef> {
    if (id < 0 || id >= static_cast<int32_t>(buffers.size()))
      return Bad(k, "buffer " + std::to_string(id) + " out of range");
    return buffers[static_cast<size_t>(id)];
  };
  std::vector<ArrayRef> in, out;
  for (const auto& op : k.operands()) {
    if (op.buffers_size() != 1) return Bad(k, "an operand that is not one array");
    DETRAIN_ASSIGN_OR_RETURN(ArrayRef a, buffer(op.buffers(0)));
    in.push_back(a);
  }
  for (int32_t id : k.outputs()) {
    DETRAIN_ASSIGN_OR_RETURN(ArrayRef a, buffer(id));
    out.push_back(a);
  }
  if (k.has_threefry()) return MakeThreefry(k, std::move(in), std::move(out));
  if (out.size() != 1) return Bad(k, "expected one result array");
  auto arity = [&](size_t n) {
    return in.size() == n ? Status::Ok() : Bad(k, "expected " + std::to_string(n) + " operands");
  };
  switch (k.spec_case()) {
    case plan::v2::Kernel::kElementwise:
      return MakeElementwise(k, std::move(in), out[0]);
    case plan::v2::Kernel::kDot:
      DETRAIN_RETURN_IF_ERROR(arity(2));
      return MakeDot(k, in[0], in[1], out[0]);
    case plan::v2::Kernel::kConvolution:
      DETRAIN_RETURN_IF_ERROR(arity(2));
      return MakeConvolution(k, in[0], in[1], out[0]);
    case plan::v2::Kernel::kReduce:
      DETRAIN_RETURN_IF_ERROR(arity(2));
      return MakeReduce(k, in[0], in[1], out[0]);
    case plan::v2::Kernel::kReduceWindow:
      DETRAIN_RETURN_IF_ERROR(arity(2));
      return MakeReduceWindow(k, in[0], in[1], out[0]);
    case plan::v2::Kernel::kGather:
    case plan::v2::Kernel::kScatter:
      return MakeIndexing(k, std::move(in), out[0]);
    case plan::v2::Kernel::kConstant:
    case plan::v2::Kernel::kIota:
      DETRAIN_RETURN_IF_ERROR(arity(0));
      return MakeMovement(k, std::move(in), out[0]);
    case plan::v2::Kernel::kTranspose:
    case plan::v2::Kernel::kBroadcast:
    case plan::v2::Kernel::kCopy:
    case plan::v2::Kernel::kSlice:
    case plan::v2::Kernel::kReverse:
      DETRAIN_RETURN_IF_ERROR(arity(1));
      return MakeMovement(k, std::move(in), out[0]);
    case plan::v2::Kernel::kConcatenate:
    case plan::v2::Kernel::kPad:
    case plan::v2::Kernel::kDynamicSlice:
    case plan::v2::Kernel::kDynamicUpdateSlice:
      return MakeMovement(k, std::move(in), out[0]);
    default:
      return Bad(k, "no spec");
  }
}

Result<std::vector<std::unique_ptr<CpuKernel>>> PrepareKernels(const plan::v2::Plan& plan,
                                                               const std::vector<ArrayRef>& buffers,
                                                               bool whole_plan, FoldCounts* folds,
                                                               int depth) {
  FoldCounts counts;
  std::vector<std::unique_ptr<CpuKernel>> kernels;
  for (const plan::v2::Kernel& k : plan.kernels()) {
    DETRAIN_ASSIGN_OR_RETURN(auto kernel, k.has_while_loop() ? MakeWhile(k, plan, buffers, depth)
                                                             : PrepareKernel(k, buffers));
    kernels.push_back(std::move(kernel));
  }
  for (int32_t i = 0; i < plan.kernels_size(); ++i) {
    if (FoldDotTranspose(plan, buffers, kernels, i)) {
      kernels[static_cast<size_t>(i)].reset();
      ++counts.transposes;
    }
  }
  if (whole_plan) {
    for (int32_t i = 0; i < plan.kernels_size(); ++i)
      counts.dot_trees += FoldDotTree(plan, buffers, kernels, i) ? 1 : 0;
  }
  if (folds != nullptr) *folds = counts;
  return kernels;
}

}  // namespace detrain::runtime::cpu
