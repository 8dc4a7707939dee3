// A character cursor over IR text with line/column tracking, used by the parser.
//
// HLO text is not regular enough for a context-free token stream (`2x2`, `0_1x1_0`,
// `b01f_01io->b01f` are single attribute values), so the parser reads it through these
// scanning primitives. Whitespace includes `// ...` line comments and `/* ... */` block
// comments (XLA prints `/*index=5*/` inside long tuples; test files use `// expected-error`).
//
// Thread safety: a Cursor is used by one thread.
#ifndef DETRAIN_COMPILER_IR_LEXER_H_
#define DETRAIN_COMPILER_IR_LEXER_H_

#include <optional>
#include <string>
#include <string_view>

#include "base/status.h"
#include "compiler/ir/module.h"

namespace detrain::ir {

class Cursor {
 public:
  explicit Cursor(std::string_view text) : text_(text) {}

  void SkipSpace();  // whitespace and comments
  bool AtEnd();      // after SkipSpace
  char Peek();       // after SkipSpace; '\0' at the end
  char PeekRaw() const { return pos_ < text_.size() ? text_[pos_] : '\0'; }
  // Consumes and returns one character ('\0' at the end).
  char Next() {
    char c = PeekRaw();
    Advance();
    return c;
  }
  bool LookingAt(std::string_view s);  // after SkipSpace
  std::string_view Rest() {            // the unread text, after SkipSpace (for lookahead)
    SkipSpace();
    return text_.substr(pos_);
  }
  bool TryConsume(std::string_view s);  // after SkipSpace
  // Like TryConsume, but only a whole word: `ROOT` does not match the start of `ROOTS`.
  bool TryConsumeKeyword(std::string_view word);
  Status Expect(std::string_view s, std::string_view what);

  // [%]?[A-Za-z_][A-Za-z0-9_.-]*, without the '%'. Empty if none.
  std::string ReadName();
  // An identifier-like word (no '%'): letters, digits, '_', '-', '.'.
  std::string ReadWord();
  // A run of characters from `allowed` (no whitespace skipping inside).
  std::string ReadRun(std::string_view allowed);
  Result<int64_t> ReadInt(std::string_view what);
  // A quoted string without escapes.
  Result<std::string> ReadString();
  // Skips one attribute value of unknown structure: a balanced {...}, a string, or a word.
  Status SkipValue();
  // Skips to the end of the current line.
  void SkipLine();

  SourceLoc Loc() const { return {line_, column_}; }
  // An error at the start of a `/*` comment that never closes, once SkipSpace met one (it then
  // skips to the end of the input, so whatever failed after it is a consequence: report this).
  Status CheckInput() const;
  // An error at the first NUL byte of `text`: PeekRaw's '\0' means the end of the input.
  static Status CheckNoNul(std::string_view text);
  // "line:column: message" at the current position (after skipping space), or at `loc`.
  Status Error(std::string_view message);
  static Status ErrorAt(SourceLoc loc, std::string_view message);
  // A short description of what is at the cursor, for "expected X, found Y" messages.
  std::string Found();

 private:
  void Advance();

  std::string_view text_;
  size_t pos_ = 0;
  int line_ = 1;
  int column_ = 1;
  std::optional<SourceLoc> unterminated_comment_;
};

// A name for a message: at most 64 characters of it (a hostile name can be megabytes long).
inline std::string Quoted(std::string_view name) {
  if (name.size() <= 64) return "'" + std::string(name) + "'";
  return "'" + std::string(name.substr(0, 64)) + "...' (" + std::to_string(name.size()) +
         " characters)";
}

}  // namespace detrain::ir

#endif  // DETRAIN_COMPILER_IR_LEXER_H_
