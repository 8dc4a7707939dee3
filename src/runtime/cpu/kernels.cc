// See kernels.h: PrepareKernel hands a validated kernel to the maker of its spec kind, and
// PrepareKernels applies the load-time folds (plan_folds.h) to a whole plan's kernels.
#include "runtime/cpu/kernels.h"

#include "base/math/crmath.h"
#include "runtime/cpu/isa_kernels.h"
#include "runtime/cpu/plan_folds.h"

namespace detrain::runtime::cpu {

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

bool ArrayUnaryOn(Isa isa, ir::UnaryOp op, const float* in, float* out, int64_t n) {
  const size_t len = static_cast<size_t>(n);
  namespace a = crmath::array_detail;
  switch (op) {
    case ir::UnaryOp::kExp:
      a::ExpArrayOn(isa, in, out, len);
      return true;
    case ir::UnaryOp::kExpm1:
      a::Expm1ArrayOn(isa, in, out, len);
      return true;
    case ir::UnaryOp::kLog:
      a::LogArrayOn(isa, in, out, len);
      return true;
    case ir::UnaryOp::kLog1p:
      a::Log1pArrayOn(isa, in, out, len);
      return true;
    case ir::UnaryOp::kTanh:
      a::TanhArrayOn(isa, in, out, len);
      return true;
    case ir::UnaryOp::kLogistic:
      a::LogisticArrayOn(isa, in, out, len);
      return true;
    case ir::UnaryOp::kErf:
      a::ErfArrayOn(isa, in, out, len);
      return true;
    case ir::UnaryOp::kRsqrt:
      a::RsqrtArrayOn(isa, in, out, len);
      return true;
    default:
      return false;
  }
}

Result<std::unique_ptr<CpuKernel>> PrepareKernel(const plan::CheckedKernel& k) {
  const plan::v2::Kernel& spec = *k.spec;
  if (spec.has_alias() || spec.has_all_reduce()) return std::unique_ptr<CpuKernel>();
  if (spec.has_threefry()) return MakeThreefry(k);
  switch (spec.spec_case()) {
    case plan::v2::Kernel::kElementwise:
      return MakeElementwise(k);
    case plan::v2::Kernel::kDot:
      return MakeDot(k);
    case plan::v2::Kernel::kConvolution:
      return MakeConvolution(k);
    case plan::v2::Kernel::kReduce:
      return MakeReduce(k);
    case plan::v2::Kernel::kReduceWindow:
      return MakeReduceWindow(k);
    case plan::v2::Kernel::kGather:
    case plan::v2::Kernel::kScatter:
      return MakeIndexing(k);
    case plan::v2::Kernel::kWhileLoop:
      return MakeWhile(k);
    default:  // constant .. dynamic-update-slice: the reader left no other spec
      return MakeMovement(k);
  }
}

Result<std::vector<std::unique_ptr<CpuKernel>>> PrepareKernels(const plan::ValidatedPlan& plan,
                                                               bool whole_plan, FoldCounts* folds) {
  FoldCounts counts;
  std::vector<std::unique_ptr<CpuKernel>> kernels;
  for (const plan::CheckedKernel& k : plan.kernels()) {
    DETRAIN_ASSIGN_OR_RETURN(auto kernel, PrepareKernel(k));
    kernels.push_back(std::move(kernel));
  }
  for (int32_t i = 0; i < static_cast<int32_t>(kernels.size()); ++i) {
    if (FoldDotTranspose(plan, kernels, i)) {
      kernels[static_cast<size_t>(i)].reset();
      ++counts.transposes;
    }
  }
  if (whole_plan) {
    for (int32_t i = 0; i < static_cast<int32_t>(kernels.size()); ++i)
      counts.dot_trees += FoldDotTree(plan, kernels, i) ? 1 : 0;
  }
  // After the dot trees (a tree's epilogue reads the fusion's operands as the fusion did), and
  // on a device that runs the whole plan: a broadcast's readers read its scalar from the memory
  // of its kernel, which must have run on the same device.
  if (whole_plan) {
    counts.scalar_broadcasts = FoldScalarBroadcasts(plan, kernels);
    counts.fused_elementwise = FuseElementwiseRuns(plan, kernels);
  }
  if (folds != nullptr) *folds = counts;
  return kernels;
}

}  // namespace detrain::runtime::cpu
