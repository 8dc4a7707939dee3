// Buffer assignment: liveness over the schedule of the entry computation, and a placement of
// every array value in one arena such that no two values that are live at the same time
// overlap (docs/passes.md §4). It is part of code generation, not a pass (it never changes the
// module): the plan builder (builder.h) calls it, once per computation it plans.
//
// Values: each instruction of the entry defines one buffer per array leaf of its shape, except
// `tuple` (its leaves are its operands' buffers) and `get-tuple-element` (the selected
// element's buffers): those alias. A buffer is live from the position of the instruction that
// defines it to the last position that uses it; buffers of the root live to the end.
// Called computations (combiners, fused computations) are evaluated inside their kernel and
// get no arena space.
//
// Donation (plan format 3, schemas/plan.md "Donation"): a result of the entry may take over the
// buffer of a parameter donated to it — the training state's new value where its old value was,
// as XLA's input/output aliasing — when the parameter is one array of the result's type and
// size, no result itself, and its last reader is the kernel that defines the result, a kernel
// that reads each element before it writes that element (`in_place`). The pair then shares one
// slice: the donor's block passes to the result instead of being freed.
//
// Updates in place (plan format 4, schemas/plan.md "Updates in place"): a kernel that changes
// part of its operand 0 and copies the rest (`updates_in_place`: dynamic-update-slice, scatter)
// takes over that operand's buffer where it is the operand's last reader, as XLA's buffer
// sharing does — the operand no parameter and no result, of the result's type and dimensions,
// and read by no other operand of the kernel. The kernel then writes only what it changes: a
// scan's stacked outputs (a chain of dynamic-update-slices) cost their updates, not a copy of
// the whole stack per step. Recorded as a donation (the same `donor` link).
//
// Placement: positions in schedule order; at each position, first the new buffers are placed
// (operands are still live), then the buffers whose last use is this position are freed. A new
// buffer takes the lowest-offset free block that fits (first fit; freed neighbours are merged),
// otherwise the end of the arena grows. Sizes are rounded up to kBufferAlignment. Everything is
// decided by the schedule order: the assignment is deterministic.
//
// Thread safety: pure function.
#ifndef DETRAIN_COMPILER_PLAN_BUFFER_ASSIGNMENT_H_
#define DETRAIN_COMPILER_PLAN_BUFFER_ASSIGNMENT_H_

#include <cstdint>
#include <functional>
#include <map>
#include <set>
#include <unordered_map>
#include <vector>

#include "base/status.h"
#include "compiler/ir/module.h"

namespace detrain::plan {

inline constexpr int64_t kBufferAlignment = 64;

// The placement's allocator (also used by the CPU runtime's view placement, runtime/cpu/
// plan_views.h): a new block takes the lowest-offset free block that fits, else the arena grows
// (taking over a free block at its end). Free blocks are keyed by offset (ordered, so
// deterministic) and also filed by size class (the bit length of their size), so that the lowest
// fitting block is found without scanning every fragment: any block of a larger class fits, so
// each such class offers its lowest offset, and only the request's own class is searched in
// offset order. Freed neighbours merge.
class FirstFitArena {
 public:
  int64_t Allocate(int64_t size);  // size > 0
  void Free(int64_t offset, int64_t size);
  int64_t end() const { return end_; }

 private:
  static constexpr int kClasses = 64;
  static int Class(int64_t size) { return 63 - __builtin_clzll(static_cast<uint64_t>(size)); }
  void Insert(int64_t offset, int64_t size);
  void Remove(int64_t offset);

  std::map<int64_t, int64_t> free_;       // offset -> size
  std::set<int64_t> by_class_[kClasses];  // offsets of the free blocks of each size class
  int64_t end_ = 0;
};

struct LogicalBuffer {
  int64_t id = 0;  // index in BufferAssignment::buffers
  const ir::Instruction* defined_by = nullptr;
  int64_t leaf = 0;                      // which array leaf of defined_by's shape
  ir::Shape shape;                       // an array shape
  int64_t size = 0;                      // bytes, unaligned
  int64_t offset = 0;                    // in the arena, a multiple of kBufferAlignment
  int64_t defined_at = 0, last_use = 0;  // schedule positions, inclusive
  bool is_output = false;                // part of the entry's result: live to the end
  int64_t donor = -1;                    // the donated parameter buffer it took over, or -1
};

// Donations offered to buffer assignment: parameter `parameter` (an entry parameter of one array)
// to leaf `result_leaf` of the entry's result (tuple order, flattened).
struct Donation {
  const ir::Instruction* parameter = nullptr;
  int64_t result_leaf = 0;
};
struct DonationOptions {
  std::vector<Donation> donations;
  // Whether `user`, defining one array, computes each element of it from the elements of
  // operand `operand` at the same index only (an elementwise kernel): then it may write over it.
  std::function<bool(const ir::Instruction& user, const ir::Instruction& operand)> in_place;
  // Format 4: whether `user` (defining one array) computes its result as operand 0 with some
  // elements replaced, so that it may write over operand 0 (dynamic-update-slice, scatter).
  // Unset: no update in place.
  std::function<bool(const ir::Instruction& user)> updates_in_place;
};

struct BufferAssignment {
  std::vector<const ir::Instruction*> schedule;  // the entry, in execution order
  std::vector<LogicalBuffer> buffers;            // in definition order
  // Buffer ids of each instruction's array leaves, in tuple order (lookups only).
  std::unordered_map<const ir::Instruction*, std::vector<int64_t>> leaves;
  int64_t arena_bytes = 0;  // the peak: the arena size needed
  int64_t total_bytes = 0;  // the sum of all buffers' aligned sizes (no reuse)
};

Result<BufferAssignment> AssignBuffers(const ir::Module& module);
// The same for any computation of a module (a loop's condition or body: the builder plans them
// as plans of their own), its parameters in place of the entry's; with `donation`, the
// donations that qualify are made (each is decided by the schedule alone: deterministic).
Result<BufferAssignment> AssignBuffers(const ir::Computation& computation,
                                       const DonationOptions* donation = nullptr);

// Number of array leaves of `shape` (1 for an array).
int64_t LeafCount(const ir::Shape& shape);

}  // namespace detrain::plan

#endif  // DETRAIN_COMPILER_PLAN_BUFFER_ASSIGNMENT_H_
