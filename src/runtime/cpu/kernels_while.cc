// The `while` kernel (plan.proto WhileSpec): a loop whose trip count depends on the data. Its
// condition and body are plans of their own, validated by the plan reader with the loop (state,
// region, results, nesting) and prepared like the plan that holds them; their arenas lie at the
// spec's region of the enclosing arena. The kernel moves the state between the enclosing arena
// and theirs: it never computes a value itself, so the loop's bits are its sub-plans' kernels'
// bits, whatever the thread count or ISA path.
#include <cstring>

#include "compiler/interp/interpreter.h"
#include "runtime/cpu/kernels.h"

namespace detrain::runtime::cpu {
namespace {

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

// The arrays `ids` names among `buffers` (the reader checked each exists).
std::vector<ArrayRef> Pick(const std::vector<ArrayRef>& buffers,
                           const google::protobuf::RepeatedField<int32_t>& ids) {
  std::vector<ArrayRef> out;
  for (int32_t id : ids) out.push_back(buffers[static_cast<size_t>(id)]);
  return out;
}

Result<SubPlan> PrepareSubPlan(const plan::ValidatedPlan& plan) {
  SubPlan sub;
  sub.buffers = plan.buffers();
  sub.state_in = Pick(sub.buffers, plan.proto().parameters(0).buffers());
  sub.out = Pick(sub.buffers, plan.proto().outputs());
  DETRAIN_ASSIGN_OR_RETURN(sub.kernels, PrepareKernels(plan, /*whole_plan=*/true));
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
  void RequestLoops(FusedLoops& loops) override {
    for (const SubPlan* sub : {&condition_, &body_}) {
      for (const auto& k : sub->kernels) {
        if (k) k->RequestLoops(loops);
      }
    }
  }

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

Result<std::unique_ptr<CpuKernel>> MakeWhile(const plan::CheckedKernel& k) {
  DETRAIN_ASSIGN_OR_RETURN(SubPlan condition, PrepareSubPlan(*k.condition));
  DETRAIN_ASSIGN_OR_RETURN(SubPlan body, PrepareSubPlan(*k.body));
  return std::unique_ptr<CpuKernel>(new WhileKernel(
      k.name(), k.in, k.out, k.spec->while_loop().region(), std::move(condition), std::move(body)));
}

}  // namespace detrain::runtime::cpu
