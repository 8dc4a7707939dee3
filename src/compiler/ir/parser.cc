// See parser.h. Module structure: header, computations, instructions, name resolution, and the
// calls into a dialect's hooks (parser_hooks.h).
#include "compiler/ir/parser.h"

#include <map>
#include <set>

#include "compiler/ir/parser_internal.h"
#include "compiler/ir/printer.h"

namespace detrain::ir {
namespace {

using namespace parser_internal;

struct OperandRef {
  std::string name;
  SourceLoc loc;
};

struct PendingComputation {
  Computation* computation;
  std::map<std::string, Instruction*> by_name;
  std::vector<std::pair<Instruction*, std::vector<OperandRef>>> operands;
};

class Parser {
 public:
  Parser(std::string_view text, ParserHooks* hooks) : cur_(text), hooks_(hooks) {}

  Result<std::unique_ptr<Module>> Parse() {
    auto module = ParseBody();
    DETRAIN_RETURN_IF_ERROR(cur_.CheckInput());  // an unterminated comment explains any error
    return module;
  }

 private:
  Result<std::unique_ptr<Module>> ParseBody() {
    DETRAIN_RETURN_IF_ERROR(cur_.Expect("HloModule", "at the start of the module"));
    std::string name = cur_.ReadName();
    if (name.empty())
      return cur_.Error("expected a module name after 'HloModule', found " + cur_.Found());
    cur_.SkipLine();  // XLA's header attributes (entry_computation_layout=...) carry no meaning
                      // here
    module_ = std::make_unique<Module>(name);
    DETRAIN_RETURN_IF_ERROR(ParseDebugTables(cur_, module_->debug_tables()));
    while (!cur_.AtEnd()) DETRAIN_RETURN_IF_ERROR(ParseComputation());
    if (module_->entry() == nullptr) return cur_.Error("the module has no ENTRY computation");
    for (const ComputationRefs::Ref& ref : refs_.refs()) {
      Computation* computation = refs_.Find(ref.name);
      if (computation == nullptr) {
        return Cursor::ErrorAt(ref.loc, "unknown computation " + Quoted(ref.name));
      }
      ref.instr->attrs[ref.attr].computation = computation;
    }
    if (hooks_ != nullptr) DETRAIN_RETURN_IF_ERROR(hooks_->OnModule(*module_));
    return std::move(module_);
  }

  Status ParseComputation() {
    bool is_entry = cur_.TryConsumeKeyword("ENTRY");
    SourceLoc loc = (cur_.SkipSpace(), cur_.Loc());
    std::string name = cur_.ReadName();
    if (name.empty()) return cur_.Error("expected a computation name, found " + cur_.Found());
    if (refs_.Find(name) != nullptr)
      return Cursor::ErrorAt(loc, "duplicate computation name " + Quoted(name));
    if (cur_.Peek() == '(') {  // XLA signature "(a: f32[], b: f32[]) -> f32[]": implied by the body
      int depth = 0;
      do {
        char c = cur_.Next();
        if (c == '\0') return cur_.Error("unterminated computation signature");
        depth += c == '(' ? 1 : c == ')' ? -1 : 0;
      } while (depth > 0);
      DETRAIN_RETURN_IF_ERROR(cur_.Expect("->", "after a computation signature"));
      DETRAIN_RETURN_IF_ERROR(ParseShape(cur_, hooks_).status());
    }
    DETRAIN_RETURN_IF_ERROR(cur_.Expect("{", "to open computation " + Quoted(name)));
    PendingComputation pending{
        module_->AddComputation(std::make_unique<Computation>(name)), {}, {}};
    refs_.Define(name, pending.computation);
    if (is_entry) {
      if (module_->entry())
        return Cursor::ErrorAt(loc, "a second ENTRY computation " + Quoted(name));
      module_->set_entry(pending.computation);
    }
    Instruction* last = nullptr;
    while (!cur_.TryConsume("}")) {
      if (cur_.AtEnd()) return cur_.Error("expected '}' to close computation " + Quoted(name));
      DETRAIN_ASSIGN_OR_RETURN(last, ParseInstruction(pending));
    }
    if (last == nullptr)
      return Cursor::ErrorAt(loc, "computation " + Quoted(name) + " has no instructions");
    if (pending.computation->root() == nullptr) pending.computation->set_root(last);
    DETRAIN_RETURN_IF_ERROR(ResolveOperands(pending));
    if (hooks_ != nullptr)
      DETRAIN_RETURN_IF_ERROR(hooks_->OnComputation(*pending.computation, refs_));
    return NameParameters(*pending.computation);
  }

  Result<Instruction*> ParseInstruction(PendingComputation& pending) {
    bool is_root = cur_.TryConsumeKeyword("ROOT");
    SourceLoc loc = (cur_.SkipSpace(), cur_.Loc());
    auto instr = std::make_unique<Instruction>();
    instr->loc = loc;
    instr->name = cur_.ReadName();
    if (instr->name.empty())
      return cur_.Error("expected an instruction name, found " + cur_.Found());
    if (pending.by_name.count(instr->name)) {
      return Cursor::ErrorAt(loc, "duplicate instruction name " + Quoted(instr->name));
    }
    DETRAIN_RETURN_IF_ERROR(cur_.Expect("=", "after instruction name " + Quoted(instr->name)));
    InstructionText text;
    DETRAIN_ASSIGN_OR_RETURN(instr->shape, ParseShape(cur_, hooks_, &text.shape));
    text.op_loc = (cur_.SkipSpace(), cur_.Loc());
    text.op_name = cur_.ReadWord();
    auto opcode = OpcodeFromName(text.op_name);
    if (!opcode && hooks_ != nullptr) opcode = hooks_->ForeignOp(text.op_name);
    if (!opcode) {
      return Cursor::ErrorAt(
          text.op_loc, text.op_name.empty() ? "expected an op name, found " + cur_.Found()
                                            : "unknown or unsupported op " + Quoted(text.op_name));
    }
    instr->opcode = *opcode;
    std::vector<OperandRef> operands;
    DETRAIN_RETURN_IF_ERROR(ParseOperands(*instr, &operands));
    while (cur_.TryConsume(",")) DETRAIN_RETURN_IF_ERROR(ParseAttribute(*instr));
    text.operand_count = operands.size();
    Instruction* raw = pending.computation->AddInstruction(std::move(instr));
    if (hooks_ != nullptr) {
      DETRAIN_RETURN_IF_ERROR(hooks_->OnInstruction(*pending.computation, *raw, text));
    }
    pending.by_name[raw->name] = raw;
    pending.operands.push_back({raw, std::move(operands)});
    if (is_root) {
      if (pending.computation->root()) return Cursor::ErrorAt(loc, "a second ROOT instruction");
      pending.computation->set_root(raw);
    }
    return raw;
  }

  Status ParseOperands(Instruction& instr, std::vector<OperandRef>* operands) {
    DETRAIN_RETURN_IF_ERROR(
        cur_.Expect("(", "after op name '" + std::string(OpcodeName(instr.opcode)) + "'"));
    if (instr.opcode == Opcode::kParameter) {
      DETRAIN_ASSIGN_OR_RETURN(instr.parameter_number, cur_.ReadInt("parameter number"));
      if (instr.parameter_number < 0) return cur_.Error("parameter numbers must be non-negative");
    } else if (instr.opcode == Opcode::kConstant) {
      DETRAIN_ASSIGN_OR_RETURN(instr.literal, ParseLiteral(cur_, instr.shape));
    } else if (cur_.Peek() != ')') {
      do {
        if (LookingAtShape(cur_, hooks_)) {
          DETRAIN_RETURN_IF_ERROR(ParseShape(cur_, hooks_).status());  // XLA style
        }
        SourceLoc loc = (cur_.SkipSpace(), cur_.Loc());
        std::string name = cur_.ReadName();
        if (name.empty()) return cur_.Error("expected an operand name, found " + cur_.Found());
        operands->push_back({name, loc});
      } while (cur_.TryConsume(","));
    }
    return cur_.Expect(")", "to close the operand list");
  }

  Status ParseAttribute(Instruction& instr) {
    SourceLoc loc = (cur_.SkipSpace(), cur_.Loc());
    std::string name = cur_.ReadWord();
    if (name.empty()) return cur_.Error("expected an attribute name, found " + cur_.Found());
    DETRAIN_RETURN_IF_ERROR(cur_.Expect("=", "after attribute name " + Quoted(name)));
    auto attr = AttrFromName(name);
    if (!attr) return ParseForeignAttribute(instr, name, loc);
    if (instr.attrs.count(*attr))
      return Cursor::ErrorAt(loc, "duplicate attribute " + Quoted(name));
    std::string comp_name;
    DETRAIN_RETURN_IF_ERROR(ParseAttrValue(cur_, *attr, &instr.attrs[*attr], &comp_name));
    if (AttrKindOf(*attr) == AttrKind::kComputation) refs_.Add({&instr, *attr, comp_name, loc});
    return Status::Ok();
  }

  // An attribute that attrs.def does not list: the hooks' first, then XLA's attributes that
  // carry no meaning here (dropped, or accepted at their default only).
  Status ParseForeignAttribute(Instruction& instr, const std::string& name, SourceLoc loc) {
    if (hooks_ != nullptr) {
      DETRAIN_ASSIGN_OR_RETURN(bool read, hooks_->ForeignAttribute(instr, name, loc, cur_));
      if (read) return Status::Ok();
    }
    switch (ClassifyForeignAttr(name)) {
      case ForeignAttr::kIgnore:
        return cur_.SkipValue();
      case ForeignAttr::kDefaultOnly: {
        SourceLoc vloc = (cur_.SkipSpace(), cur_.Loc());
        std::string v = cur_.ReadWord();
        bool ok = name == "type" ? (v == "FLOAT" || v == "SIGNED" || v == "UNSIGNED") : v == "1";
        if (!ok) {
          return Cursor::ErrorAt(vloc, "unsupported " + name + "=" + v + " (only " +
                                           (name == "type" ? "FLOAT, SIGNED or UNSIGNED" : "1") +
                                           " is supported)");
        }
        return Status::Ok();
      }
      case ForeignAttr::kUnknown:
        break;
    }
    return Cursor::ErrorAt(loc, "unknown or unsupported attribute " + Quoted(name));
  }

  Status ResolveOperands(PendingComputation& pending) {
    for (auto& [instr, refs] : pending.operands) {
      for (const OperandRef& ref : refs) {
        auto it = pending.by_name.find(ref.name);
        if (it == pending.by_name.end()) {
          return Cursor::ErrorAt(ref.loc, "unknown operand " + Quoted(ref.name) +
                                              " in computation '" + pending.computation->name() +
                                              "'");
        }
        instr->operands.push_back(it->second);
      }
    }
    return Status::Ok();
  }

  // Drops XLA's `.<id>` suffix from parameter names; see parser.h.
  static Status NameParameters(Computation& comp) {
    std::set<std::string> used;
    for (Instruction* p : comp.Parameters()) {
      std::string name = p->name;
      size_t dot = name.rfind('.');
      if (dot != std::string::npos && dot + 1 < name.size() &&
          name.find_first_not_of("0123456789", dot + 1) == std::string::npos) {
        name.resize(dot);
      }
      if (!IsValidParameterName(name) || used.count(name)) {
        name = "p" + std::to_string(p->parameter_number);
      }
      if (used.count(name)) {
        return Cursor::ErrorAt(p->loc, "cannot give parameter '" + p->name + "' a unique name");
      }
      used.insert(name);
      p->name = name;
    }
    return Status::Ok();
  }

  Cursor cur_;
  ParserHooks* hooks_;
  std::unique_ptr<Module> module_;
  ComputationRefs refs_;  // every computation and every reference to one
};

}  // namespace

Result<std::unique_ptr<Module>> ParseModule(std::string_view text) {
  return ParseModule(text, nullptr);
}

Result<std::unique_ptr<Module>> ParseModule(std::string_view text, ParserHooks* hooks) {
  DETRAIN_RETURN_IF_ERROR(Cursor::CheckNoNul(text));
  return Parser(text, hooks).Parse();
}

}  // namespace detrain::ir
