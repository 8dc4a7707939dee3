// The IR's object model: a Module owns Computations, a Computation owns Instructions.
//
// An Instruction is an op applied to operands (other instructions of the same computation)
// with attributes; its result has a static Shape. Called computations (`to_apply`) are
// referenced by pointer and owned by the same module. No name or number is part of the program:
// the canonical printer derives every name from the graph structure (printer.h). An
// instruction's `id` is only its index in its computation's list, a dense key for the tables
// that passes keep per instruction (a vector indexed by id instead of a map keyed by address).
//
// Thread safety: a Module is a plain value-like object; concurrent reads are safe, writes are not.
#ifndef DETRAIN_COMPILER_IR_MODULE_H_
#define DETRAIN_COMPILER_IR_MODULE_H_

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "compiler/ir/attributes.h"
#include "compiler/ir/literal.h"
#include "compiler/ir/opcode.h"
#include "compiler/ir/shape.h"

namespace detrain::ir {

// Where an instruction came from in parsed text (line/column are 1-based; 0 = built in code).
struct SourceLoc {
  int line = 0;
  int column = 0;
};

struct Instruction {
  // The fields every walk of the graph reads come first, in one cache line.
  Opcode opcode = Opcode::kParameter;
  int64_t id = -1;  // index in its computation's instructions() (set by AddInstruction)
  std::vector<Instruction*> operands;
  Shape shape;
  AttrMap attrs;
  Literal literal;               // kConstant only
  int64_t parameter_number = 0;  // kParameter only
  std::string name;              // a parameter's name; for other ops only the parsed name
  SourceLoc loc;

  bool HasAttr(Attr a) const { return attrs.count(a) != 0; }
  const AttrValue* FindAttr(Attr a) const;
  // Accessors returning the default (0, empty list, nullptr) when the attribute is absent.
  int64_t IntAttr(Attr a) const;
  const std::vector<int64_t>& IntsAttr(Attr a) const;
  const Computation* ComputationAttr(Attr a) const;
};

class Computation {
 public:
  explicit Computation(std::string name) : name_(std::move(name)) {}

  const std::string& name() const { return name_; }
  void set_name(std::string name) { name_ = std::move(name); }
  // Index in its module's computations() (set by AddComputation; -1 before).
  int64_t id() const { return id_; }
  void set_id(int64_t id) { id_ = id; }
  Instruction* root() const { return root_; }
  void set_root(Instruction* root) { root_ = root; }

  // Appends `instr` and sets its id to its index. Instructions are never removed.
  Instruction* AddInstruction(std::unique_ptr<Instruction> instr);
  const std::vector<std::unique_ptr<Instruction>>& instructions() const { return instructions_; }

  // Whether `instr` is one of this computation's instructions (by its id; never dereferences
  // the list past its end).
  bool Owns(const Instruction* instr) const {
    return instr->id >= 0 && static_cast<size_t>(instr->id) < instructions_.size() &&
           instructions_[static_cast<size_t>(instr->id)].get() == instr;
  }

  // Keeps exactly the instructions in `keep` (its own, each once), in that order, renumbering
  // their ids; destroys the others, which no kept instruction may use.
  void KeepOnly(const std::vector<const Instruction*>& keep);

  // Parameters ordered by parameter_number (gaps or duplicates are verifier errors).
  std::vector<Instruction*> Parameters() const;

  // The canonical evaluation and printing order: parameters by number, then the instructions
  // that the root depends on, in depth-first post-order visiting operands left to right.
  // Instructions the root does not depend on are not part of the program and are omitted.
  // Returns an error on a cycle.
  Result<std::vector<const Instruction*>> PostOrder() const;

 private:
  std::string name_;
  int64_t id_ = -1;
  Instruction* root_ = nullptr;
  std::vector<std::unique_ptr<Instruction>> instructions_;
};

// XLA's debug tables, which HLO text with debug information carries between the HloModule line
// and the first computation (FileNames, FunctionNames, FileLocations, StackFrames): where in
// the user's source each op came from, for people. Parsed and checked (every reference
// resolves) and kept with the module, but never printed in canonical text, so never hashed.
struct DebugTables {
  struct Location {
    int64_t file_name_id = 0, function_name_id = 0;
    int64_t line = 0, end_line = 0, column = 0, end_column = 0;
  };
  struct Frame {
    int64_t file_location_id = 0, parent_frame_id = 0;
  };
  std::map<int64_t, std::string> file_names, function_names;
  std::map<int64_t, Location> file_locations;
  std::map<int64_t, Frame> stack_frames;

  bool empty() const {
    return file_names.empty() && function_names.empty() && file_locations.empty() &&
           stack_frames.empty();
  }
  // "FILE:LINE (FUNCTION)" of a stack frame, or "" when it is not in the tables.
  std::string Describe(int64_t frame_id) const;
};

class Module {
 public:
  explicit Module(std::string name) : name_(std::move(name)) {}

  DebugTables& debug_tables() { return debug_tables_; }
  const DebugTables& debug_tables() const { return debug_tables_; }

  const std::string& name() const { return name_; }
  Computation* entry() const { return entry_; }
  void set_entry(Computation* entry) { entry_ = entry; }

  Computation* AddComputation(std::unique_ptr<Computation> computation);
  // Whether `c` is one of this module's computations (by its id).
  bool Owns(const Computation* c) const {
    return c->id() >= 0 && static_cast<size_t>(c->id()) < computations_.size() &&
           computations_[static_cast<size_t>(c->id())].get() == c;
  }
  // Keeps exactly the computations in `keep` (its own, each once), in that order, renumbering
  // their ids; destroys the others, which no kept instruction may call.
  void KeepOnly(const std::vector<const Computation*>& keep);
  const std::vector<std::unique_ptr<Computation>>& computations() const { return computations_; }

  // Computations reachable from the entry, callees before callers (post-order over
  // attribute references in canonical instruction order), the entry last. Error on recursion.
  Result<std::vector<const Computation*>> ComputationPostOrder() const;

  // ComputationPostOrder together with each computation's PostOrder, which it computes anyway:
  // one walk for the consumers that need both (printer, verifier, CloneModule).
  struct Order {
    std::vector<const Computation*> computations;
    std::vector<std::vector<const Instruction*>> instructions;  // parallel to computations
  };
  Result<Order> CanonicalOrder() const;

 private:
  std::string name_;
  Computation* entry_ = nullptr;
  std::vector<std::unique_ptr<Computation>> computations_;
  DebugTables debug_tables_;
};

// The computations an instruction calls (its kComputation attributes, in attribute order).
std::vector<const Computation*> CalledComputations(const Instruction& instr);

}  // namespace detrain::ir

#endif  // DETRAIN_COMPILER_IR_MODULE_H_
