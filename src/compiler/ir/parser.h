// Parser for IR text: the canonical form (printer.h), and XLA's HLO text over the same op
// subset as far as it says what the IR holds. The XLA syntax that carries no meaning here is
// accepted and dropped: `%` name prefixes, layouts (`f32[2,3]{1,0}`; detrain values are logical
// and row-major, and HLO op semantics do not depend on layout), the module header's attributes
// (`entry_computation_layout=...`), computation signatures (`%c (a: f32[]) -> f32[] {`), operand
// shapes (`add(f32[] %a, f32[] %b)`), `/*...*/` and `//` comments, the debug tables, and the
// attributes listed in docs/ir.md ("Ignored XLA attributes": metadata, sharding,
// frontend_attributes, ...).
//
// The parser builds exactly what the text says and never rewrites the graph. XLA's constructs
// that become other ops (sort, topk, select-and-scatter, variadic reduce, copy, bitcast,
// is-finite, batched gather and scatter, bf16 and f16) are the importer's
// (compiler/xla_import/import.h), which calls the overload with hooks (parser_hooks.h); without
// them each is an error like anything else outside the subset: an unknown op, element type or
// attribute, a dynamic dimension here; a variadic reduce or an unknown custom-call target in the
// verifier. Errors are "line:column: message" with what was expected.
//
// Parameter names: a trailing `.<digits>` (an XLA id) is dropped, so `x.1` becomes `x`; a name
// that then collides or is not valid becomes `p<number>`.
//
// The parser checks syntax and name resolution only; run the verifier for semantics.
//
// Thread safety: pure function (the overload with hooks: as pure as the hooks).
#ifndef DETRAIN_COMPILER_IR_PARSER_H_
#define DETRAIN_COMPILER_IR_PARSER_H_

#include <memory>
#include <string_view>

#include "base/status.h"
#include "compiler/ir/module.h"
#include "compiler/ir/parser_hooks.h"

namespace detrain::ir {

Result<std::unique_ptr<Module>> ParseModule(std::string_view text);
// The same with a dialect's hooks (null: none).
Result<std::unique_ptr<Module>> ParseModule(std::string_view text, ParserHooks* hooks);

}  // namespace detrain::ir

#endif  // DETRAIN_COMPILER_IR_PARSER_H_
