// The importer of XLA's HLO text (DESIGN.md stage 0 for `.hlo` programs; docs/ir.md §5,
// docs/jax.md): the one entry for text exported from JAX or dumped by XLA, optimized or not.
// It is the IR's parser (ir/parser.h) with XLA's dialect as its hooks (hooks.h): the IR's
// parser reads canonical text and the XLA syntax that carries no meaning; the importer adds
// XLA's constructs that become other ops of the IR — bf16 and f16 (held as f32, rounded after
// each op), copy, bitcast between layouts, is-finite, select-and-scatter, sort, topk and the
// TopK custom call, compare type=TOTALORDER, reduce and reduce-window of several inputs,
// gather and scatter with batching dimensions — each expanded into exact ops, within a budget
// of 2^18 added instructions per module. Canonical text reads the same with either parser.
//
// Errors are "line:column: message" (the callers prefix the file name), like the parser's.
//
// Thread safety: pure functions. Deterministic: the module depends only on the text.
#ifndef DETRAIN_COMPILER_XLA_IMPORT_IMPORT_H_
#define DETRAIN_COMPILER_XLA_IMPORT_IMPORT_H_

#include <memory>
#include <string_view>

#include "base/status.h"
#include "compiler/ir/module.h"

namespace detrain::xla_import {

// HLO text read and legalized into the IR; not verified.
Result<std::unique_ptr<ir::Module>> ParseHloText(std::string_view text);

// ParseHloText followed by ir::VerifyModule.
Result<std::unique_ptr<ir::Module>> ParseAndVerifyHloText(std::string_view text);

}  // namespace detrain::xla_import

#endif  // DETRAIN_COMPILER_XLA_IMPORT_IMPORT_H_
