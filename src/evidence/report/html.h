// Pieces of detrain's self-contained HTML pages (the audit report, report.h, and the run
// comparison, diff.h): escaping, numbers, one stylesheet and inline-SVG line plots. Nothing here
// loads a resource or runs a script; every function is a pure function of its arguments, so a
// page is the same bytes for the same input.
//
// Thread safety: pure functions.
#ifndef DETRAIN_EVIDENCE_REPORT_HTML_H_
#define DETRAIN_EVIDENCE_REPORT_HTML_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace detrain::report::html {

// Text as HTML: & < > " ' escaped.
std::string Esc(std::string_view s);
// A number with 6 significant digits ("NaN", "inf", "-inf" for the others).
std::string Num(double v);
// An SVG coordinate, one decimal.
std::string Coord(double v);
// 1234567 -> "1,234,567".
std::string Grouped(int64_t v);

struct Series {
  std::string name, color;
  std::vector<std::pair<double, double>> points;  // (step, value); non-finite points are skipped
  bool markers = false;
};

// A line plot as inline SVG in a <figure id=ID>: axes with five labelled ticks each, one polyline
// per series, and each series' last value in words below it.
std::string Plot(const std::string& id, const std::string& title, const std::string& y_label,
                 const std::vector<Series>& series);

// A table row <tr><th>KEY</th><td>VALUE_HTML</td></tr> (the cell gets id=ID when given).
std::string Row(const std::string& key, const std::string& value_html, const std::string& id = "");
// <code>escaped text</code>.
std::string Code(const std::string& s);
// The pages' one stylesheet.
std::string Css();
// A page's start, up to and including <main>: the doctype, a Content-Security-Policy that
// forbids every script and external resource, the title and the stylesheet (Css() then
// `extra_css`).
std::string PageStart(const std::string& title, const std::string& extra_css = "");

}  // namespace detrain::report::html

#endif  // DETRAIN_EVIDENCE_REPORT_HTML_H_
