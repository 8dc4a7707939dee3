// Lexer for the .dt language (docs/language.md §Lexical structure).
//
// Produces the whole token list up front; the last token is kEnd. Whitespace and `#` comments
// separate tokens and are otherwise ignored. Numbers keep their source text so that constants
// are converted to binary exactly once, correctly rounded (std::from_chars), at type checking.
//
// Thread safety: pure function of the source.
#ifndef DETRAIN_FRONTEND_LEXER_H_
#define DETRAIN_FRONTEND_LEXER_H_

#include <string>
#include <vector>

#include "frontend/source.h"

namespace detrain::frontend {

enum class TokenKind {
  kIdent,
  kInt,
  kFloat,
  kString,
  kLParen,
  kRParen,
  kLBracket,
  kRBracket,
  kLBrace,
  kRBrace,
  kComma,
  kColon,
  kAssign,
  kArrow,
  kPlus,
  kMinus,
  kStar,
  kSlash,
  kAt,
  kEnd,
};

const char* TokenKindName(TokenKind kind);

struct Token {
  TokenKind kind;
  SourceRange range;
  std::string text;  // identifier, number text, or the decoded string literal
};

Result<std::vector<Token>> Lex(const SourceFile& source);

}  // namespace detrain::frontend

#endif  // DETRAIN_FRONTEND_LEXER_H_
