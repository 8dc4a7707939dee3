// The one reader and validator of executable plans (stage 4; schemas/plan.md). Every backend
// runs a plan only through it: the executor reads the bytes here, the CPU kernels and the CUDA
// code generator take the ValidatedPlan and keep only the checks that are theirs (a CPU kernel's
// table sizes, a spec the CUDA generator has no device code for).
//
// A plan is a file, and a file can lie (issue 13's rule for every reader): ReadPlan refuses, with
// a message naming the plan element, anything a backend could not run within the plan's arena —
//   - the format version; the arena and alignment (a power of two from 8 to 4096) against the
//     memory budget (base/budget.h); every buffer's type, dims, size and aligned place in the
//     arena;
//   - the shard count (a power of two, at most 4096) and every kernel's shard range in it;
//   - kernel ids in schedule order; every operand, result, parameter and output buffer that
//     exists; every buffer defined by a kernel, and read only after it;
//   - each kernel's spec against its buffers: one spec, its arity and operand types, its sizes
//     and dimensions (check_*.cc), its scalar programs decoded (scalar_program.h);
//   - loops: nesting at most kMaxLoopNesting deep, each while kernel's state, its sub-plans'
//     region inside the arena, their one parameter and results, no all-reduce inside a loop —
//     each sub-plan validated like a plan.
// What it does not check: values (an index out of range is clamped by the op's semantics) and a
// run's arguments (the executor's).
//
// Thread safety: a ValidatedPlan is immutable once made; ReadPlan is a pure function.
// Determinism: the result is a function of the plan's bytes.
#ifndef DETRAIN_COMPILER_PLAN_READER_H_
#define DETRAIN_COMPILER_PLAN_READER_H_

#include <cstdint>
#include <memory>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "compiler/ir/element_type.h"
#include "compiler/plan/scalar_program.h"
#include "schemas/plan.pb.h"

namespace detrain::plan {

// Arenas above this are refused rather than attempted.
inline constexpr int64_t kMaxArenaBytes = int64_t{64} << 30;

// A buffer of a validated plan: its array type and where it lies in its plan's arena.
struct Array {
  int32_t id = 0;
  ir::ElementType type = ir::ElementType::kF32;
  std::vector<int64_t> dims;
  int64_t offset = 0;    // bytes into the arena, a multiple of the plan's alignment
  int64_t elements = 0;  // the product of dims
  int64_t bytes = 0;     // elements × the element size; offset + bytes <= arena_bytes
};

class ValidatedPlan;

// One kernel of a validated plan, its buffers resolved. `in` holds its operands' arrays in order
// (a while kernel's one operand: its state's leaves), `out` its results. The scalar programs its
// spec holds are decoded: `program` for elementwise kernels (for a reduction fusion also `pre`,
// `init` and the reduce's `combiner`); `combiner` for reduce, reduce-window, scatter and
// all-reduce. A while kernel has its `condition` and `body`, validated as plans of their own.
struct CheckedKernel {
  const v2::Kernel* spec = nullptr;  // into the plan's message
  std::vector<Array> in, out;
  DecodedProgram program, pre, init, combiner;
  std::unique_ptr<ValidatedPlan> condition, body;

  int32_t id() const { return spec->id(); }
  const std::string& name() const { return spec->name(); }
};

class ValidatedPlan {
 public:
  ValidatedPlan(ValidatedPlan&&) noexcept;
  ValidatedPlan& operator=(ValidatedPlan&&) noexcept;
  ~ValidatedPlan();

  const v2::Plan& proto() const { return *proto_; }
  const std::vector<Array>& buffers() const { return buffers_; }
  const Array& buffer(int32_t id) const { return buffers_[static_cast<size_t>(id)]; }
  const std::vector<CheckedKernel>& kernels() const { return kernels_; }
  const CheckedKernel& kernel(int32_t id) const { return kernels_[static_cast<size_t>(id)]; }
  // How many loops hold this plan: 0 for a whole plan, d + 1 for the sub-plans of a while
  // kernel of a plan at depth d.
  int depth() const { return depth_; }

 private:
  friend class PlanValidator;
  ValidatedPlan() = default;

  std::unique_ptr<v2::Plan> owned_;  // the whole plan's message; sub-plans point into it
  const v2::Plan* proto_ = nullptr;
  std::vector<Array> buffers_;
  std::vector<CheckedKernel> kernels_;
  int depth_ = 0;
};

// Parses a serialized detrain.plan.v2.Plan and validates it.
Result<ValidatedPlan> ReadPlan(std::string_view bytes);

// Validates a parsed plan. `depth` > 0 validates it as if that many loops held it (a test of the
// nesting bound); its parameters are still a whole plan's.
Result<ValidatedPlan> ValidatePlan(v2::Plan plan, int depth = 0);

}  // namespace detrain::plan

#endif  // DETRAIN_COMPILER_PLAN_READER_H_
