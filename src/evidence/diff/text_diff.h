// Line comparison for `detrain diff` (diff.h): a unified diff of two texts and the first line
// where they differ, with the lines before it as context.
//
// UnifiedDiff finds a shortest edit script (Myers' O((N+M)D) algorithm, after trimming the common
// prefix and suffix) and prints it in the unified format of GNU diff (`diff -u`): `---`/`+++`
// headers, `@@ -l,s +l,s @@` hunks with `context` lines around each change, and
// `\ No newline at end of file` where a text's last line has none. Texts whose edit distance
// exceeds `max_edits` lines are not aligned: the result then says so and where the first
// difference is, so the cost stays bounded (O((N+M) max_edits) time, O(max_edits^2) memory)
// whatever the input.
//
// Thread safety: pure functions.
#ifndef DETRAIN_EVIDENCE_DIFF_TEXT_DIFF_H_
#define DETRAIN_EVIDENCE_DIFF_TEXT_DIFF_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace detrain::diff {

inline constexpr size_t kDiffContext = 3;
inline constexpr size_t kDiffMaxEdits = 4000;

// The unified diff of `a` and `b`, labelled `name_a` and `name_b`; "" when the texts are equal.
std::string UnifiedDiff(std::string_view a, std::string_view b, std::string_view name_a,
                        std::string_view name_b, size_t context = kDiffContext,
                        size_t max_edits = kDiffMaxEdits);

struct LineDifference {
  bool same = true;
  int64_t line = 0;                       // 1-based number of the first line that differs
  int64_t column = 0;                     // 1-based byte column where that line first differs
  std::vector<std::string> context;       // up to `context` equal lines before it
  std::string line_a, line_b;             // that line in each text ("" past the end)
  bool a_ended = false, b_ended = false;  // the text has no such line
  bool newline_only = false;              // the lines are equal; one text lacks the final '\n'
};

// The first line where `a` and `b` differ, lines shown up to `width` bytes: a longer line is
// shown as a window that starts a quarter of `width` before the first differing column, with
// "..." where it is cut; bytes that are not printable ASCII or UTF-8 are shown as '?'.
LineDifference FirstLineDifference(std::string_view a, std::string_view b,
                                   size_t context = kDiffContext, size_t width = 240);

// Splits text into lines without their '\n' (a last line without one is kept; "" has none).
std::vector<std::string_view> SplitLines(std::string_view text);

// `s` cut to `width` bytes at a character boundary ("..." appended when cut), with control
// bytes and invalid UTF-8 shown as '?', so that it can be printed and put in JSON.
std::string Printable(std::string_view s, size_t width);

// Printable applied to each line of `text`, the line breaks kept; at most `width` bytes in all.
std::string PrintableLines(std::string_view text, size_t width);

}  // namespace detrain::diff

#endif  // DETRAIN_EVIDENCE_DIFF_TEXT_DIFF_H_
