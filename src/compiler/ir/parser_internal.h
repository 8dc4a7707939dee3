// Internal to the parser: the value-level grammar shared by parser.cc (module structure) and
// parser_values.cc (shapes, literals, attribute values). Not part of the IR's API.
#ifndef DETRAIN_COMPILER_IR_PARSER_INTERNAL_H_
#define DETRAIN_COMPILER_IR_PARSER_INTERNAL_H_

#include <string>
#include <vector>

#include "compiler/ir/lexer.h"
#include "compiler/ir/module.h"
#include "compiler/ir/parser_hooks.h"

namespace detrain::ir::parser_internal {

// The parser's one depth limit (docs/ir.md §5): tuple shapes nest at most this deep. Constant
// braces nest as deep as the shape's rank (at most kMaxRank); nothing else in the grammar nests.
inline constexpr int kMaxNestingDepth = 64;

// `f32[2,3]`, `f32[2,3]{1,0}` (layout dropped), `(f32[], s32[2])`. An element type the IR does
// not have is looked up in `hooks` (when given). `text`, when given, receives what the text said
// beyond the shape (parser_hooks.h ShapeText).
Result<Shape> ParseShape(Cursor& cur, const ParserHooks* hooks = nullptr,
                         ShapeText* text = nullptr);

// The debug tables that follow the HloModule line of text printed with debug information
// (module.h DebugTables); every reference must resolve (parser_debug_tables.cc).
Status ParseDebugTables(Cursor& cur, DebugTables& tables);

// True if the cursor is at an element type name (the IR's, or one of `hooks`) followed by '['
// (an XLA operand shape).
bool LookingAtShape(Cursor& cur, const ParserHooks* hooks);

// The value inside `constant(...)` for a literal of `shape`.
Result<Literal> ParseLiteral(Cursor& cur, const Shape& shape);

// One attribute value of `attr` (after `name=`). A kComputation value is returned as its name
// in `comp_name` (resolved later by the caller).
Status ParseAttrValue(Cursor& cur, Attr attr, AttrValue* value, std::string* comp_name);

// What to do with an attribute name that is not in attrs.def.
enum class ForeignAttr { kUnknown, kIgnore, kDefaultOnly };
ForeignAttr ClassifyForeignAttr(std::string_view name);

}  // namespace detrain::ir::parser_internal

#endif  // DETRAIN_COMPILER_IR_PARSER_INTERNAL_H_
