// The all-reduce of a replicated plan (an imported module with all-reduce; executor.h), computed
// on the host from the replicas' copies: each replica's operand copied out of its device, the
// pairwise tree (semantics/orders.h) over each replica group in group order, the sum copied back
// into every device of the group. The combiner is the plan's, decoded by the plan reader and
// evaluated by plan::Combine — the same evaluation on every backend.
//
// Determinism: each element is one pairwise tree over the group's values in replica order.
// Thread safety: one call at a time per set of devices.
#ifndef DETRAIN_RUNTIME_ALL_REDUCE_H_
#define DETRAIN_RUNTIME_ALL_REDUCE_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "base/status.h"
#include "compiler/plan/reader.h"
#include "runtime/device.h"

namespace detrain::runtime {

// All-reduce kernel `k` across devices [0, replicas), one per replica. Replica groups that do not
// name each replica exactly once are an error.
Status HostAllReduce(const plan::CheckedKernel& k, std::vector<std::unique_ptr<Device>>& devices,
                     int64_t replicas);

}  // namespace detrain::runtime

#endif  // DETRAIN_RUNTIME_ALL_REDUCE_H_
