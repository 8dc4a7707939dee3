// The parser's one extension point: the hooks through which an importer of a text dialect
// (XLA's HLO text, compiler/xla_import/) adds the constructs that are not detrain IR.
//
// The parser builds exactly what the text says; it never rewrites the graph. A dialect construct
// that becomes other ops (XLA's sort, a bf16 shape, a bitcast between layouts) is named to the
// parser by a hook as a placeholder it can read — an element type, an op whose operand and
// attribute grammar it has — and rewritten by the hooks when the parser calls back with what it
// read. Without hooks (ParseModule(text)) such a construct is an error, so canonical text and
// the rest of the compiler never depend on a dialect.
//
// The calls, in the parser's order; an error from any of them ends the parse:
//   ForeignElementType  each shape's element type name the IR does not have
//   ForeignOp           an op name the op table does not have: the op whose grammar it has
//   ForeignAttribute    an attribute name attrs.def does not have, before the parser's own list
//                       of the XLA attributes that carry no meaning (docs/ir.md §5)
//   OnInstruction       each instruction, once its operands (still names) and attributes are read
//   OnComputation       each computation, once its operands are resolved (before its parameters
//                       lose their `.<id>` suffixes)
//   OnModule            the module, once every computation reference is resolved
// Errors are positioned (Cursor::ErrorAt) like the parser's own.
//
// Thread safety: a hooks object serves one parse at a time.
#ifndef DETRAIN_COMPILER_IR_PARSER_HOOKS_H_
#define DETRAIN_COMPILER_IR_PARSER_HOOKS_H_

#include <algorithm>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "compiler/ir/lexer.h"
#include "compiler/ir/module.h"

namespace detrain::ir {

// What a shape's text said beyond the Shape it parses to.
struct ShapeText {
  // The element type as written, when ForeignElementType read it (`bf16`); empty otherwise.
  // Array shapes only: a tuple's elements are held as their types are, unrecorded.
  std::string foreign_type;
  // A layout other than row-major followed the shape (or one of its tuple elements).
  bool other_layout = false;
  // That layout (minor to major) for an array shape whose layout is a plain permutation; empty
  // otherwise (tiles, memory spaces, tuples).
  std::vector<int64_t> minor_to_major;
};

// What an instruction's text said beyond the Instruction it parses to.
struct InstructionText {
  std::string op_name;  // as written: `sort`, `copy`, `add`
  SourceLoc op_loc;
  ShapeText shape;
  size_t operand_count = 0;
};

// The computation references (attributes of kind kComputation) of the module being parsed,
// resolved by name once every computation is read. A hook that expands an instruction takes its
// references out, so that the parser leaves them alone.
class ComputationRefs {
 public:
  struct Ref {
    Instruction* instr;
    Attr attr;
    std::string name;
    SourceLoc loc;
  };

  void Add(Ref ref) { refs_.push_back(std::move(ref)); }
  // `instr`'s reference by `attr`, no longer resolved by the parser; nothing if it has none.
  std::optional<Ref> Take(const Instruction& instr, Attr attr) {
    auto it = std::find_if(refs_.begin(), refs_.end(),
                           [&](const Ref& r) { return r.instr == &instr && r.attr == attr; });
    if (it == refs_.end()) return std::nullopt;
    Ref ref = std::move(*it);
    refs_.erase(it);
    return ref;
  }
  const std::vector<Ref>& refs() const { return refs_; }

  void Define(const std::string& name, Computation* computation) {
    computations_[name] = computation;
  }
  // The computation `name` among those read so far (the one being read included); null if none.
  Computation* Find(const std::string& name) const {
    auto it = computations_.find(name);
    return it == computations_.end() ? nullptr : it->second;
  }

 private:
  std::vector<Ref> refs_;  // in the order of the text
  std::map<std::string, Computation*> computations_;
};

class ParserHooks {
 public:
  virtual ~ParserHooks() = default;

  // The type in which values of element type `name` are held; nothing if it is not one.
  virtual std::optional<ElementType> ForeignElementType(std::string_view name) const = 0;
  // Those names, for the message that lists the element types a shape may have.
  virtual std::vector<std::string_view> ForeignElementTypeNames() const = 0;
  // The op whose operand and attribute grammar op `name` has; nothing if it is not one.
  virtual std::optional<Opcode> ForeignOp(std::string_view name) const = 0;
  // Attribute `name` (at `loc`) of `instr`, after its '=': true when the hook read its value,
  // false to leave it to the parser.
  virtual Result<bool> ForeignAttribute(Instruction& instr, const std::string& name, SourceLoc loc,
                                        Cursor& cur) = 0;
  // `instr`, just added to `comp` (its operands not yet resolved).
  virtual Status OnInstruction(Computation& comp, Instruction& instr,
                               const InstructionText& text) = 0;
  virtual Status OnComputation(Computation& comp, ComputationRefs& refs) = 0;
  virtual Status OnModule(Module& module) = 0;
};

}  // namespace detrain::ir

#endif  // DETRAIN_COMPILER_IR_PARSER_HOOKS_H_
