// Internal to the parser: the value-level grammar shared by parser.cc (module structure) and
// parser_values.cc (shapes, literals, attribute values). Not part of the IR's API.
#ifndef DETRAIN_COMPILER_IR_PARSER_INTERNAL_H_
#define DETRAIN_COMPILER_IR_PARSER_INTERNAL_H_

#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "compiler/ir/lexer.h"
#include "compiler/ir/module.h"

namespace detrain::ir::parser_internal {

// The parser's one depth limit (docs/ir.md §5): tuple shapes nest at most this deep. Constant
// braces nest as deep as the shape's rank (at most kMaxRank); nothing else in the grammar nests.
inline constexpr int kMaxNestingDepth = 64;

// A name for a message: at most 64 characters of it (a hostile name can be megabytes long).
inline std::string Quoted(std::string_view name) {
  if (name.size() <= 64) return "'" + std::string(name) + "'";
  return "'" + std::string(name.substr(0, 64)) + "...' (" + std::to_string(name.size()) +
         " characters)";
}

// The 16-bit float formats of HLO text, held as f32 (half_types.cc).
enum class HalfFormat : uint8_t { kNone, kBf16, kF16 };

// `f32[2,3]`, `f32[2,3]{1,0}` (layout dropped), `(f32[], s32[2])`. `bf16[...]` and `f16[...]`
// parse as f32 arrays; `half`, when given, is set to the format of an array shape (kNone for f32,
// other types and tuples).
// `other_layout`, when given, is set when a layout other than row-major ({n-1,...,0}) follows
// the shape (or one of its tuple elements); layouts are otherwise skipped. `minor_to_major`,
// when given, receives an array shape's other layout when it is a plain permutation (not for
// tuples; left empty for tiled layouts and the like).
Result<Shape> ParseShape(Cursor& cur, bool* other_layout = nullptr,
                         std::vector<int64_t>* minor_to_major = nullptr,
                         HalfFormat* half = nullptr);

// The debug tables that follow the HloModule line of text printed with debug information
// (module.h DebugTables); every reference must resolve (parser_debug_tables.cc).
Status ParseDebugTables(Cursor& cur, DebugTables& tables);

// half_types.cc: every array instruction in `half` (parsed with a bf16 or f16 shape, now f32)
// that can produce a value outside its format gets a round-to-bf16 / round-to-f16 after it,
// which its users then read — except in `accumulators` (the computations that reduce, scatter
// and all-reduce apply), which run in f32, their result rounded once. Elementwise ops and data
// movements must take operands of their result's format; bitcast-convert to bf16/f16 is refused.
// Errors are positioned at the instruction.
Status WidenHalfTypes(Module& module, const std::map<const Instruction*, HalfFormat>& half,
                      const std::set<const Computation*>& accumulators);

// True if the cursor is at an element type name followed by '[' (an XLA operand shape).
bool LookingAtShape(Cursor& cur);

// The value inside `constant(...)` for a literal of `shape`.
Result<Literal> ParseLiteral(Cursor& cur, const Shape& shape);

// One attribute value of `attr` (after `name=`). A kComputation value is returned as its name
// in `comp_name` (resolved later by the caller).
Status ParseAttrValue(Cursor& cur, Attr attr, AttrValue* value, std::string* comp_name);

// What to do with an attribute name that is not in attrs.def.
enum class ForeignAttr { kUnknown, kIgnore, kDefaultOnly };
ForeignAttr ClassifyForeignAttr(std::string_view name);

// A new instruction of `comp` that a rewrite of `like` needs: its position, its name with
// `suffix`.
inline Instruction* AddBeside(Computation& comp, const Instruction& like, Opcode opcode,
                              Shape result, std::vector<Instruction*> operands,
                              const std::string& suffix) {
  auto i = std::make_unique<Instruction>();
  i->loc = like.loc;
  i->name = like.name + suffix;
  i->opcode = opcode;
  i->shape = std::move(result);
  i->operands = std::move(operands);
  return comp.AddInstruction(std::move(i));
}

// A computation of scalars that an expansion applies elementwise to whole arrays (a variadic
// reduce's combiner, a sort's comparator): parameters, constants and elementwise ops, the root
// a tuple of results or one result (scalar_body.cc).
class ScalarBody {
 public:
  // Checks `f` (at most `max_instructions`); errors start with `what`.
  Status Init(const Computation& f, size_t max_instructions, const std::string& what);
  const std::vector<Instruction*>& params() const { return params_; }  // in parameter order
  const std::vector<const Instruction*>& outputs() const { return outputs_; }
  // f's body applied elementwise to `args` (one per parameter, in order; all with the
  // dimensions of args[0]), added to `comp` beside `like`, named like.name + suffix + serial.
  std::vector<Instruction*> Apply(Computation& comp, const Instruction& like,
                                  const std::vector<Instruction*>& args, const std::string& suffix,
                                  int* serial) const;

 private:
  const Computation* f_ = nullptr;
  std::vector<Instruction*> params_;
  std::vector<const Instruction*> outputs_;
  std::vector<const Instruction*> body_;  // post order, a tuple root left out
};

// layouts.cc: bitcast `instr` (its operand resolved, parsed as a reshape) between an operand
// of layout `operand_m2m` and a result of layout `result_m2m` (minor to major; empty for one
// that is not a plain permutation) rewritten into the transposes and reshape that read the
// operand's memory order in the result's. Errors start with a space, for the caller's prefix.
Status ExpandBitcast(Computation& comp, Instruction& instr, std::vector<int64_t> operand_m2m,
                     std::vector<int64_t> result_m2m);

// select_and_scatter.cc: XLA's select-and-scatter `instr` (parsed with opcode kReduceWindow,
// operands resolved, its window attribute set) rewritten into slices, compares, selects, pads
// and adds beside it in `comp`; `instr` becomes the last add. Errors say what is unsupported,
// for the caller to position.
Status ExpandSelectAndScatter(Computation& comp, Instruction& instr, const Computation& select,
                              const Computation& scatter);

// variadic_reduce.cc: XLA's reduce of several inputs together `instr` (operands resolved, its
// dimensions attribute set), whose to_apply is `combiner`, rewritten beside it in `comp` into
// f's body applied elementwise in reduce's canonical order (kPairwise64); `instr` becomes the
// tuple of the results. Errors say what is unsupported, for the caller to position.
Status ExpandVariadicReduce(Computation& comp, Instruction& instr, const Computation& combiner);

// sort.cc: compare type=TOTALORDER (`instr`, operands resolved) rewritten to compare f32
// operands by their total-order keys; XLA's sort (parsed with opcode kReduce, its dimensions
// set) as a stable bitonic network of `comparator`, `instr` becoming the sorted tuple (or
// array); topk (parsed as kTuple) as the stable sort by value, descending for `largest`, and
// its first k with their indices.
Status ExpandTotalOrderCompare(Computation& comp, Instruction& instr);
Status ExpandSort(Computation& comp, Instruction& instr, const Computation& comparator);
// With a `comparator` (XLA's TopK custom call), it orders (value, index) pairs instead.
Status ExpandTopK(Computation& comp, Instruction& instr, int64_t k, bool largest,
                  const Computation* comparator = nullptr);

}  // namespace detrain::ir::parser_internal

#endif  // DETRAIN_COMPILER_IR_PARSER_INTERNAL_H_
