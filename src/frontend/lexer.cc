// See lexer.h.
#include "frontend/lexer.h"

#include <cctype>

namespace detrain::frontend {

const char* TokenKindName(TokenKind kind) {
  switch (kind) {
    case TokenKind::kIdent:
      return "a name";
    case TokenKind::kInt:
      return "an integer";
    case TokenKind::kFloat:
      return "a number";
    case TokenKind::kString:
      return "a string";
    case TokenKind::kLParen:
      return "'('";
    case TokenKind::kRParen:
      return "')'";
    case TokenKind::kLBracket:
      return "'['";
    case TokenKind::kRBracket:
      return "']'";
    case TokenKind::kLBrace:
      return "'{'";
    case TokenKind::kRBrace:
      return "'}'";
    case TokenKind::kComma:
      return "','";
    case TokenKind::kColon:
      return "':'";
    case TokenKind::kAssign:
      return "'='";
    case TokenKind::kArrow:
      return "'->'";
    case TokenKind::kPlus:
      return "'+'";
    case TokenKind::kMinus:
      return "'-'";
    case TokenKind::kStar:
      return "'*'";
    case TokenKind::kSlash:
      return "'/'";
    case TokenKind::kAt:
      return "'@'";
    case TokenKind::kEnd:
      return "the end of the file";
  }
  return "?";
}

namespace {

bool IsIdentStart(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; }
bool IsIdentChar(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }
bool IsDigit(char c) { return c >= '0' && c <= '9'; }

class Lexer {
 public:
  explicit Lexer(const SourceFile& source) : src_(source), text_(source.text()) {}

  Result<std::vector<Token>> Run() {
    std::vector<Token> tokens;
    for (;;) {
      SkipSpaceAndComments();
      if (pos_ >= text_.size()) {
        tokens.push_back({TokenKind::kEnd, Range(pos_, pos_), ""});
        return tokens;
      }
      Result<Token> t = Next();
      if (!t.ok()) return t.status();
      tokens.push_back(std::move(*t));
    }
  }

 private:
  SourceRange Range(size_t b, size_t e) const {
    return {static_cast<uint32_t>(b), static_cast<uint32_t>(e)};
  }

  void SkipSpaceAndComments() {
    while (pos_ < text_.size()) {
      char c = text_[pos_];
      if (c == '#') {
        while (pos_ < text_.size() && text_[pos_] != '\n') ++pos_;
      } else if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
        ++pos_;
      } else {
        return;
      }
    }
  }

  Result<Token> Next() {
    size_t start = pos_;
    char c = text_[pos_];
    if (IsIdentStart(c)) {
      while (pos_ < text_.size() && IsIdentChar(text_[pos_])) ++pos_;
      return Token{TokenKind::kIdent, Range(start, pos_), text_.substr(start, pos_ - start)};
    }
    if (IsDigit(c) || (c == '.' && pos_ + 1 < text_.size() && IsDigit(text_[pos_ + 1]))) {
      return Number();
    }
    if (c == '"') return String();
    if (c == '-' && pos_ + 1 < text_.size() && text_[pos_ + 1] == '>') {
      pos_ += 2;
      return Token{TokenKind::kArrow, Range(start, pos_), "->"};
    }
    static constexpr struct {
      char c;
      TokenKind kind;
    } kPunct[] = {
        {'(', TokenKind::kLParen},   {')', TokenKind::kRParen}, {'[', TokenKind::kLBracket},
        {']', TokenKind::kRBracket}, {'{', TokenKind::kLBrace}, {'}', TokenKind::kRBrace},
        {',', TokenKind::kComma},    {':', TokenKind::kColon},  {'=', TokenKind::kAssign},
        {'+', TokenKind::kPlus},     {'-', TokenKind::kMinus},  {'*', TokenKind::kStar},
        {'/', TokenKind::kSlash},    {'@', TokenKind::kAt}};
    for (const auto& p : kPunct) {
      if (p.c == c) {
        ++pos_;
        return Token{p.kind, Range(start, pos_), std::string(1, c)};
      }
    }
    auto byte = static_cast<unsigned char>(c);
    std::string shown = std::isprint(byte) ? "'" + std::string(1, c) + "'" : ByteName(byte);
    return src_.Error(Range(start, start + 1), "unexpected character " + shown);
  }

  // INT: digits. FLOAT: digits with a '.' and/or an exponent (1e-3, 0.5, .5, 2.).
  Result<Token> Number() {
    size_t start = pos_;
    bool is_float = false;
    while (pos_ < text_.size() && IsDigit(text_[pos_])) ++pos_;
    if (pos_ < text_.size() && text_[pos_] == '.') {
      is_float = true;
      ++pos_;
      while (pos_ < text_.size() && IsDigit(text_[pos_])) ++pos_;
    }
    if (pos_ < text_.size() && (text_[pos_] == 'e' || text_[pos_] == 'E')) {
      size_t e = pos_ + 1;
      if (e < text_.size() && (text_[e] == '+' || text_[e] == '-')) ++e;
      if (e >= text_.size() || !IsDigit(text_[e])) {
        return src_.Error(Range(start, e), "malformed number: expected digits after the exponent");
      }
      is_float = true;
      pos_ = e;
      while (pos_ < text_.size() && IsDigit(text_[pos_])) ++pos_;
    }
    if (pos_ < text_.size() && IsIdentChar(text_[pos_])) {
      size_t e = pos_;
      while (e < text_.size() && IsIdentChar(text_[e])) ++e;
      return src_.Error(Range(start, e),
                        "malformed number '" + text_.substr(start, e - start) + "'");
    }
    return Token{is_float ? TokenKind::kFloat : TokenKind::kInt, Range(start, pos_),
                 text_.substr(start, pos_ - start)};
  }

  static std::string ByteName(unsigned char byte) {
    static constexpr char kHex[] = "0123456789abcdef";
    return std::string("byte 0x") + kHex[byte >> 4] + kHex[byte & 15];
  }

  // The length of the well-formed UTF-8 sequence at `at` (RFC 3629: no overlong forms, no
  // surrogates, at most U+10FFFF), or 0 when it is not one.
  size_t Utf8Length(size_t at) const {
    auto b = [&](size_t i) {
      return at + i < text_.size() ? static_cast<unsigned char>(text_[at + i]) : 0u;
    };
    auto cont = [&](size_t i) { return (b(i) & 0xC0u) == 0x80u; };
    unsigned lead = b(0);
    if (lead >= 0xC2 && lead <= 0xDF) return cont(1) ? 2 : 0;
    if (lead >= 0xE0 && lead <= 0xEF) {
      unsigned lo = lead == 0xE0 ? 0xA0 : 0x80, hi = lead == 0xED ? 0x9F : 0xBF;
      return b(1) >= lo && b(1) <= hi && cont(2) ? 3 : 0;
    }
    if (lead >= 0xF0 && lead <= 0xF4) {
      unsigned lo = lead == 0xF0 ? 0x90 : 0x80, hi = lead == 0xF4 ? 0x8F : 0xBF;
      return b(1) >= lo && b(1) <= hi && cont(2) && cont(3) ? 4 : 0;
    }
    return 0;
  }

  Result<Token> String() {
    size_t start = pos_++;
    std::string value;
    while (pos_ < text_.size() && text_[pos_] != '"') {
      char c = text_[pos_];
      if (c == '\n' || (c == '\r' && pos_ + 1 < text_.size() && text_[pos_ + 1] == '\n')) break;
      if (c == '\\') {
        if (pos_ + 1 >= text_.size()) break;
        char e = text_[pos_ + 1];
        if (e == '"' || e == '\\') {
          value += e;
        } else if (e == 'n') {
          value += '\n';
        } else if (e == 't') {
          value += '\t';
        } else {
          return src_.Error(Range(pos_, pos_ + 2), std::string("unknown escape '\\") + e +
                                                       "' (expected \\\" \\\\ \\n or \\t)");
        }
        pos_ += 2;
        continue;
      }
      auto byte = static_cast<unsigned char>(c);
      if (byte < 0x20 && c != '\t') {
        // A path or name with a NUL would be cut short where it is used; write \n or \t.
        return src_.Error(Range(pos_, pos_ + 1),
                          "control character " + ByteName(byte) + " in a string");
      }
      if (byte >= 0x80) {
        size_t n = Utf8Length(pos_);
        if (n == 0) {
          return src_.Error(Range(pos_, pos_ + 1),
                            "invalid UTF-8 (" + ByteName(byte) + ") in a string");
        }
        value += text_.substr(pos_, n);
        pos_ += n;
        continue;
      }
      value += c;
      ++pos_;
    }
    if (pos_ >= text_.size() || text_[pos_] != '"') {
      return src_.Error(Range(start, pos_),
                        "unterminated string (expected '\"' before the end of the line)");
    }
    ++pos_;
    return Token{TokenKind::kString, Range(start, pos_), value};
  }

  const SourceFile& src_;
  const std::string& text_;
  size_t pos_ = 0;
};

}  // namespace

Result<std::vector<Token>> Lex(const SourceFile& source) { return Lexer(source).Run(); }

}  // namespace detrain::frontend
