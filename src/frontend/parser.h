// Recursive-descent parser for .dt programs (grammar: docs/language.md §Grammar).
// Errors: "file:line:col: error: expected X, found Y" with the source line and a caret.
// Thread safety: pure function of the source.
#ifndef DETRAIN_FRONTEND_PARSER_H_
#define DETRAIN_FRONTEND_PARSER_H_

#include "frontend/ast.h"
#include "frontend/source.h"

namespace detrain::frontend {

Result<Program> Parse(const SourceFile& source);

}  // namespace detrain::frontend

#endif  // DETRAIN_FRONTEND_PARSER_H_
