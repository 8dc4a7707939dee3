// The `while` kernel (cpu_plan.proto WhileSpec): a loop whose trip count depends on the data. Its
// condition and body are plans of their own, prepared like the plan that holds them, whose
// arenas lie at the spec's region of the enclosing arena. The kernel moves the state between
// the enclosing arena and theirs: it never computes a value itself, so the loop's bits are its
// sub-plans' kernels' bits, whatever the thread count or ISA path.
#include <cstring>

#include "compiler/codegen/common/kernel_spec.h"
#include "compiler/interp/interpreter.h"
#include "runtime/cpu/cpu_device.h"
#include "runtime/cpu/kernels.h"

namespace detrain::runtime::cpu {
namespace {

namespace pb = plan::v2;

Status Bad(const pb::Kernel& k, const std::string& what) {
  return InvalidArgument("plan: kernel " + std::to_string(k.id()) + " (" + k.name() + "): " + what);
}

// One sub-plan, prepared: its buffers, kernels, the buffers of its one (tuple) parameter and
// its outputs.
struct SubPlan {
  std::vector<ArrayRef> buffers;
  std::vector<std::unique_ptr<CpuKernel>> kernels;
  std::vector<ArrayRef> state_in;  // the parameter's leaves
  std::vector<ArrayRef> out;
  int64_t scratch = 0;

  Status Run(uint8_t* arena, const ExecContext& ctx) const {
    for (const auto& kernel : kernels) {
      if (kernel) DETRAIN_RETURN_IF_ERROR(kernel->Run(arena, ctx));
    }
    return Status::Ok();
  }
};

// Whether two lists of arrays have the same types and shapes, pairwise.
bool SameArrays(const std::vector<ArrayRef>& a, const std::vector<ArrayRef>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i].type != b[i].type || a[i].dims != b[i].dims) return false;
  }
  return true;
}

// The buffers `ids` names; `what` prefixes the error ("" or "condition: ").
Result<std::vector<ArrayRef>> Pick(const pb::Kernel& k, const std::vector<ArrayRef>& buffers,
                                   const google::protobuf::RepeatedField<int32_t>& ids,
                                   const std::string& what) {
  std::vector<ArrayRef> out;
  for (int32_t id : ids) {
    if (id < 0 || id >= static_cast<int32_t>(buffers.size()))
      return Bad(k, what + "buffer " + std::to_string(id) + " out of range");
    out.push_back(buffers[static_cast<size_t>(id)]);
  }
  return out;
}

Result<SubPlan> PrepareSubPlan(const pb::Kernel& k, const pb::Plan& plan, const char* what,
                               const std::vector<ArrayRef>& state, int depth) {
  SubPlan sub;
  auto bad = [&](const std::string& why) { return Bad(k, std::string(what) + ": " + why); };
  Result<std::vector<ArrayRef>> buffers = CheckBuffers(plan);
  if (!buffers.ok()) return bad(std::string(buffers.status().message()));
  sub.buffers = std::move(*buffers);
  if (plan.replicated()) return bad("a loop holds no all-reduce");
  for (const pb::Kernel& x : plan.kernels()) {
    if (x.has_all_reduce()) return bad("a loop holds no all-reduce");
  }
  if (plan.parameters_size() != 1 ||
      plan.parameters(0).buffers_size() != static_cast<int>(state.size())) {
    return bad("expected one parameter, the loop's state of " + std::to_string(state.size()) +
               " arrays");
  }
  const std::string prefix = std::string(what) + ": ";
  DETRAIN_ASSIGN_OR_RETURN(sub.state_in,
                           Pick(k, sub.buffers, plan.parameters(0).buffers(), prefix));
  if (!SameArrays(sub.state_in, state)) return bad("its parameter is not the loop's state");
  DETRAIN_ASSIGN_OR_RETURN(sub.out, Pick(k, sub.buffers, plan.outputs(), prefix));
  DETRAIN_ASSIGN_OR_RETURN(sub.kernels,
                           PrepareKernels(plan, sub.buffers, /*whole_plan=*/true, nullptr, depth));
  for (const auto& kernel : sub.kernels) {
    if (kernel) sub.scratch = std::max(sub.scratch, kernel->ScratchBytes());
  }
  return sub;
}

void CopyArrays(uint8_t* to_arena, const std::vector<ArrayRef>& to, const uint8_t* from_arena,
                const std::vector<ArrayRef>& from) {
  for (size_t i = 0; i < to.size(); ++i) {
    if (to[i].bytes > 0) {
      std::memmove(to_arena + to[i].offset, from_arena + from[i].offset,
                   static_cast<size_t>(to[i].bytes));
    }
  }
}

class WhileKernel : public CpuKernel {
 public:
  WhileKernel(std::string name, std::vector<ArrayRef> init, std::vector<ArrayRef> state,
              int64_t region, SubPlan condition, SubPlan body)
      : name_(std::move(name)),
        init_(std::move(init)),
        state_(std::move(state)),
        region_(region),
        condition_(std::move(condition)),
        body_(std::move(body)) {}

  int64_t ScratchBytes() const override { return std::max(condition_.scratch, body_.scratch); }

  Status Run(uint8_t* arena, const ExecContext& ctx) const override {
    // One budget for a loop and the loops nested in it, as the interpreter's.
    int64_t own_count = 0;
    ExecContext inner = ctx;
    if (inner.loop_iterations == nullptr) inner.loop_iterations = &own_count;
    int64_t& iterations = *inner.loop_iterations;
    CopyArrays(arena, state_, arena, init_);
    uint8_t* sub = arena + region_;
    const ArrayRef& go = condition_.out[0];
    for (;;) {
      CopyArrays(sub, condition_.state_in, arena, state_);
      DETRAIN_RETURN_IF_ERROR(condition_.Run(sub, inner));
      if (sub[go.offset] == 0) return Status::Ok();
      if (++iterations > interp::kMaxWhileIterations) {
        return InvalidArgument("while '" + name_ + "': the loops run more than " +
                               std::to_string(interp::kMaxWhileIterations) + " iterations");
      }
      CopyArrays(sub, body_.state_in, arena, state_);
      DETRAIN_RETURN_IF_ERROR(body_.Run(sub, inner));
      CopyArrays(arena, state_, sub, body_.out);
    }
  }

 private:
  std::string name_;
  std::vector<ArrayRef> init_, state_;
  int64_t region_;
  SubPlan condition_, body_;
};

}  // namespace

Result<std::unique_ptr<CpuKernel>> MakeWhile(const pb::Kernel& k, const pb::Plan& plan,
                                             const std::vector<ArrayRef>& buffers, int depth) {
  if (depth >= codegen::kMaxLoopNesting)
    return Bad(k, "loops nested more than " + std::to_string(codegen::kMaxLoopNesting) + " deep");
  if (k.operands_size() != 1) return Bad(k, "expected one operand, the initial state");
  DETRAIN_ASSIGN_OR_RETURN(std::vector<ArrayRef> init,
                           Pick(k, buffers, k.operands(0).buffers(), ""));
  DETRAIN_ASSIGN_OR_RETURN(std::vector<ArrayRef> state, Pick(k, buffers, k.outputs(), ""));
  if (!SameArrays(init, state)) return Bad(k, "its state and initial state differ");
  const pb::WhileSpec& w = k.while_loop();
  const int64_t region = w.region();
  for (const pb::Plan* sub : {&w.condition(), &w.body()}) {
    if (region < 0 || plan.alignment() <= 0 || region % plan.alignment() != 0 ||
        region > plan.arena_bytes() || sub->arena_bytes() > plan.arena_bytes() - region) {
      return Bad(k, "its loop's arena does not fit the plan's");
    }
  }
  DETRAIN_ASSIGN_OR_RETURN(SubPlan condition,
                           PrepareSubPlan(k, w.condition(), "condition", state, depth + 1));
  if (condition.out.size() != 1 || condition.out[0].type != ir::ElementType::kPred ||
      condition.out[0].elements != 1) {
    return Bad(k, "condition: expected one pred result");
  }
  DETRAIN_ASSIGN_OR_RETURN(SubPlan body, PrepareSubPlan(k, w.body(), "body", state, depth + 1));
  if (!SameArrays(body.out, state)) return Bad(k, "body: its result is not the loop's state");
  return std::unique_ptr<CpuKernel>(new WhileKernel(k.name(), std::move(init), std::move(state),
                                                    region, std::move(condition), std::move(body)));
}

}  // namespace detrain::runtime::cpu
