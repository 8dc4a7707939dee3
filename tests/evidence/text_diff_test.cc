// The line comparison under `detrain diff` (evidence/diff/text_diff.h): unified diffs compared
// with GNU diff's output for the same inputs (`diff -u --label A --label B`, diffutils 3.8), and
// a round trip — applying the printed hunks to A gives B — over random edits.
#include "evidence/diff/text_diff.h"

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

namespace detrain::diff {
namespace {

TEST(UnifiedDiff, EqualTextsGiveNothing) {
  EXPECT_EQ(UnifiedDiff("a\nb\n", "a\nb\n", "A", "B"), "");
  EXPECT_EQ(UnifiedDiff("", "", "A", "B"), "");
}

TEST(UnifiedDiff, MatchesGnuDiffOnAChangeAndAnOpenLastLine) {
  const std::string a = "a\nb\nc\nd\ne\nf\ng\nh\ni\nj\nk\nl\nm\n";
  const std::string b = "a\nb\nX\nd\ne\nf\ng\nh\ni\nj\nk\nl\nm\nn";
  EXPECT_EQ(UnifiedDiff(a, b, "A", "B"),
            "--- A\n+++ B\n@@ -1,6 +1,6 @@\n a\n b\n-c\n+X\n d\n e\n f\n@@ -11,3 +11,4 @@\n k\n"
            " l\n m\n+n\n\\ No newline at end of file\n");
}

TEST(UnifiedDiff, MatchesGnuDiffOnInsertions) {
  EXPECT_EQ(UnifiedDiff("one\ntwo\n", "zero\none\ntwo\nthree\n", "A", "B"),
            "--- A\n+++ B\n@@ -1,2 +1,4 @@\n+zero\n one\n two\n+three\n");
  EXPECT_EQ(UnifiedDiff("", "one\ntwo\n", "A", "B"), "--- A\n+++ B\n@@ -0,0 +1,2 @@\n+one\n+two\n");
}

TEST(UnifiedDiff, OnlyTheFinalNewlineDiffers) {
  EXPECT_EQ(UnifiedDiff("x\n", "x", "A", "B"),
            "--- A\n+++ B\n@@ -1 +1 @@\n-x\n+x\n\\ No newline at end of file\n");
}

// Applies a unified diff's hunks to `a` (the test's own reader of the format).
std::string Apply(const std::string& a, const std::string& diff) {
  std::vector<std::string_view> in = SplitLines(a);
  std::vector<std::string_view> lines = SplitLines(diff);
  std::string out;
  size_t next = 0;  // the next line of a not yet copied
  bool open = false;
  for (size_t i = 2; i < lines.size(); ++i) {
    std::string_view l = lines[i];
    if (l.substr(0, 2) == "@@") {
      size_t start = std::stoul(std::string(l.substr(4)));
      size_t comma = l.find(',', 4), space = l.find(' ', 4);
      size_t count = comma != std::string_view::npos && comma < space
                         ? std::stoul(std::string(l.substr(comma + 1)))
                         : 1;
      size_t first = count == 0 ? start : start - 1;
      while (next < first) out += std::string(in[next++]) + "\n";
      continue;
    }
    if (l.substr(0, 1) == "\\") {
      open = true;
      continue;
    }
    if (open) out.pop_back(), open = false;
    if (l[0] == ' ' || l[0] == '-') {
      EXPECT_EQ(in.at(next), l.substr(1));
      ++next;
    }
    if (l[0] == ' ' || l[0] == '+') out += std::string(l.substr(1)) + "\n";
  }
  if (open) out.pop_back(), open = false;
  while (next < in.size()) out += std::string(in[next++]) + "\n";
  // A copied last line keeps a's ending.
  if (!a.empty() && a.back() != '\n' && !out.empty() && out.back() == '\n' &&
      diff.find("No newline") == std::string::npos) {
    out.pop_back();
  }
  return out;
}

TEST(UnifiedDiff, RandomEditsRoundTrip) {
  std::mt19937 rng(12345);
  for (int trial = 0; trial < 300; ++trial) {
    std::vector<std::string> a;
    const int n = static_cast<int>(rng() % 40);
    for (int i = 0; i < n; ++i) a.push_back("l" + std::to_string(rng() % 6));
    std::vector<std::string> b = a;
    const int edits = static_cast<int>(rng() % 6);
    for (int e = 0; e < edits; ++e) {
      const size_t at = b.empty() ? 0 : rng() % (b.size() + 1);
      switch (rng() % 3) {
        case 0:
          b.insert(b.begin() + static_cast<long>(at), "new" + std::to_string(e));
          break;
        case 1:
          if (at < b.size()) b.erase(b.begin() + static_cast<long>(at));
          break;
        default:
          if (at < b.size()) b[at] = "changed" + std::to_string(e);
      }
    }
    std::string ta, tb;
    for (const std::string& l : a) ta += l + "\n";
    for (const std::string& l : b) tb += l + "\n";
    const std::string d = UnifiedDiff(ta, tb, "A", "B", static_cast<size_t>(rng() % 4));
    if (ta == tb) {
      EXPECT_EQ(d, "");
      continue;
    }
    EXPECT_EQ(Apply(ta, d), tb) << "trial " << trial << "\n" << d;
  }
}

TEST(UnifiedDiff, ManyEditsAreNotAlignedButLocated) {
  std::string a, b;
  for (int i = 0; i < 100; ++i) {
    a += "a" + std::to_string(i) + "\n";
    b += (i < 3 ? "a" : "b") + std::to_string(i) + "\n";
  }
  const std::string d = UnifiedDiff(a, b, "A", "B", 3, /*max_edits=*/20);
  EXPECT_NE(d.find("differ in more than 20 lines"), std::string::npos) << d;
  EXPECT_NE(d.find("First difference at line 4"), std::string::npos) << d;
}

TEST(FirstLineDifference, LineColumnAndContext) {
  const LineDifference d = FirstLineDifference("p\nq\nr\ns\nt1\n", "p\nq\nr\ns\nt2\n", 2);
  EXPECT_FALSE(d.same);
  EXPECT_EQ(d.line, 5);
  EXPECT_EQ(d.column, 2);
  EXPECT_EQ(d.context, (std::vector<std::string>{"r", "s"}));
  EXPECT_EQ(d.line_a, "t1");
  EXPECT_EQ(d.line_b, "t2");
  EXPECT_TRUE(FirstLineDifference("x\n", "x\n").same);
}

TEST(FirstLineDifference, OneTextEndsOrLacksTheNewline) {
  LineDifference d = FirstLineDifference("a\nb\n", "a\n");
  EXPECT_EQ(d.line, 2);
  EXPECT_TRUE(d.b_ended);
  EXPECT_FALSE(d.a_ended);
  d = FirstLineDifference("a\n", "a");
  EXPECT_TRUE(d.newline_only);
  EXPECT_EQ(d.line, 1);
}

TEST(FirstLineDifference, LongLinesShowTheDifference) {
  const std::string a = std::string(1000, 'x') + "A" + std::string(1000, 'y') + "\n";
  const std::string b = std::string(1000, 'x') + "B" + std::string(1000, 'y') + "\n";
  const LineDifference d = FirstLineDifference(a, b, 3, 80);
  EXPECT_EQ(d.column, 1001);
  EXPECT_NE(d.line_a.find('A'), std::string::npos) << d.line_a;
  EXPECT_NE(d.line_b.find('B'), std::string::npos) << d.line_b;
  EXPECT_LE(d.line_a.size(), 80u + 6);
}

TEST(Printable, ControlBytesAndInvalidUtf8) {
  EXPECT_EQ(Printable("a\x01"
                      "b\tc",
                      100),
            "a?b\tc");
  EXPECT_EQ(Printable("\xc3\xa9t\xc3\xa9", 100), "\xc3\xa9t\xc3\xa9");  // "été"
  EXPECT_EQ(Printable("\xff\xc3(\xed\xa0\x80", 100), "??(???");         // stray, short, surrogate
  EXPECT_EQ(Printable("abcdef", 3), "abc...");
  EXPECT_EQ(PrintableLines("a\x02\nb\n", 100), "a?\nb\n");
}

}  // namespace
}  // namespace detrain::diff
