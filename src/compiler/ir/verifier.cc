// See verifier.h.
#include "compiler/ir/verifier.h"

#include <algorithm>
#include <optional>
#include <set>
#include <unordered_map>

#include "base/budget.h"
#include "base/checked.h"
#include "compiler/ir/parser.h"
#include "compiler/ir/printer.h"
#include "compiler/ir/shape_inference.h"

namespace detrain::ir {
namespace {

class Verifier {
 public:
  explicit Verifier(const Module& module) : module_(module) {}

  // One walk of the program (Module::CanonicalOrder) serves every check; it runs after the
  // operand check, since it follows operands.
  Result<Module::Order> Run() {
    for (const auto& c : module_.computations()) DETRAIN_RETURN_IF_ERROR(CheckOperandsOwned(*c));
    DETRAIN_ASSIGN_OR_RETURN(Module::Order order, module_.CanonicalOrder());  // cycles, recursion
    DETRAIN_RETURN_IF_ERROR(CheckCallGraph(order));
    for (const Computation* c : order.computations) DETRAIN_RETURN_IF_ERROR(VerifyComputation(*c));
    DETRAIN_RETURN_IF_ERROR(CheckCollectivePlacement(order.computations));
    return order;
  }

 private:
  Status Error(const Instruction& instr, const std::string& message) const {
    std::string name = instr.name;
    if (name.empty()) {  // built, not parsed: name it as the printer would
      if (!names_) {
        auto names = ComputeCanonicalNames(module_);
        names_ = names.ok() ? std::move(*names) : CanonicalNames{};
      }
      auto it = names_->instructions.find(&instr);
      if (it != names_->instructions.end()) name = it->second;
    }
    std::string text =
        "instruction '" + name + "' (" + std::string(OpcodeName(instr.opcode)) + "): " + message;
    if (instr.loc.line > 0) {
      text = std::to_string(instr.loc.line) + ":" + std::to_string(instr.loc.column) + ": " + text;
    }
    return InvalidArgument(text);
  }

  // Every operand of every instruction (dead ones too) belongs to the same computation.
  Status CheckOperandsOwned(const Computation& c) const {
    for (const auto& owned : c.instructions()) {
      for (const Instruction* op : owned->operands) {
        if (!c.Owns(op)) return Error(*owned, "an operand belongs to another computation");
      }
    }
    return Status::Ok();
  }

  Status VerifyComputation(const Computation& c) {
    if (c.root() == nullptr) return InvalidArgument("computation '" + c.name() + "' has no root");
    auto params = c.Parameters();
    std::set<std::string> param_names;
    for (size_t i = 0; i < params.size(); ++i) {
      if (params[i]->parameter_number != static_cast<int64_t>(i)) {
        return Error(*params[i], "parameters of '" + c.name() + "' must be numbered 0.." +
                                     std::to_string(params.size() - 1) +
                                     " without gaps or repeats");
      }
      if (&c == module_.entry() && !params[i]->name.empty()) {
        if (!IsValidParameterName(params[i]->name))
          return Error(*params[i], "'" + params[i]->name + "' is not a valid parameter name");
        if (!param_names.insert(params[i]->name).second)
          return Error(*params[i], "duplicate parameter name '" + params[i]->name + "'");
      }
    }
    // Dead instructions are not part of the program, but they must still be well formed.
    for (const auto& owned : c.instructions()) {
      const Instruction* instr = owned.get();
      DETRAIN_RETURN_IF_ERROR(CheckDeclaredShape(*instr, instr->shape));
    }
    for (const auto& owned : c.instructions()) {
      const Instruction* instr = owned.get();
      DETRAIN_RETURN_IF_ERROR(VerifyAttributes(*instr));
      auto inferred = InferShape(*instr);
      if (!inferred.ok()) return Error(*instr, inferred.status().message());
      if (!(*inferred == instr->shape)) {
        return Error(*instr, "declared shape " + instr->shape.ToString() +
                                 " but the operands give " + inferred->ToString());
      }
    }
    return Status::Ok();
  }

  // Every array in the shape has a representable element count (Shape::CheckedElementCount)
  // and fits the memory budget (base/budget.h), so nothing downstream multiplies sizes that wrap
  // or allocates a buffer that cannot exist. Checked for all instructions before any shape rule
  // reads an operand's shape.
  Status CheckDeclaredShape(const Instruction& instr, const Shape& shape) const {
    if (shape.is_tuple()) {
      for (const Shape& e : shape.tuple_elements())
        DETRAIN_RETURN_IF_ERROR(CheckDeclaredShape(instr, e));
      return Status::Ok();
    }
    auto count = shape.CheckedElementCount();
    if (!count.ok()) return Error(instr, count.status().message());
    Status fits = CheckDeclaredTensorBytes(ByteSize(*count, ElementTypeByteSize(shape.type())),
                                           "the result " + shape.ToString());
    if (!fits.ok()) return Error(instr, fits.message());
    return Status::Ok();
  }

  // Bounds what a call graph may ask of every consumer that follows calls: the interpreter and
  // the passes walk at most kMaxCallDepth nested calls, and inlining every call (and
  // running every combiner once) yields at most kMaxExpandedInstructions instructions, so a
  // chain of computations that each call the next twice is an error, not 2^n work.
  Status CheckCallGraph(const Module::Order& order) const {
    std::unordered_map<const Computation*, int64_t> depth, expanded;
    for (size_t i = 0; i < order.computations.size(); ++i) {  // callees first
      const Computation* c = order.computations[i];
      int64_t d = 1, n = 0;
      // Live instructions only, as ComputationPostOrder: a dead call reaches nothing.
      for (const Instruction* instr : order.instructions[i]) {
        ++n;
        for (const Computation* callee : CalledComputations(*instr)) {
          d = std::max(d, depth.at(callee) + 1);
          n = std::min(n + expanded.at(callee), kMaxExpandedInstructions + 1);
          if (d > kMaxCallDepth) {
            return Error(*instr, "calls nest deeper than " + std::to_string(kMaxCallDepth) +
                                     " levels (computation '" + callee->name() + "')");
          }
          if (n > kMaxExpandedInstructions) {
            return Error(*instr, "the calls of computation '" + c->name() +
                                     "' expand to more than " +
                                     std::to_string(kMaxExpandedInstructions) + " instructions");
          }
        }
      }
      depth[c] = d;
      expanded[c] = n;
    }
    return Status::Ok();
  }

  Status VerifyAttributes(const Instruction& instr) const {
    const auto& specs = OpcodeAttrs(instr.opcode);
    for (const auto& [attr, value] : instr.attrs) {
      bool allowed = false;
      for (const AttrSpec& s : specs) allowed = allowed || s.attr == attr;
      if (!allowed)
        return Error(instr, "attribute '" + std::string(AttrName(attr)) + "' is not allowed on " +
                                std::string(OpcodeName(instr.opcode)));
      if (AttrKindOf(attr) == AttrKind::kComputation && value.computation == nullptr) {
        return Error(instr, "attribute '" + std::string(AttrName(attr)) + "' names no computation");
      }
    }
    for (const AttrSpec& s : specs) {
      if (!s.optional && !instr.HasAttr(s.attr))
        return Error(instr, "missing required attribute '" + std::string(AttrName(s.attr)) + "'");
    }
    return Status::Ok();
  }

  // Combiners run per element on each replica independently, so they must not communicate.
  Status CheckCollectivePlacement(const std::vector<const Computation*>& comps) const {
    std::set<const Computation*> combiners;
    for (auto it = comps.rbegin(); it != comps.rend(); ++it) {  // callers before callees
      bool inside = combiners.count(*it) != 0;
      for (const auto& instr : (*it)->instructions()) {
        if (inside && instr->opcode == Opcode::kAllReduce) {
          return Error(*instr, "all-reduce cannot appear inside a reduction combiner computation");
        }
        for (const Computation* callee : CalledComputations(*instr)) {
          if (inside || instr->opcode != Opcode::kCall) combiners.insert(callee);
        }
      }
    }
    return Status::Ok();
  }

  const Module& module_;
  mutable std::optional<CanonicalNames> names_;  // computed for the first message that needs it
};

}  // namespace

Status VerifyModule(const Module& module) { return Verifier(module).Run().status(); }

Result<Module::Order> VerifyModuleInOrder(const Module& module) { return Verifier(module).Run(); }

Result<std::unique_ptr<Module>> ParseAndVerify(std::string_view text) {
  DETRAIN_ASSIGN_OR_RETURN(auto module, ParseModule(text));
  DETRAIN_RETURN_IF_ERROR(VerifyModule(*module));
  return module;
}

}  // namespace detrain::ir
