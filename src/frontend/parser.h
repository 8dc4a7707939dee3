// Recursive-descent parser for .dt programs (grammar: docs/language.md §Grammar).
// Errors: "file:line:col: error: expected X, found Y" with the source line and a caret.
//
// Limits, so that hostile input is an error and never exhausts the stack or memory: a source of
// at most kMaxSourceBytes, and expressions at most kMaxExpressionDepth levels deep. Each
// operator, call, list and pair of parentheses is one level around what it contains; a name or a
// number is one level. The parser enforces the limit on its own recursion and on the tree it
// builds (a left-deep chain `a + b + ... + b` is built by a loop but is as deep as it is long),
// so every later recursive pass over the tree (checker, lowering) recurses at most that deep.
//
// Thread safety: pure function of the source.
#ifndef DETRAIN_FRONTEND_PARSER_H_
#define DETRAIN_FRONTEND_PARSER_H_

#include <cstddef>

#include "frontend/ast.h"
#include "frontend/source.h"

namespace detrain::frontend {

inline constexpr int kMaxExpressionDepth = 256;
inline constexpr size_t kMaxSourceBytes = size_t{4} << 20;  // 4 MiB

Result<Program> Parse(const SourceFile& source);

}  // namespace detrain::frontend

#endif  // DETRAIN_FRONTEND_PARSER_H_
