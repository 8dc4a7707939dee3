// Load-time rewrites of a validated plan's CPU kernels (PrepareKernels, kernels.h): exact — each
// output element is computed by the same chain of the same operations on the same values — so
// no bit changes; only where and how fast a value is computed does.
//
//   - FoldDotTranspose: a 2-D transpose of a dot's result that nothing else reads runs inside
//     the dot, which writes the transposed layout directly; the transpose's kernel becomes
//     nullptr. Each element is the same chain with the defined NaN rule (gemm.h); the dot's own
//     buffer is never written, which nothing can observe.
//   - FoldScalarBroadcasts: a broadcast of a scalar that only elementwise kernels read (Adam's
//     bias corrections and learning rate) is read by them as the scalar it is, and is never
//     materialized.
//   - FuseElementwiseRuns: consecutive elementwise kernels of one index space run block by block
//     together.
//   - FoldDotTree (a device that runs every kernel of the plan: one device, or one replica): an
//     elementwise kernel that is an add tree over f32 dot results nothing else reads (the shard
//     tree of per-shard weight gradients) runs as one GemmTree (gemm.h) over the dots' operands,
//     tile by tile, and the dots' kernels become nullptr, or a copy of operands the tree could
//     not read in place. Each leaf element is the dot's chain and each sum the tree's addition.
//     When the tree is part of a larger fusion (SGD's update: the sum divided by S, scaled by the
//     learning rate and subtracted from the parameter), the tree writes its sum into the first
//     leaf's buffer — the result's type and size, live until the fusion and no longer written —
//     and the rest of the fusion's program runs over it as an elementwise kernel: the same ops on
//     the same values, and no per-shard gradient is ever materialized.
//
// Both read the plan's schedule and buffer placement (buffer assignment may share memory between
// values whose lifetimes do not meet) to prove a rewrite moves no read past a write.
//
// Thread safety: each call rewrites `kernels` in place; one thread at a time.
#ifndef DETRAIN_RUNTIME_CPU_PLAN_FOLDS_H_
#define DETRAIN_RUNTIME_CPU_PLAN_FOLDS_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "compiler/plan/reader.h"
#include "runtime/cpu/kernels.h"

namespace detrain::runtime::cpu {

// Whether kernel `transpose` of `plan` was folded into its dot (the caller drops its kernel).
bool FoldDotTranspose(const plan::ValidatedPlan& plan,
                      const std::vector<std::unique_ptr<CpuKernel>>& kernels, int32_t transpose);

// Whether elementwise kernel `tree` of `plan` was rewritten into a GemmTree over the dots it
// adds. Their operands are then read at `tree`'s place in the schedule: only when nothing that
// still runs writes them in between, and only a contiguous slice of rows is read in place of its
// copy.
bool FoldDotTree(const plan::ValidatedPlan& plan, std::vector<std::unique_ptr<CpuKernel>>& kernels,
                 int32_t tree);

// Rewrites every broadcast of a one-element array whose readers all read it elementwise (each
// CpuKernel says so: CpuKernel::ReadInputAsScalar) and that is not a result: its readers read the
// element as a scalar — ops of scalars alone are then evaluated once per run — and the broadcast
// stores only that element. Returns how many. The readers read exactly the value every element
// of the broadcast held; the rest of its buffer, now never written, is never read.
int64_t FoldScalarBroadcasts(const plan::ValidatedPlan& plan,
                             std::vector<std::unique_ptr<CpuKernel>>& kernels);

// Groups runs of consecutive elementwise kernels of one index space (a device that runs the whole
// plan; after the folds above), e.g. Adam's updates of m, v and a parameter, into one kernel that
// runs block b of each in schedule order before block b + 1 of any: what one writes, the next
// reads from cache. Each kernel computes the same elements from the same values; a kernel joins
// a run only when its output meets nothing an earlier one reads or writes except as the same
// array, element for element. Folded broadcasts, scalar constants and one-element kernels between
// the members (Adam's bias corrections) run at the run's head, in their order, where what they read
// and write meets nothing of the members before them. Returns how many kernels were grouped.
int64_t FuseElementwiseRuns(const plan::ValidatedPlan& plan,
                            std::vector<std::unique_ptr<CpuKernel>>& kernels);

}  // namespace detrain::runtime::cpu

#endif  // DETRAIN_RUNTIME_CPU_PLAN_FOLDS_H_
