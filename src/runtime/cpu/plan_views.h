// Views: a load-time placement of a validated plan's buffers in which values that are contiguous
// byte ranges of one another share memory, as XLA's buffer assignment lets a slice or a bitcast
// alias its operand. Three kinds (plan_views.cc ViewsOf):
//
//   - a reshape's result is its operand's bytes;
//   - a slice's result, where it is one contiguous range of its operand (unit steps, the dims
//     before the first one it cuts of size 1, those after it whole), is that range: the shard
//     slices of a merged dot's result, of the batch;
//   - each operand of a concatenate, where its block of the result is contiguous (the dims before
//     the concatenated one of size 1), is written where the concatenate would copy it: the
//     shards' activations that a merged dot reads.
//
// The kernels that would then copy bytes onto themselves copy nothing (a reshape's CopyKernel, a
// slice's AffineCopyKernel, the concatenate's PlaceKernel see their source at their destination
// and skip it); every other kernel reads and writes the same values as before, at other
// addresses. Not a bit changes, and the plan (its bytes, its digest) is untouched: the placement is
// the CPU device's own.
//
// Placement: a group is an array with the views in it (transitively), or the buffers the plan put
// at one place for the executor: a result and its donor (schemas/plan.md "Donation", "Updates in
// place"), and a result and the entry parameter whose block the plan gave it (the executor reads a
// carried result as in place by the plan's offsets, Executor::CarriedInPlace);
// it is live from the first definition to the last use of any member (a result: to the end), and
// the groups are placed by the plan's own rule (buffer_assignment.h): at each schedule position the
// groups that start there take the lowest free block that fits, then those that end there are
// freed. Deterministic: a function of the plan alone.
//
// Left as the plan placed it (no views): a plan with loops (its sub-plans' arenas lie in regions
// of this one). Never a view or an array with views: a result of the plan, a donor or a donated
// buffer, an entry parameter at a result's place; never a view: an entry parameter (it is copied
// in where this placement puts it).
//
// Thread safety: a pure function.
#ifndef DETRAIN_RUNTIME_CPU_PLAN_VIEWS_H_
#define DETRAIN_RUNTIME_CPU_PLAN_VIEWS_H_

#include <cstdint>
#include <memory>

#include "base/status.h"
#include "compiler/plan/reader.h"

namespace detrain::runtime::cpu {

// `plan` with its buffers placed with views, validated like any plan, and in *views how many
// buffers became views; or null (and *views = 0) when none can.
Result<std::unique_ptr<plan::ValidatedPlan>> PlaceViews(const plan::ValidatedPlan& plan,
                                                        int64_t* views);

}  // namespace detrain::runtime::cpu

#endif  // DETRAIN_RUNTIME_CPU_PLAN_VIEWS_H_
