// Source text and diagnostics for .dt programs.
//
// A SourceFile owns the program text and its display name. A SourceRange is a byte span in it.
// Diagnose() formats an error the way every compiler front end a user knows does:
//
//   train.dt:7:12: error: x @ w1: f32[B,30] @ f32[31,64]: contracted dimensions 30 and 31 differ
//       h = relu(x @ w1 + b1)
//                ^~~~~~
//
// Columns are 1-based and count bytes. Thread safety: immutable after construction.
#ifndef DETRAIN_FRONTEND_SOURCE_H_
#define DETRAIN_FRONTEND_SOURCE_H_

#include <cstdint>
#include <string>
#include <string_view>

#include "base/status.h"

namespace detrain::frontend {

struct SourceRange {
  uint32_t begin = 0;  // byte offset of the first character
  uint32_t end = 0;    // one past the last
};

class SourceFile {
 public:
  SourceFile(std::string name, std::string text) : name_(std::move(name)), text_(std::move(text)) {}

  const std::string& name() const { return name_; }
  const std::string& text() const { return text_; }
  std::string_view Slice(SourceRange r) const {
    return std::string_view(text_).substr(r.begin, r.end - r.begin);
  }

  // 1-based line and column of a byte offset.
  void LineColumn(uint32_t offset, int* line, int* column) const;

  // "name:line:col: error: message\n<source line>\n<caret line>". Returns kInvalidArgument.
  Status Error(SourceRange where, std::string_view message) const;

 private:
  std::string name_;
  std::string text_;
};

}  // namespace detrain::frontend

#endif  // DETRAIN_FRONTEND_SOURCE_H_
