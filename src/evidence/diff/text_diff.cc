// See text_diff.h.
#include "evidence/diff/text_diff.h"

#include <algorithm>
#include <unordered_map>

namespace detrain::diff {
namespace {

// One line of the edit script: ' ' kept, '-' only in a, '+' only in b, with its 0-based index
// in a (for ' ' and '-') and in b (for ' ' and '+').
struct Edit {
  char op;
  size_t ia, ib;
};

// The length of a valid UTF-8 sequence starting at s[i], or 0.
size_t Utf8Length(std::string_view s, size_t i) {
  const auto c = static_cast<unsigned char>(s[i]);
  size_t n;
  uint32_t cp;
  if (c < 0x80) return 1;
  if (c >= 0xc2 && c <= 0xdf) {
    n = 2, cp = c & 0x1f;
  } else if (c >= 0xe0 && c <= 0xef) {
    n = 3, cp = c & 0x0f;
  } else if (c >= 0xf0 && c <= 0xf4) {
    n = 4, cp = c & 0x07;
  } else {
    return 0;
  }
  if (i + n > s.size()) return 0;
  for (size_t k = 1; k < n; ++k) {
    const auto d = static_cast<unsigned char>(s[i + k]);
    if ((d & 0xc0) != 0x80) return 0;
    cp = (cp << 6) | (d & 0x3f);
  }
  if ((n == 3 && cp < 0x800) || (n == 4 && (cp < 0x10000 || cp > 0x10ffff)) ||
      (cp >= 0xd800 && cp <= 0xdfff)) {
    return 0;
  }
  return n;
}

// Myers' greedy forward algorithm on a[0, n) and b[0, m) (ids of lines): the edit script, or
// false when more than `max_edits` insertions and deletions are needed.
bool ShortestEdit(const std::vector<uint32_t>& a, const std::vector<uint32_t>& b, size_t max_edits,
                  std::vector<Edit>* out) {
  const auto n = static_cast<int64_t>(a.size()), m = static_cast<int64_t>(b.size());
  const int64_t limit = std::min<int64_t>(n + m, static_cast<int64_t>(max_edits));
  // v[k + offset] = the furthest x on diagonal k; trace[d] = v's window [-d, d] before round d.
  const int64_t offset = limit + 1;
  std::vector<int64_t> v(static_cast<size_t>(2 * offset + 1), 0);
  std::vector<std::vector<int64_t>> trace;
  int64_t found = -1;
  for (int64_t d = 0; d <= limit && found < 0; ++d) {
    trace.emplace_back(v.begin() + (offset - d), v.begin() + (offset + d + 1));
    for (int64_t k = -d; k <= d; k += 2) {
      int64_t x;
      if (k == -d || (k != d && v[static_cast<size_t>(offset + k - 1)] <
                                    v[static_cast<size_t>(offset + k + 1)])) {
        x = v[static_cast<size_t>(offset + k + 1)];
      } else {
        x = v[static_cast<size_t>(offset + k - 1)] + 1;
      }
      int64_t y = x - k;
      while (x < n && y < m && a[static_cast<size_t>(x)] == b[static_cast<size_t>(y)]) ++x, ++y;
      v[static_cast<size_t>(offset + k)] = x;
      if (x >= n && y >= m) {
        found = d;
        break;
      }
    }
  }
  if (found < 0) return false;
  // Walk back from (n, m) through the recorded rounds.
  std::vector<Edit> rev;
  int64_t x = n, y = m;
  for (int64_t d = found; d >= 0; --d) {
    const std::vector<int64_t>& w = trace[static_cast<size_t>(d)];  // index k + d
    auto at = [&](int64_t k) { return w[static_cast<size_t>(k + d)]; };
    const int64_t k = x - y;
    int64_t prev_k;
    if (d == 0) {
      prev_k = 0;
    } else if (k == -d || (k != d && at(k - 1) < at(k + 1))) {
      prev_k = k + 1;
    } else {
      prev_k = k - 1;
    }
    const int64_t prev_x = d == 0 ? 0 : at(prev_k);
    const int64_t prev_y = prev_x - prev_k;
    while (x > prev_x && y > prev_y) {
      --x, --y;
      rev.push_back({' ', static_cast<size_t>(x), static_cast<size_t>(y)});
    }
    if (d > 0) {
      if (x == prev_x) {
        rev.push_back({'+', static_cast<size_t>(x), static_cast<size_t>(prev_y)});
      } else {
        rev.push_back({'-', static_cast<size_t>(prev_x), static_cast<size_t>(y)});
      }
    }
    x = prev_x, y = prev_y;
  }
  out->assign(rev.rbegin(), rev.rend());
  return true;
}

std::string Range(size_t start, size_t count) {  // GNU diff's "l,s" (start 1-based)
  const size_t first = count == 0 ? start : start + 1;
  return count == 1 ? std::to_string(first) : std::to_string(first) + "," + std::to_string(count);
}

}  // namespace

std::vector<std::string_view> SplitLines(std::string_view text) {
  std::vector<std::string_view> lines;
  size_t begin = 0;
  while (begin < text.size()) {
    size_t end = text.find('\n', begin);
    if (end == std::string_view::npos) end = text.size();
    lines.push_back(text.substr(begin, end - begin));
    begin = end + 1;
  }
  return lines;
}

std::string Printable(std::string_view s, size_t width) {
  std::string out;
  size_t i = 0;
  while (i < s.size()) {
    const size_t n = Utf8Length(s, i);
    if (out.size() + std::max<size_t>(n, 1) > width) return out + "...";
    const auto c = static_cast<unsigned char>(s[i]);
    if (n == 0 || (n == 1 && ((c < 0x20 && c != '\t') || c == 0x7f))) {
      out += '?';
      ++i;
    } else {
      out.append(s.substr(i, n));
      i += n;
    }
  }
  return out;
}

std::string PrintableLines(std::string_view text, size_t width) {
  std::string out;
  for (std::string_view line : SplitLines(text)) {
    if (out.size() >= width) return out + "...\n";
    out += Printable(line, width - out.size()) + "\n";
  }
  return out;
}

std::string UnifiedDiff(std::string_view a, std::string_view b, std::string_view name_a,
                        std::string_view name_b, size_t context, size_t max_edits) {
  if (a == b) return "";
  const std::vector<std::string_view> la = SplitLines(a), lb = SplitLines(b);
  const bool a_open = !a.empty() && a.back() != '\n', b_open = !b.empty() && b.back() != '\n';
  // Lines as ids; a last line without '\n' differs from the same text with one.
  std::unordered_map<std::string, uint32_t> ids;
  auto id_of = [&](std::string_view line, bool open) {
    std::string key(line);
    if (open) key += '\0';
    return ids.emplace(std::move(key), static_cast<uint32_t>(ids.size())).first->second;
  };
  std::vector<uint32_t> ia(la.size()), ib(lb.size());
  for (size_t i = 0; i < la.size(); ++i) ia[i] = id_of(la[i], a_open && i + 1 == la.size());
  for (size_t i = 0; i < lb.size(); ++i) ib[i] = id_of(lb[i], b_open && i + 1 == lb.size());
  // The common prefix and suffix need no search.
  size_t pre = 0;
  while (pre < ia.size() && pre < ib.size() && ia[pre] == ib[pre]) ++pre;
  size_t suf = 0;
  while (suf < ia.size() - pre && suf < ib.size() - pre &&
         ia[ia.size() - 1 - suf] == ib[ib.size() - 1 - suf]) {
    ++suf;
  }
  std::vector<uint32_t> ma(ia.begin() + static_cast<int64_t>(pre),
                           ia.end() - static_cast<int64_t>(suf));
  std::vector<uint32_t> mb(ib.begin() + static_cast<int64_t>(pre),
                           ib.end() - static_cast<int64_t>(suf));
  std::vector<Edit> middle;
  std::string out = "--- " + std::string(name_a) + "\n+++ " + std::string(name_b) + "\n";
  if (!ShortestEdit(ma, mb, max_edits, &middle)) {
    const LineDifference d = FirstLineDifference(a, b, 0);
    return out + "(the texts differ in more than " + std::to_string(max_edits) +
           " lines; not aligned. First difference at line " + std::to_string(d.line) + ")\n";
  }
  std::vector<Edit> script;
  script.reserve(pre + middle.size() + suf);
  for (size_t i = 0; i < pre; ++i) script.push_back({' ', i, i});
  for (const Edit& e : middle) script.push_back({e.op, e.ia + pre, e.ib + pre});
  for (size_t i = 0; i < suf; ++i) {
    script.push_back({' ', ia.size() - suf + i, ib.size() - suf + i});
  }
  // Hunks: every change with `context` kept lines around it, merged where they touch.
  size_t i = 0;
  while (i < script.size()) {
    while (i < script.size() && script[i].op == ' ') ++i;
    if (i == script.size()) break;
    size_t begin = i >= context ? i - context : 0;
    size_t end = i;  // one past the last change of the hunk
    size_t j = i;
    while (j < script.size()) {
      if (script[j].op != ' ') {
        end = j + 1;
        ++j;
        continue;
      }
      size_t run = j;
      while (run < script.size() && script[run].op == ' ') ++run;
      if (run == script.size() || run - j > 2 * context) break;
      j = run;
    }
    const size_t stop = std::min(script.size(), end + context);
    size_t a_start = 0, a_count = 0, b_start = 0, b_count = 0;
    bool a_set = false, b_set = false;
    for (size_t k = begin; k < stop; ++k) {
      const Edit& e = script[k];
      if (e.op != '+') {
        if (!a_set) a_start = e.ia, a_set = true;
        ++a_count;
      }
      if (e.op != '-') {
        if (!b_set) b_start = e.ib, b_set = true;
        ++b_count;
      }
    }
    if (!a_set) a_start = script[begin].ia;  // only insertions: the line before them
    if (!b_set) b_start = script[begin].ib;
    out += "@@ -" + Range(a_start, a_count) + " +" + Range(b_start, b_count) + " @@\n";
    for (size_t k = begin; k < stop; ++k) {
      const Edit& e = script[k];
      const bool from_a = e.op != '+';
      const std::string_view line = from_a ? la[e.ia] : lb[e.ib];
      out += e.op;
      out.append(line);
      out += '\n';
      const bool open =
          from_a ? (a_open && e.ia + 1 == la.size()) : (b_open && e.ib + 1 == lb.size());
      if (open) out += "\\ No newline at end of file\n";
      // A kept last line that is open in only one text was not matched (ids differ), so a
      // kept line is open in both or neither.
    }
    i = stop;
  }
  return out;
}

LineDifference FirstLineDifference(std::string_view a, std::string_view b, size_t context,
                                   size_t width) {
  LineDifference d;
  if (a == b) return d;
  d.same = false;
  const std::vector<std::string_view> la = SplitLines(a), lb = SplitLines(b);
  size_t i = 0;
  while (i < la.size() && i < lb.size() && la[i] == lb[i]) ++i;
  // Equal lines throughout: one text is longer, or only the final '\n' differs.
  if (i == la.size() && i == lb.size() && i > 0) {
    --i;
    d.newline_only = true;
  }
  d.line = static_cast<int64_t>(i) + 1;
  for (size_t k = i >= context ? i - context : 0; k < i; ++k)
    d.context.push_back(Printable(la[k], width));
  d.a_ended = i >= la.size();
  d.b_ended = i >= lb.size();
  const std::string_view x = d.a_ended ? std::string_view() : la[i];
  const std::string_view y = d.b_ended ? std::string_view() : lb[i];
  size_t col = 0;
  while (col < x.size() && col < y.size() && x[col] == y[col]) ++col;
  d.column = static_cast<int64_t>(col) + 1;
  // A window around the difference when the line is too long to show whole.
  const size_t from = std::max(x.size(), y.size()) > width && col > width / 4 ? col - width / 4 : 0;
  auto show = [&](std::string_view line) {
    if (from == 0) return Printable(line, width);
    return "..." + Printable(line.substr(std::min(from, line.size())), width);
  };
  if (!d.a_ended) d.line_a = show(x);
  if (!d.b_ended) d.line_b = show(y);
  return d;
}

}  // namespace detrain::diff
