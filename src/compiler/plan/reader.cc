// See reader.h. A plan is validated top-down: its buffers, then every reference between kernels,
// buffers, parameters and outputs, then each kernel's spec (check_specs.h) in schedule order; a
// while kernel's sub-plans are validated the same way, one loop deeper, against its state.
#include "compiler/plan/reader.h"

#include <string>

#include "base/budget.h"
#include "base/checked.h"
#include "compiler/plan/check_specs.h"
#include "compiler/plan/schema.h"

namespace detrain::plan {

namespace pb = v2;
using internal::KernelError;

ValidatedPlan::ValidatedPlan(ValidatedPlan&&) noexcept = default;
ValidatedPlan& ValidatedPlan::operator=(ValidatedPlan&&) noexcept = default;
ValidatedPlan::~ValidatedPlan() = default;

namespace {

bool IsPowerOfTwo(int64_t x) { return x > 0 && (x & (x - 1)) == 0; }

// The arena and every buffer: types, dims, sizes, aligned places inside the arena.
Result<std::vector<Array>> CheckBuffers(const pb::Plan& plan) {
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
  std::vector<Array> out;
  for (int i = 0; i < plan.buffers_size(); ++i) {
    const pb::Buffer& b = plan.buffers(i);
    Array a;
    a.id = i;
    if (b.id() != i)
      return InvalidArgument("plan: buffer ids out of order at " + std::to_string(i));
    DETRAIN_ASSIGN_OR_RETURN(a.type, FromPlanType(b.type()));
    a.dims.assign(b.dims().begin(), b.dims().end());
    DETRAIN_ASSIGN_OR_RETURN(a.elements, CheckedElementCount(a.dims, "plan"));
    const int size = ir::ElementTypeByteSize(a.type);
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

// Kernel ids, and every buffer a kernel, an output or a buffer's definition names: each exists,
// and a kernel reads only values defined before it.
Status CheckReferences(const pb::Plan& plan) {
  const int nb = plan.buffers_size(), nk = plan.kernels_size();
  auto missing = [&](int32_t b) { return b < 0 || b >= nb; };
  for (int i = 0; i < nb; ++i) {
    const int32_t def = plan.buffers(i).defined_by();
    if (def < 0 || def >= nk)
      return InvalidArgument("plan: buffer " + std::to_string(i) + " has no defining kernel");
  }
  for (int i = 0; i < nk; ++i) {
    const pb::Kernel& k = plan.kernels(i);
    if (k.id() != i)
      return InvalidArgument("plan: kernel ids out of order at " + std::to_string(i));
    for (const pb::Operand& op : k.operands()) {
      for (int32_t b : op.buffers()) {
        if (missing(b))
          return InvalidArgument("plan: kernel " + k.name() + " reads a missing buffer");
        if (plan.buffers(b).defined_by() >= i) {
          return InvalidArgument("plan: kernel " + std::to_string(i) +
                                 " reads a value defined after it");
        }
      }
    }
    for (int32_t b : k.outputs()) {
      if (missing(b))
        return InvalidArgument("plan: kernel " + k.name() + " writes a missing buffer");
    }
  }
  for (int32_t b : plan.outputs()) {
    if (missing(b)) return InvalidArgument("plan: a missing output buffer");
  }
  return Status::Ok();
}

// A whole plan's signature, shards and shard ranges: each entry parameter is one array, and a
// kernel's range of the batch's shards lies inside [0, S).
Status CheckEntry(const pb::Plan& plan) {
  const int64_t shards = plan.shards();
  if (!IsPowerOfTwo(shards) || shards > 4096)
    return InvalidArgument("plan: shard count " + std::to_string(shards));
  for (int i = 0; i < plan.parameters_size(); ++i) {
    const pb::EntryParameter& p = plan.parameters(i);
    if (p.number() != i || p.buffers_size() != 1)
      return InvalidArgument("plan: entry parameter " + std::to_string(i) + " is not one array");
    if (p.buffers(0) < 0 || p.buffers(0) >= plan.buffers_size())
      return InvalidArgument("plan: entry parameter " + std::to_string(i) + " has no buffer");
  }
  for (const pb::Kernel& k : plan.kernels()) {
    if (k.shard_hi() > k.shard_lo() && (k.shard_lo() < 0 || k.shard_hi() > shards))
      return InvalidArgument("plan: kernel " + k.name() + " has a bad shard range");
  }
  return Status::Ok();
}

// Format 3's donations (plan.md "Donation"): a result that takes over an entry parameter's buffer
// shares its slice, defined by an elementwise kernel that reads it last; one result per donor.
// Format 4's updates in place ("Updates in place"): a dynamic-update-slice or scatter result that
// takes over the buffer of its operand 0, no parameter, which it reads last and through no other
// operand.
Status CheckDonors(const pb::Plan& plan, const std::vector<Array>& buffers, bool entry) {
  std::vector<char> donated(buffers.size(), 0);
  for (int i = 0; i < plan.buffers_size(); ++i) {
    const pb::Buffer& b = plan.buffers(i);
    if (!b.has_donor()) continue;
    const std::string what = "plan: buffer " + std::to_string(i) + "'s donor";
    if (plan.format_version() < 3)
      return InvalidArgument(what + ": donation is for a plan of format 3 or later");
    const int32_t d = b.donor();
    if (d < 0 || d >= i || donated[static_cast<size_t>(d)])
      return InvalidArgument(what + " " + std::to_string(d) + " is no earlier buffer, or taken");
    donated[static_cast<size_t>(d)] = 1;
    bool parameter = false;  // any leaf of any parameter (a loop's state is a tuple of them)
    for (const pb::EntryParameter& p : plan.parameters()) {
      for (int32_t id : p.buffers()) parameter |= id == d;
    }
    const Array &x = buffers[static_cast<size_t>(i)], &y = buffers[static_cast<size_t>(d)];
    const pb::Buffer& donor = plan.buffers(d);
    if (donor.is_output() || x.type != y.type || x.dims != y.dims || x.offset != y.offset ||
        donor.last_use() != b.defined_by()) {
      return InvalidArgument(what + " " + std::to_string(d) +
                             " is not a buffer of its type and place read last where it is "
                             "defined, or is a result");
    }
    const pb::Kernel& k = plan.kernels(b.defined_by());
    int reads = 0, reads_as_operand0 = 0;
    for (int o = 0; o < k.operands_size(); ++o) {
      for (int32_t id : k.operands(o).buffers()) {
        reads += id == d;
        reads_as_operand0 += o == 0 && id == d;
      }
    }
    if (parameter) {
      if (!entry) return InvalidArgument(what + ": only an entry plan donates its parameters");
      if (!k.has_elementwise() || k.elementwise().has_reduce() || k.outputs_size() != 1 ||
          reads == 0) {
        return InvalidArgument(what + ": kernel " + k.name() +
                               " is not an elementwise kernel of one result reading it");
      }
      continue;
    }
    if (plan.format_version() < 4)
      return InvalidArgument(what + ": an update in place is for a plan of format 4 or later");
    if (!(k.has_dynamic_update_slice() || k.has_scatter()) || k.outputs_size() != 1 ||
        k.operands_size() == 0 || k.operands(0).buffers_size() != 1 || reads != 1 ||
        reads_as_operand0 != 1) {
      return InvalidArgument(what + ": kernel " + k.name() +
                             " is not a dynamic-update-slice or scatter of one result reading it "
                             "as its operand 0 only");
    }
  }
  return Status::Ok();
}

// Whether two lists of arrays have the same types and shapes, pairwise.
bool SameArrays(const std::vector<Array>& a, const std::vector<Array>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i].type != b[i].type || a[i].dims != b[i].dims) return false;
  }
  return true;
}

// The arrays `ids` names among `buffers` (checked to exist).
std::vector<Array> Pick(const std::vector<Array>& buffers,
                        const google::protobuf::RepeatedField<int32_t>& ids) {
  std::vector<Array> out;
  for (int32_t id : ids) out.push_back(buffers[static_cast<size_t>(id)]);
  return out;
}

}  // namespace

// Validates plans and the sub-plans of their loops (a friend of ValidatedPlan).
class PlanValidator {
 public:
  static Result<ValidatedPlan> Whole(pb::Plan plan, int depth) {
    if (!IsKnownPlanFormat(plan.format_version())) {
      return InvalidArgument("plan format version " + std::to_string(plan.format_version()) +
                             " (this detrain runs versions " +
                             std::to_string(kOldestPlanFormatVersion) + " to " +
                             std::to_string(kPlanFormatVersion) + ")");
    }
    auto owned = std::make_unique<pb::Plan>(std::move(plan));
    DETRAIN_ASSIGN_OR_RETURN(ValidatedPlan v, Validate(*owned, depth, nullptr));
    v.owned_ = std::move(owned);  // v.proto_ points at it: the heap object does not move
    return v;
  }

 private:
  // `state`: null for a whole plan; a loop's state for its condition or body, whose one
  // parameter it must be.
  static Result<ValidatedPlan> Validate(const pb::Plan& plan, int depth,
                                        const std::vector<Array>* state) {
    ValidatedPlan v;
    v.proto_ = &plan;
    v.depth_ = depth;
    DETRAIN_ASSIGN_OR_RETURN(v.buffers_, CheckBuffers(plan));
    DETRAIN_RETURN_IF_ERROR(CheckReferences(plan));
    if (state == nullptr) {
      DETRAIN_RETURN_IF_ERROR(CheckEntry(plan));
    } else {
      DETRAIN_RETURN_IF_ERROR(CheckLoopSignature(plan, v.buffers_, *state));
    }
    DETRAIN_RETURN_IF_ERROR(CheckDonors(plan, v.buffers_, state == nullptr));
    v.kernels_.resize(static_cast<size_t>(plan.kernels_size()));
    for (int i = 0; i < plan.kernels_size(); ++i) {
      CheckedKernel& k = v.kernels_[static_cast<size_t>(i)];
      k.spec = &plan.kernels(i);
      DETRAIN_RETURN_IF_ERROR(CheckKernel(plan, v.buffers_, depth, k));
    }
    return v;
  }

  // A loop's condition or body: one parameter, the loop's state; no all-reduce.
  static Status CheckLoopSignature(const pb::Plan& plan, const std::vector<Array>& buffers,
                                   const std::vector<Array>& state) {
    if (plan.replicated()) return InvalidArgument("a loop holds no all-reduce");
    if (plan.parameters_size() != 1 ||
        plan.parameters(0).buffers_size() != static_cast<int>(state.size())) {
      return InvalidArgument("expected one parameter, the loop's state of " +
                             std::to_string(state.size()) + " arrays");
    }
    for (int32_t b : plan.parameters(0).buffers()) {
      if (b < 0 || b >= static_cast<int32_t>(buffers.size()))
        return InvalidArgument("buffer " + std::to_string(b) + " out of range");
    }
    if (!SameArrays(Pick(buffers, plan.parameters(0).buffers()), state))
      return InvalidArgument("its parameter is not the loop's state");
    return Status::Ok();
  }

  static Status CheckKernel(const pb::Plan& plan, const std::vector<Array>& buffers, int depth,
                            CheckedKernel& k) {
    const pb::Kernel& spec = *k.spec;
    if (spec.has_alias()) return Status::Ok();  // parameters, tuples: no work
    if (spec.spec_case() == pb::Kernel::SPEC_NOT_SET) return KernelError(spec, "no spec");
    for (const pb::Operand& op : spec.operands()) {
      if (op.buffers_size() != 1 && !spec.has_while_loop())
        return KernelError(spec, "an operand that is not one array");
      for (const Array& a : Pick(buffers, op.buffers())) k.in.push_back(a);
    }
    k.out = Pick(buffers, spec.outputs());
    if (spec.has_while_loop()) return CheckWhile(plan, depth, k);
    if (spec.has_all_reduce()) {
      if (depth > 0) return KernelError(spec, "a loop holds no all-reduce");
      return internal::CheckAllReduce(k);
    }
    return internal::CheckSpec(k);
  }

  // A while kernel (plan.proto WhileSpec): its state, its sub-plans' region, and the sub-plans.
  static Status CheckWhile(const pb::Plan& plan, int depth, CheckedKernel& k) {
    const pb::Kernel& spec = *k.spec;
    if (depth >= kMaxLoopNesting) {
      return KernelError(spec,
                         "loops nested more than " + std::to_string(kMaxLoopNesting) + " deep");
    }
    if (spec.operands_size() != 1)
      return KernelError(spec, "expected one operand, the initial state");
    if (!SameArrays(k.in, k.out)) return KernelError(spec, "its state and initial state differ");
    const pb::WhileSpec& w = spec.while_loop();
    const int64_t region = w.region();
    for (const pb::Plan* sub : {&w.condition(), &w.body()}) {
      if (region < 0 || region % plan.alignment() != 0 || region > plan.arena_bytes() ||
          sub->arena_bytes() > plan.arena_bytes() - region) {
        return KernelError(spec, "its loop's arena does not fit the plan's");
      }
    }
    for (const char* what : {"condition", "body"}) {
      const bool body = what[0] == 'b';
      Result<ValidatedPlan> sub = Validate(body ? w.body() : w.condition(), depth + 1, &k.out);
      if (!sub.ok()) return KernelError(spec, std::string(what) + ": " + sub.status().message());
      (body ? k.body : k.condition) = std::make_unique<ValidatedPlan>(std::move(*sub));
    }
    const std::vector<Array> go = Pick(k.condition->buffers(), w.condition().outputs());
    if (go.size() != 1 || go[0].type != ir::ElementType::kPred || go[0].elements != 1)
      return KernelError(spec, "condition: expected one pred result");
    if (!SameArrays(Pick(k.body->buffers(), w.body().outputs()), k.out))
      return KernelError(spec, "body: its result is not the loop's state");
    return Status::Ok();
  }
};

Result<ValidatedPlan> ValidatePlan(pb::Plan plan, int depth) {
  return PlanValidator::Whole(std::move(plan), depth);
}

Result<ValidatedPlan> ReadPlan(std::string_view bytes) {
  pb::Plan plan;
  if (bytes.size() > static_cast<size_t>(INT32_MAX) ||
      !plan.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) {
    return InvalidArgument("not a serialized detrain.plan.v2.Plan (" +
                           std::to_string(bytes.size()) + " bytes)");
  }
  return ValidatePlan(std::move(plan));
}

}  // namespace detrain::plan
