// See source.h.
#include "frontend/source.h"

#include <algorithm>

namespace detrain::frontend {

void SourceFile::LineColumn(uint32_t offset, int* line, int* column) const {
  offset = std::min<uint32_t>(offset, static_cast<uint32_t>(text_.size()));
  int l = 1;
  uint32_t line_start = 0;
  for (uint32_t i = 0; i < offset; ++i) {
    if (text_[i] == '\n') {
      ++l;
      line_start = i + 1;
    }
  }
  *line = l;
  *column = static_cast<int>(offset - line_start) + 1;
}

Status SourceFile::Error(SourceRange where, std::string_view message) const {
  int line, column;
  LineColumn(where.begin, &line, &column);
  std::string out = name_ + ":" + std::to_string(line) + ":" + std::to_string(column) +
                    ": error: " + std::string(message);
  size_t begin = where.begin - static_cast<uint32_t>(column - 1);
  size_t eol = text_.find('\n', begin);
  if (eol == std::string::npos) eol = text_.size();
  if (eol > begin && text_[eol - 1] == '\r') --eol;  // CRLF: the '\r' is not shown
  // A long line is shown as a window around the error, so a message stays a few lines long.
  constexpr size_t kContext = 80;
  size_t at = std::min<size_t>(where.begin, eol);
  size_t first = at - begin > kContext ? at - kContext : begin;
  size_t last = eol - at > kContext ? at + kContext : eol;
  std::string line_text = text_.substr(first, last - first);
  std::string prefix = first > begin ? "..." : "";
  out += "\n    " + prefix + line_text + (last < eol ? "..." : "") + "\n    " +
         std::string(prefix.size(), ' ');
  for (size_t i = first; i < at; ++i) out += text_[i] == '\t' ? '\t' : ' ';
  size_t width = where.end > where.begin ? std::min<size_t>(where.end, last) - at : 1;
  if (width == 0 || where.end <= where.begin) width = 1;
  out += '^';
  out += std::string(width - 1, '~');
  return InvalidArgument(std::move(out));
}

}  // namespace detrain::frontend
