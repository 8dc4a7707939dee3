// Internal to the parser: the value-level grammar shared by parser.cc (module structure) and
// parser_values.cc (shapes, literals, attribute values). Not part of the IR's API.
#ifndef DETRAIN_COMPILER_IR_PARSER_INTERNAL_H_
#define DETRAIN_COMPILER_IR_PARSER_INTERNAL_H_

#include <memory>
#include <string>
#include <vector>

#include "compiler/ir/lexer.h"
#include "compiler/ir/module.h"

namespace detrain::ir::parser_internal {

// The parser's one depth limit (docs/ir.md §5): tuple shapes nest at most this deep. Constant
// braces nest as deep as the shape's rank (at most kMaxRank); nothing else in the grammar nests.
inline constexpr int kMaxNestingDepth = 64;

// `f32[2,3]`, `f32[2,3]{1,0}` (layout dropped), `(f32[], s32[2])`.
// `other_layout`, when given, is set when a layout other than row-major ({n-1,...,0}) follows
// the shape (or one of its tuple elements); layouts are otherwise skipped. `minor_to_major`,
// when given, receives an array shape's other layout when it is a plain permutation (not for
// tuples; left empty for tiled layouts and the like).
Result<Shape> ParseShape(Cursor& cur, bool* other_layout = nullptr,
                         std::vector<int64_t>* minor_to_major = nullptr);

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

}  // namespace detrain::ir::parser_internal

#endif  // DETRAIN_COMPILER_IR_PARSER_INTERNAL_H_
