// unroll-while — replaces every `while` whose trip count it can compute by that many calls of
// its body; every other loop stays a loop, which the backends run (a plan's while kernel,
// schemas/plan.proto WhileSpec).
//
// What it does: for `while(init), condition=C, body=B` it finds the loop's control — the
// elements of the state that C reads, closed over what B computes them from (JAX's counter and
// bound; threefry's round counter) — and checks that B's root is a tuple whose control elements
// depend only on control elements (through get-tuple-element of B's parameter), and that init's
// control elements are constant expressions. It then runs the loop on the control alone — the
// reference interpreter evaluating C and the part of B that computes the control, over a state
// of the control elements only (no other element can reach them), so the cost is the control's
// work, never the body's — to find the trip count N, and replaces the while by N nested
// `call(...), to_apply=B` on init (init itself when N = 0). The inline pass then inlines them.
// The value is exactly the loop's: a call is by definition its body applied, N times as the
// loop would.
// Loops nested in a body are unrolled first (callees before callers).
// What it leaves a loop: when its trip count depends on data (a convergence test, a bound
// computed from an input), when its body holds a loop that stays one, and when it would unroll
// to more than kMaxUnrolledIterations copies of its body (a nested loop's copies counted in), so
// that neither the module nor this pass's simulation of the loop can grow without bound. Such a
// loop is left as it is: the result is the same computation, run by a loop.
// Pre: a verified module. Post: a verified module; the interpreter's results are unchanged bit
// for bit.
#include <map>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include "compiler/interp/interpreter.h"
#include "compiler/ir/verifier.h"
#include "compiler/passes/passes.h"
#include "compiler/passes/rewrite.h"

namespace detrain::passes {
namespace {

using ir::Instruction;
using ir::Literal;
using ir::Opcode;

constexpr int64_t kMaxUnrolledIterations = 4096;

// Why TripCount cannot unroll a loop. UnrollLoops keeps every such loop as it is, so the message
// reaches no user; it names each case for whoever reads or debugs the pass.
Status LoopError(const Instruction& w, const std::string& message) {
  return InvalidArgument("while '" + w.name + "': " + message);
}

// Whether `c` or a computation it calls holds a `while` (live instructions only: a rewritten
// computation still lists the loops it replaced).
bool HoldsLoop(const ir::Computation& c, std::unordered_set<const ir::Computation*>* seen) {
  if (!seen->insert(&c).second) return false;
  Result<std::vector<const Instruction*>> live = c.PostOrder();
  if (!live.ok()) return true;  // not a program to simulate: leave the loop as it is
  for (const Instruction* instr : *live) {
    if (instr->opcode == Opcode::kWhile) return true;
    for (const auto& [attr, value] : instr->attrs) {
      if (value.computation != nullptr && HoldsLoop(*value.computation, seen)) return true;
    }
  }
  return false;
}

// The state elements `root` reads: the indices of every get-tuple-element of `param` it reaches
// through operands. Fails when it reaches `param` other than through get-tuple-element.
Result<std::set<int64_t>> ElementsRead(const Instruction* root, const Instruction* param) {
  std::set<int64_t> read;
  std::unordered_set<const Instruction*> seen;  // membership only; never iterated
  std::vector<const Instruction*> stack = {root};
  while (!stack.empty()) {
    const Instruction* x = stack.back();
    stack.pop_back();
    if (!seen.insert(x).second) continue;
    if (x == param) return InvalidArgument("uses the whole state");
    if (x->opcode == Opcode::kGetTupleElement && x->operands[0] == param) {
      read.insert(x->IntAttr(ir::Attr::kIndex));
      continue;
    }
    for (const Instruction* op : x->operands) stack.push_back(op);
  }
  return read;
}

// The value of `x` when it depends on no parameter (a constant expression), evaluated by the
// interpreter; nullopt otherwise.
Result<std::optional<Literal>> ConstantValue(const Instruction* x) {
  std::vector<const Instruction*> order;  // operands before users
  std::unordered_set<const Instruction*> seen;
  std::vector<std::pair<const Instruction*, size_t>> stack = {{x, 0}};
  seen.insert(x);
  while (!stack.empty()) {
    auto& [instr, next] = stack.back();
    if (instr->opcode == Opcode::kParameter) return std::optional<Literal>();
    if (next < instr->operands.size()) {
      const Instruction* op = instr->operands[next++];
      if (seen.insert(op).second) stack.push_back({op, 0});
      continue;
    }
    order.push_back(instr);
    stack.pop_back();
  }
  ir::Module scratch("control");
  ir::Computation* entry = scratch.AddComputation(std::make_unique<ir::Computation>("control"));
  std::unordered_map<const Instruction*, Instruction*> copies;
  for (const Instruction* instr : order) {
    auto copy = std::make_unique<Instruction>(*instr);
    for (Instruction*& op : copy->operands) op = copies.at(op);
    copies[instr] = entry->AddInstruction(std::move(copy));
  }
  entry->set_root(copies.at(x));
  scratch.set_entry(entry);
  DETRAIN_ASSIGN_OR_RETURN(Literal value, interp::Evaluate(scratch, {}));
  return std::optional<Literal>(std::move(value));
}

// The loop's control alone, as two computations of one scratch module over a state that holds
// only the control elements (in ascending element order): `condition` (the loop's condition) and
// `step` (the body's control results). Each is a copy of the instructions the condition's root
// and the body's control results reach, with every get-tuple-element of the loop's state
// renumbered into the smaller state; called computations are referenced, not copied. No other
// element can reach them (ElementsRead checked that), so the control runs as in the loop, and
// the simulation costs the control's work: not the body's dots, nor its state's large elements.
class ControlProgram {
 public:
  ControlProgram(const ir::Computation& cond, const ir::Computation& body,
                 const std::set<int64_t>& control, const ir::Shape& shape)
      : module_("control") {
    std::vector<ir::Shape> shapes;
    for (int64_t i : control) {
      position_[i] = static_cast<int64_t>(shapes.size());
      shapes.push_back(shape.tuple_elements()[static_cast<size_t>(i)]);
    }
    state_shape_ = ir::Shape::Tuple(std::move(shapes));
    condition_ = Build("condition", cond.Parameters().at(0), {cond.root()}, /*tuple=*/false);
    std::vector<const Instruction*> results;
    for (int64_t i : control) results.push_back(body.root()->operands[static_cast<size_t>(i)]);
    step_ = Build("step", body.Parameters().at(0), results, /*tuple=*/true);
  }

  Result<Literal> Condition(const Literal& state) { return Run(condition_, state); }
  Result<Literal> Step(const Literal& state) { return Run(step_, state); }

 private:
  // A computation of the control state computing `results` of a computation whose state is
  // `param`: their tuple, or with `tuple` false the one result itself.
  ir::Computation* Build(const std::string& name, const Instruction* param,
                         const std::vector<const Instruction*>& results, bool tuple) {
    ir::Computation* c = module_.AddComputation(std::make_unique<ir::Computation>(name));
    auto p = std::make_unique<Instruction>();
    p->opcode = Opcode::kParameter;
    p->shape = state_shape_;
    p->name = "control";
    Instruction* state = c->AddInstruction(std::move(p));
    std::unordered_map<const Instruction*, Instruction*> copies;  // looked up, never iterated
    std::vector<std::pair<const Instruction*, size_t>> stack;
    for (const Instruction* r : results) {
      if (!copies.count(r)) stack.push_back({r, 0});
      while (!stack.empty()) {
        auto& [instr, next] = stack.back();
        const bool element =
            instr->opcode == Opcode::kGetTupleElement && instr->operands[0] == param;
        if (!element && next < instr->operands.size()) {
          const Instruction* op = instr->operands[next++];
          if (!copies.count(op)) stack.push_back({op, 0});
          continue;
        }
        auto copy = std::make_unique<Instruction>(*instr);
        if (element) {
          copy->operands[0] = state;
          copy->attrs[ir::Attr::kIndex].i = position_.at(instr->IntAttr(ir::Attr::kIndex));
        } else {
          for (Instruction*& op : copy->operands) op = copies.at(op);
        }
        copies[instr] = c->AddInstruction(std::move(copy));
        stack.pop_back();
      }
    }
    if (!tuple) {
      c->set_root(copies.at(results.at(0)));
      return c;
    }
    auto next = std::make_unique<Instruction>();
    next->opcode = Opcode::kTuple;
    next->name = "control_next";
    next->shape = state_shape_;
    for (const Instruction* r : results) next->operands.push_back(copies.at(r));
    c->set_root(c->AddInstruction(std::move(next)));
    return c;
  }

  Result<Literal> Run(ir::Computation* c, const Literal& state) {
    module_.set_entry(c);
    return interp::Evaluate(module_, {state});
  }

  ir::Module module_;
  std::map<int64_t, int64_t> position_;  // state element -> its place in the control state
  ir::Shape state_shape_;
  ir::Computation* condition_ = nullptr;
  ir::Computation* step_ = nullptr;
};

// The trip count of `w`, or why it cannot be known before the loop runs. `weight` is what one
// iteration unrolls to (1 plus the iterations already unrolled inside the body); the count
// times the weight may not pass kMaxUnrolledIterations, which also bounds this simulation.
Result<int64_t> TripCount(const Instruction& w, int64_t weight) {
  const ir::Computation& cond = *w.ComputationAttr(ir::Attr::kCondition);
  const ir::Computation& body = *w.ComputationAttr(ir::Attr::kBody);
  const ir::Shape& shape = w.shape;
  if (!shape.is_tuple()) return LoopError(w, "the state is not a tuple");
  const size_t n = shape.tuple_elements().size();
  Result<std::set<int64_t>> control = ElementsRead(cond.root(), cond.Parameters().at(0));
  if (!control.ok()) {
    return LoopError(w, "its condition " + std::string(control.status().message()) +
                            "; the trip count cannot be computed before the loop runs");
  }
  const Instruction* body_root = body.root();
  if (body_root->opcode != Opcode::kTuple || body_root->operands.size() != n) {
    return LoopError(w, "its body's root is not a tuple; the trip count cannot be computed");
  }
  // Close the control over the body: what each control element is computed from.
  std::vector<int64_t> work(control->begin(), control->end());
  while (!work.empty()) {
    const int64_t i = work.back();
    work.pop_back();
    Result<std::set<int64_t>> deps =
        ElementsRead(body_root->operands[static_cast<size_t>(i)], body.Parameters().at(0));
    if (!deps.ok()) {
      return LoopError(w, "element " + std::to_string(i) +
                              " of its state, which the condition "
                              "depends on, " +
                              std::string(deps.status().message()) + " in the body");
    }
    for (int64_t d : *deps) {
      if (control->insert(d).second) work.push_back(d);
    }
  }
  const Instruction* init = w.operands[0];
  if (init->opcode != Opcode::kTuple) {
    return LoopError(w,
                     "its initial state is not a tuple instruction; the trip count cannot be "
                     "computed");
  }
  std::vector<Literal> elements;
  for (int64_t i : *control) {
    DETRAIN_ASSIGN_OR_RETURN(std::optional<Literal> v,
                             ConstantValue(init->operands[static_cast<size_t>(i)]));
    if (!v) {
      return LoopError(w, "the trip count depends on data: element " + std::to_string(i) +
                              " of the state, which the condition depends on, starts from a "
                              "value computed from the inputs");
    }
    elements.push_back(std::move(*v));
  }
  ControlProgram program(cond, body, *control, shape);
  Literal state = Literal::Tuple(std::move(elements));
  for (int64_t count = 0;; ++count) {
    DETRAIN_ASSIGN_OR_RETURN(Literal go, program.Condition(state));
    if (go.Get<uint8_t>(0) == 0) return count;
    if ((count + 1) * weight > kMaxUnrolledIterations) {
      return LoopError(
          w, "runs more than " + std::to_string(kMaxUnrolledIterations / weight) + " iterations" +
                 (weight > 1 ? " of a body that unrolls to " + std::to_string(weight) + " copies"
                             : std::string()) +
                 ", more than the " + std::to_string(kMaxUnrolledIterations) +
                 " body copies unroll-while makes of one loop");
    }
    DETRAIN_ASSIGN_OR_RETURN(state, program.Step(state));
  }
}

}  // namespace

Status UnrollLoopsInPlace(ir::Module& module) {
  DETRAIN_ASSIGN_OR_RETURN(auto comps, MutableComputations(module));
  // Body copies each computation holds after unrolling (loops nested in it, weighted).
  std::unordered_map<const ir::Computation*, int64_t> copies;  // looked up, never iterated
  for (ir::Computation* c : comps) {  // callees first: loops in a body are unrolled already
    DETRAIN_RETURN_IF_ERROR(RewriteComputation(*c, [&](Instruction* instr) -> Result<Instruction*> {
      if (instr->opcode != Opcode::kWhile) return nullptr;
      const ir::Computation* body = instr->ComputationAttr(ir::Attr::kBody);
      std::unordered_set<const ir::Computation*> seen;  // membership only
      if (HoldsLoop(*body, &seen) ||
          HoldsLoop(*instr->ComputationAttr(ir::Attr::kCondition), &seen)) {
        return nullptr;  // a loop that stays one inside: this one stays one too
      }
      const int64_t weight = 1 + (copies.count(body) ? copies.at(body) : 0);
      Result<int64_t> count = TripCount(*instr, weight);
      if (!count.ok() && count.status().code() == StatusCode::kInvalidArgument) {
        return nullptr;  // not computable before the loop runs, or too long: it stays a loop
      }
      DETRAIN_ASSIGN_OR_RETURN(int64_t trips, std::move(count));
      copies[c] += trips * weight;
      Instruction* state = instr->operands[0];
      for (int64_t k = 0; k < trips; ++k) {
        ir::AttrMap attrs;
        attrs[ir::Attr::kToApply].computation = instr->ComputationAttr(ir::Attr::kBody);
        state = AddInstruction(*c, Opcode::kCall, instr->shape, {state}, std::move(attrs));
      }
      return state;
    }));
  }
  if (copies.empty()) return Status::Ok();  // no loop unrolled: the module is as it came
  DETRAIN_RETURN_IF_ERROR(Compact(module));
  // The calls may expand past what the verifier admits (a long loop of a large body): that is
  // this input's limit, said as such, not a broken pass.
  if (Status v = ir::VerifyModule(module); !v.ok()) {
    return InvalidArgument("the unrolled loops give a module detrain cannot take: " +
                           std::string(v.message()));
  }
  return Status::Ok();
}

PassOutput UnrollLoops(const ir::Module& module) { return OnCopy(module, UnrollLoopsInPlace); }

}  // namespace detrain::passes
