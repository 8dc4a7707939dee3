// See lexer.h.
#include "compiler/ir/lexer.h"

#include <cctype>
#include <charconv>

namespace detrain::ir {
namespace {

bool IsNameStart(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; }
bool IsNameChar(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '-';
}

}  // namespace

void Cursor::Advance() {
  if (pos_ >= text_.size()) return;
  if (text_[pos_] == '\n') {
    ++line_;
    column_ = 1;
  } else {
    ++column_;
  }
  ++pos_;
}

void Cursor::SkipSpace() {
  while (pos_ < text_.size()) {
    char c = text_[pos_];
    if (std::isspace(static_cast<unsigned char>(c))) {
      Advance();
    } else if (text_.substr(pos_, 2) == "//") {
      SkipLine();
    } else if (text_.substr(pos_, 2) == "/*") {
      SourceLoc start = Loc();
      size_t close = text_.find("*/", pos_ + 2);
      size_t end = close == std::string_view::npos ? text_.size() : close + 2;
      if (close == std::string_view::npos && !unterminated_comment_) unterminated_comment_ = start;
      while (pos_ < end) Advance();
    } else {
      break;
    }
  }
}

void Cursor::SkipLine() {
  while (pos_ < text_.size() && text_[pos_] != '\n') Advance();
}

bool Cursor::AtEnd() {
  SkipSpace();
  return pos_ >= text_.size();
}

char Cursor::Peek() {
  SkipSpace();
  return PeekRaw();
}

bool Cursor::LookingAt(std::string_view s) {
  SkipSpace();
  return text_.substr(pos_, s.size()) == s;
}

bool Cursor::TryConsume(std::string_view s) {
  if (!LookingAt(s)) return false;
  for (size_t i = 0; i < s.size(); ++i) Advance();
  return true;
}

bool Cursor::TryConsumeKeyword(std::string_view word) {
  if (!LookingAt(word)) return false;
  size_t after = pos_ + word.size();
  if (after < text_.size() && IsNameChar(text_[after])) return false;
  return TryConsume(word);
}

Status Cursor::Expect(std::string_view s, std::string_view what) {
  if (TryConsume(s)) return Status::Ok();
  return Error("expected '" + std::string(s) + "' " + std::string(what) + ", found " + Found());
}

std::string Cursor::ReadName() {
  SkipSpace();
  size_t save_pos = pos_;
  int save_line = line_, save_col = column_;
  if (PeekRaw() == '%') Advance();
  if (!IsNameStart(PeekRaw())) {
    pos_ = save_pos;
    line_ = save_line;
    column_ = save_col;
    return "";
  }
  std::string name;
  while (IsNameChar(PeekRaw())) {
    name += PeekRaw();
    Advance();
  }
  return name;
}

std::string Cursor::ReadWord() {
  SkipSpace();
  std::string word;
  while (IsNameChar(PeekRaw())) {
    word += PeekRaw();
    Advance();
  }
  return word;
}

std::string Cursor::ReadRun(std::string_view allowed) {
  std::string run;
  while (PeekRaw() != '\0' && allowed.find(PeekRaw()) != std::string_view::npos) {
    run += PeekRaw();
    Advance();
  }
  return run;
}

Result<int64_t> Cursor::ReadInt(std::string_view what) {
  SkipSpace();
  SourceLoc loc = Loc();
  std::string digits = ReadRun("-+0123456789");
  int64_t v = 0;
  std::string_view d = digits;
  if (!d.empty() && d.front() == '+') d.remove_prefix(1);
  auto r = std::from_chars(d.data(), d.data() + d.size(), v);
  if (d.empty() || r.ec != std::errc() || r.ptr != d.data() + d.size()) {
    return ErrorAt(loc, "expected an integer " + std::string(what) + ", found " +
                            (digits.empty() ? Found() : "'" + digits + "'"));
  }
  return v;
}

Result<std::string> Cursor::ReadString() {
  if (Peek() != '"') return Error("expected a quoted string, found " + Found());
  Advance();
  std::string s;
  while (PeekRaw() != '"') {
    if (PeekRaw() == '\0' || PeekRaw() == '\n') return Error("unterminated string");
    if (PeekRaw() != '\\') {
      s += PeekRaw();
      Advance();
      continue;
    }
    // C escapes, as XLA's printer writes them (absl::CEscape): \n \r \t \" \' \\, three
    // octal digits; also \xHH.
    SourceLoc at = Loc();
    Advance();
    const char e = PeekRaw();
    auto octal = [](char c) { return c >= '0' && c <= '7'; };
    auto hex = [](char c) { return std::isxdigit(static_cast<unsigned char>(c)) != 0; };
    switch (e) {
      case 'n':
        s += '\n';
        Advance();
        break;
      case 'r':
        s += '\r';
        Advance();
        break;
      case 't':
        s += '\t';
        Advance();
        break;
      case '"':
      case '\'':
      case '\\':
        s += e;
        Advance();
        break;
      default:
        if (octal(e)) {
          int v = 0;
          for (int i = 0; i < 3; ++i) {
            if (!octal(PeekRaw())) return ErrorAt(at, "an octal escape needs three digits");
            v = v * 8 + (PeekRaw() - '0');
            Advance();
          }
          if (v > 255) return ErrorAt(at, "an octal escape above \\377");
          s += static_cast<char>(v);
        } else if (e == 'x') {
          Advance();
          int v = 0;
          for (int i = 0; i < 2; ++i) {
            const char h = PeekRaw();
            if (!hex(h)) return ErrorAt(at, "a \\x escape needs two hex digits");
            v = v * 16 + (h <= '9' ? h - '0' : (h | 0x20) - 'a' + 10);
            Advance();
          }
          s += static_cast<char>(v);
        } else {
          return ErrorAt(at, std::string("unknown escape sequence '\\") +
                                 (e == '\0' || e == '\n' ? std::string() : std::string(1, e)) +
                                 "' in a string");
        }
    }
  }
  Advance();
  return s;
}

Status Cursor::SkipValue() {
  char c = Peek();
  if (c == '"') return ReadString().status();
  if (c != '{') {
    std::string word =
        ReadRun("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-%");
    if (word.empty()) return Error("expected an attribute value, found " + Found());
    return Status::Ok();
  }
  int depth = 0;
  do {
    char ch = PeekRaw();
    if (ch == '\0') return Error("unbalanced '{' in attribute value");
    if (ch == '"') {
      DETRAIN_RETURN_IF_ERROR(ReadString().status());
      continue;
    }
    if (ch == '{') ++depth;
    if (ch == '}') --depth;
    Advance();
  } while (depth > 0);
  return Status::Ok();
}

Status Cursor::CheckInput() const {
  if (unterminated_comment_) return ErrorAt(*unterminated_comment_, "unterminated /* comment");
  return Status::Ok();
}

Status Cursor::CheckNoNul(std::string_view text) {
  size_t nul = text.find('\0');
  if (nul == std::string_view::npos) return Status::Ok();
  SourceLoc loc{1, 1};
  for (size_t i = 0; i < nul; ++i) {
    if (text[i] == '\n') {
      ++loc.line;
      loc.column = 1;
    } else {
      ++loc.column;
    }
  }
  return ErrorAt(loc, "NUL byte in the input (HLO text cannot contain one)");
}

Status Cursor::Error(std::string_view message) {
  SkipSpace();
  return ErrorAt(Loc(), message);
}

Status Cursor::ErrorAt(SourceLoc loc, std::string_view message) {
  return InvalidArgument(std::to_string(loc.line) + ":" + std::to_string(loc.column) + ": " +
                         std::string(message));
}

std::string Cursor::Found() {
  SkipSpace();
  if (pos_ >= text_.size()) return "end of input";
  // A word (name, number, value) or else the single punctuation character.
  size_t end = pos_;
  while (end < text_.size() && end - pos_ < 24 &&
         (IsNameChar(text_[end]) || text_[end] == '%' || text_[end] == '+')) {
    ++end;
  }
  if (end == pos_) end = pos_ + 1;
  return "'" + std::string(text_.substr(pos_, end - pos_)) + "'";
}

}  // namespace detrain::ir
