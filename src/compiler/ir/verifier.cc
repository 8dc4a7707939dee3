// See verifier.h.
#include "compiler/ir/verifier.h"

#include <set>

#include "compiler/ir/parser.h"
#include "compiler/ir/printer.h"
#include "compiler/ir/shape_inference.h"

namespace detrain::ir {
namespace {

class Verifier {
 public:
  explicit Verifier(const Module& module) : module_(module) {}

  Status Run() {
    DETRAIN_ASSIGN_OR_RETURN(auto comps, module_.ComputationPostOrder());
    DETRAIN_ASSIGN_OR_RETURN(names_, ComputeCanonicalNames(module_));
    for (const Computation* c : comps) DETRAIN_RETURN_IF_ERROR(VerifyComputation(*c));
    return CheckCollectivePlacement(comps);
  }

 private:
  Status Error(const Instruction& instr, const std::string& message) const {
    std::string name = instr.name;
    if (instr.opcode != Opcode::kParameter || name.empty()) {
      auto it = names_.instructions.find(&instr);
      if (name.empty() && it != names_.instructions.end()) name = it->second;
    }
    std::string text =
        "instruction '" + name + "' (" + std::string(OpcodeName(instr.opcode)) + "): " + message;
    if (instr.loc.line > 0) {
      text = std::to_string(instr.loc.line) + ":" + std::to_string(instr.loc.column) + ": " + text;
    }
    return InvalidArgument(text);
  }

  Status VerifyComputation(const Computation& c) {
    if (c.root() == nullptr) return InvalidArgument("computation '" + c.name() + "' has no root");
    std::set<const Instruction*> members;
    for (const auto& instr : c.instructions()) members.insert(instr.get());
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
    DETRAIN_RETURN_IF_ERROR(c.PostOrder().status());  // cycles among live instructions
    // Dead instructions are not part of the program, but they must still be well formed.
    for (const auto& owned : c.instructions()) {
      const Instruction* instr = owned.get();
      for (const Instruction* op : instr->operands) {
        if (!members.count(op)) return Error(*instr, "an operand belongs to another computation");
      }
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
  CanonicalNames names_;
};

}  // namespace

Status VerifyModule(const Module& module) { return Verifier(module).Run(); }

Result<std::unique_ptr<Module>> ParseAndVerify(std::string_view text) {
  DETRAIN_ASSIGN_OR_RETURN(auto module, ParseModule(text));
  DETRAIN_RETURN_IF_ERROR(VerifyModule(*module));
  return module;
}

}  // namespace detrain::ir
