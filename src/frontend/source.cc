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
  uint32_t begin = where.begin - static_cast<uint32_t>(column - 1);
  size_t eol = text_.find('\n', begin);
  if (eol == std::string::npos) eol = text_.size();
  std::string line_text = text_.substr(begin, eol - begin);
  out += "\n    " + line_text + "\n    ";
  for (int i = 1; i < column; ++i)
    out += line_text[static_cast<size_t>(i - 1)] == '\t' ? '\t' : ' ';
  size_t width = std::max<size_t>(1, std::min<size_t>(where.end, eol) - where.begin);
  if (where.end <= where.begin) width = 1;
  out += '^';
  out += std::string(width - 1, '~');
  return InvalidArgument(std::move(out));
}

}  // namespace detrain::frontend
