// See html.h.
#include "evidence/report/html.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace detrain::report::html {

std::string Esc(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string Num(double v) {
  if (!std::isfinite(v)) return std::isnan(v) ? "NaN" : (v > 0 ? "inf" : "-inf");
  char b[32];
  std::snprintf(b, sizeof(b), "%.6g", v);
  return b;
}

std::string Coord(double v) {
  char b[32];
  std::snprintf(b, sizeof(b), "%.1f", v);
  return b;
}

std::string Grouped(int64_t v) {  // 1234567 -> "1,234,567"
  std::string s = std::to_string(v < 0 ? -v : v), out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (i > 0 && (s.size() - i) % 3 == 0) out += ',';
    out += s[i];
  }
  return v < 0 ? "-" + out : out;
}

std::string Plot(const std::string& id, const std::string& title, const std::string& y_label,
                 const std::vector<Series>& series) {
  constexpr double W = 720, H = 280, L = 78, R = 16, T = 28, B = 44;
  double x0 = INFINITY, x1 = -INFINITY, y0 = INFINITY, y1 = -INFINITY;
  size_t count = 0;
  for (const Series& s : series) {
    for (const auto& [x, y] : s.points) {
      if (!std::isfinite(x) || !std::isfinite(y)) continue;
      x0 = std::min(x0, x), x1 = std::max(x1, x), y0 = std::min(y0, y), y1 = std::max(y1, y);
      ++count;
    }
  }
  std::string o = "<figure id=\"" + id + "\"><figcaption>" + Esc(title) + "</figcaption>";
  if (count == 0) return o + "<p class=\"muted\">no values recorded</p></figure>";
  if (!(x1 > x0)) x0 -= 1, x1 += 1;
  if (!(y1 > y0)) {
    const double pad = std::max(std::fabs(y0) * 0.05, 1e-6);
    y0 -= pad, y1 += pad;
  }
  auto px = [&](double x) { return L + (x - x0) / (x1 - x0) * (W - L - R); };
  auto py = [&](double y) { return H - B - (y - y0) / (y1 - y0) * (H - T - B); };
  o += "<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 720 280\" width=\"720\" "
       "height=\"280\" role=\"img\" aria-label=\"" +
       Esc(title) + "\">";
  o += "<rect x=\"" + Coord(L) + "\" y=\"" + Coord(T) + "\" width=\"" + Coord(W - L - R) +
       "\" height=\"" + Coord(H - T - B) + "\" class=\"plotarea\"/>";
  for (int i = 0; i <= 4; ++i) {
    const double y = y0 + (y1 - y0) * i / 4, x = x0 + (x1 - x0) * i / 4;
    o += "<line x1=\"" + Coord(L) + "\" x2=\"" + Coord(W - R) + "\" y1=\"" + Coord(py(y)) +
         "\" y2=\"" + Coord(py(y)) + "\" class=\"grid\"/>";
    o += "<text x=\"" + Coord(L - 6) + "\" y=\"" + Coord(py(y) + 4) +
         "\" text-anchor=\"end\" class=\"tick\">" + Num(y) + "</text>";
    o += "<text x=\"" + Coord(px(x)) + "\" y=\"" + Coord(H - B + 16) +
         "\" text-anchor=\"middle\" class=\"tick\">" + Num(std::round(x)) + "</text>";
  }
  o += "<text x=\"" + Coord((L + W - R) / 2) + "\" y=\"" + Coord(H - 6) +
       "\" text-anchor=\"middle\" class=\"axis\">step</text>";
  o += "<text x=\"14\" y=\"" + Coord((T + H - B) / 2) +
       "\" text-anchor=\"middle\" "
       "class=\"axis\" transform=\"rotate(-90 14 " +
       Coord((T + H - B) / 2) + ")\">" + Esc(y_label) + "</text>";
  double legend_x = L + 8;
  for (const Series& s : series) {
    std::string pts;
    for (const auto& [x, y] : s.points) {
      if (!std::isfinite(x) || !std::isfinite(y)) continue;
      pts += (pts.empty() ? "" : " ") + Coord(px(x)) + "," + Coord(py(y));
      if (s.markers) {
        o += "<circle cx=\"" + Coord(px(x)) + "\" cy=\"" + Coord(py(y)) + "\" r=\"3\" fill=\"" +
             s.color + "\"><title>step " + Num(x) + ": " + Num(y) + "</title></circle>";
      }
    }
    o += "<polyline fill=\"none\" stroke=\"" + s.color + "\" stroke-width=\"1.5\" points=\"" + pts +
         "\"/>";
    o += "<text x=\"" + Coord(legend_x) + "\" y=\"" + Coord(T - 10) + "\" fill=\"" + s.color +
         "\" class=\"legend\">" + Esc(s.name) + "</text>";
    legend_x += 12 + 7.0 * static_cast<double>(s.name.size());
  }
  o += "</svg>";
  // The last value of each series, readable without hovering.
  o += "<p class=\"muted\">";
  for (const Series& s : series) {
    if (s.points.empty()) continue;
    o += Esc(s.name) + " at step " + Num(s.points.back().first) + ": <b>" +
         Num(s.points.back().second) + "</b>; ";
  }
  return o + "</p></figure>";
}

std::string Row(const std::string& key, const std::string& value_html, const std::string& id) {
  return "<tr><th>" + Esc(key) + "</th><td" + (id.empty() ? "" : " id=\"" + id + "\"") + ">" +
         value_html + "</td></tr>";
}

std::string Code(const std::string& s) { return "<code>" + Esc(s) + "</code>"; }

std::string Css() {
  return "body{font:14px/1.45 system-ui,-apple-system,'Segoe UI',sans-serif;margin:0;color:#1b1f24;"
         "background:#fff}main{max-width:1100px;margin:0 auto;padding:16px 24px}"
         "h1{font-size:22px;margin:8px 0}h2{font-size:18px;margin:28px 0 8px;border-bottom:1px "
         "solid #d0d7de;padding-bottom:4px}table{border-collapse:collapse;width:100%}"
         "th,td{border:1px solid #d0d7de;padding:4px 8px;text-align:left;vertical-align:top}"
         "th{background:#f6f8fa;font-weight:600;width:22%}code,pre{font:12px/1.35 ui-monospace,"
         "'DejaVu Sans Mono',monospace;word-break:break-all}pre{background:#f6f8fa;padding:8px;"
         "overflow:auto;max-height:480px;white-space:pre-wrap}.banner{padding:14px 18px;"
         "border-radius:6px;margin:12px 0;font-size:16px}.banner b{font-size:20px}"
         ".verified{background:#dafbe1;border:2px solid #1a7f37}.failed{background:#ffebe9;"
         "border:3px solid #cf222e}.not-verified{background:#fff8c5;border:2px solid #9a6700}"
         ".incomplete{background:#ffebe9;border:3px solid #bc4c00}.muted{color:#57606a}"
         "figure{margin:12px 0}figcaption{font-weight:600}.plotarea{fill:#fff;stroke:#8c959f}"
         ".grid{stroke:#eaeef2}.tick{font-size:11px;fill:#57606a}.axis{font-size:12px;"
         "fill:#1b1f24}.legend{font-size:12px}ul.tree{list-style:none;padding-left:18px;"
         "margin:0}ul.tree li{margin:1px 0}details{margin:4px 0}summary{cursor:pointer}"
         ".ok{color:#1a7f37;font-weight:600}.bad{color:#cf222e;font-weight:600}";
}

std::string PageStart(const std::string& title, const std::string& extra_css) {
  return "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
         "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; "
         "style-src 'unsafe-inline'; img-src data:\">"
         "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
         "<meta name=\"generator\" content=\"detrain\"><title>" +
         Esc(title) + "</title><style>" + Css() + extra_css + "</style></head><body><main>";
}

}  // namespace detrain::report::html
