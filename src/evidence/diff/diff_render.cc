// DiffText and DiffHtml (diff.h): the comparison's report for people, as text and as one
// self-contained page in the audit report's style (html.h).
#include <cmath>
#include <cstring>

#include "evidence/diff/diff.h"
#include "evidence/diff/diff_internal.h"
#include "evidence/report/html.h"
#include "evidence/report/inspect.h"

namespace detrain::diff::internal {

std::string FieldLine(const json& f) {
  if (f.contains("absent")) {
    return JsonText(f["field"]) + ": only in " + (f["absent"] == "a" ? "B" : "A") + " (" +
           JsonText(f["absent"] == "a" ? f["b"] : f["a"]) + ")";
  }
  return JsonText(f["field"]) + ": " + JsonText(f["a"]) + " -> " + JsonText(f["b"]);
}

void Finish(json* r) {
  json& j = *r;
  json diffs = json::array();
  auto add = [&](const std::string& s) { diffs.push_back(s); };
  if (!j["program"]["same"].get<bool>()) {
    const json& p = j["program"];
    std::vector<std::string> parts;
    if (p.contains("first_line") || p.contains("problem") ||
        JsonAt(p, {"a", "sha256"}) != JsonAt(p, {"b", "sha256"})) {
      parts.push_back(
          Str(p["a"]["path"]) + " differs" +
          (p.contains("first_line") ? " from line " + JsonText(p["first_line"]) : std::string()));
    }
    for (const json& f : p.value("files", json::array())) {
      if (f["same"].get<bool>()) continue;
      parts.push_back(JsonText(f["name"]) + " differs" +
                      (f.contains("first_line") ? " from line " + JsonText(f["first_line"]) : ""));
    }
    std::string line = "program: ";
    for (size_t i = 0; i < parts.size(); ++i) line += (i ? "; " : "") + parts[i];
    add(line);
  }
  for (const json& f : j["data"]["files"]) {
    if (f["same"].get<bool>()) continue;
    std::string line = "data: " + JsonText(f["path_a"]) + " differs";
    const json& c = JsonAt(f, {"content"});
    if (c.contains("differing_lines_in_common_length") && c.contains("first")) {
      line += " (" + JsonText(c["differing_lines_in_common_length"]) + " of " +
              JsonText(c["lines_a"]) + " lines differ; the first is line " +
              JsonText(c["first"]["line"]) + ")";
    } else if (c.contains("differing_elements") && c.contains("first")) {
      line += " (" + JsonText(c["differing_elements"]) + " elements differ; the first is " +
              JsonText(c["first"]["index"]) + ")";
    }
    add(line);
  }
  for (const json& f : j["data"]["record"]["fields"]) add("data record: " + FieldLine(f));
  for (const char* which : {"train", "validation"}) {
    const json& s = j["data"]["split"][which];
    if (!s["same"].get<bool>() && s.contains("differing_positions")) {
      add(std::string("split: ") + which + " index: " + JsonText(s["differing_positions"]) +
          " positions differ");
    }
  }
  for (const json& f : j["config"]["fields"]) add("config: " + FieldLine(f));
  // What the training section explains already (steps, final state, status) is not repeated.
  for (const json& f : j["manifest"]["fields"]) {
    const std::string field = JsonText(f["field"]);
    bool explained = false;
    for (const char* k : {"steps", "final", "status", "stop", "checkpoints"}) {
      const size_t n = std::strlen(k);
      explained = explained || (field.compare(0, n, k) == 0 &&
                                (field.size() == n || field[n] == '.' || field[n] == '['));
    }
    if (!explained || j["training"]["same"].get<bool>()) add("manifest.json: " + FieldLine(f));
  }
  for (const json& f : j["run"]["fields"]) add("run: " + FieldLine(f));
  for (const json& s : j["stages"]["records"]) {
    if (!s["same"].get<bool>()) {
      add("stage " + JsonText(s["stage"]) + ": differs");
    } else if (!s["record_same"].get<bool>()) {
      add("stage " + JsonText(s["stage"]) + ": the same digest from another input or transform");
    }
  }
  const json& t = j["training"];
  if (t.contains("prefix")) add("training: " + JsonText(t["prefix_text"]));
  if (!t["first_content_difference"].is_null()) {
    const json& c = t["first_content_difference"];
    std::string fl;
    for (const json& f : c["fields"]) fl += (fl.empty() ? "" : ", ") + JsonText(f);
    add("training: step " + JsonText(c["step"]) + " is the first that differs (" + fl + ")");
  } else if (!t["first_chain_difference"].is_null() && !t.contains("prefix")) {
    add("training: the chain differs from step " + JsonText(t["first_chain_difference"]) + " (" +
        JsonText(t["first_chain_reason"]) + ")");
  }
  if (t["first_content_difference"].is_null() && !t.contains("prefix") && !t["same"].get<bool>() &&
      t["first_chain_difference"].is_null()) {
    add("training: the final state or the step logs differ");
  }
  const bool identical = j["program"]["same"].get<bool>() && j["data"]["same"].get<bool>() &&
                         j["config"]["same"].get<bool>() && j["run"]["same"].get<bool>() &&
                         j["stages"]["same"].get<bool>() && t["same"].get<bool>() &&
                         j["manifest"]["same"].get<bool>();
  j["identical"] = identical && diffs.empty();
  j["verdict"] = j["identical"].get<bool>() ? "identical" : "different";
  j["differences"] = diffs;
  j["first_difference"] = diffs.empty() ? json() : diffs[0];
}

}  // namespace detrain::diff::internal

namespace detrain::diff {
namespace {

using nlohmann::json;

std::string T(const json& j) { return JsonText(j); }

bool Same(const json& section) { return section.is_object() && section.value("same", false); }

// The first content difference's values, one "name: A -> B" line each.
std::vector<std::string> StepLines(const json& c) {
  std::vector<std::string> out;
  for (const json& f : c["fields"]) {
    const std::string name = T(f);
    std::string key = name;
    if (name == "tensors") continue;
    if (name == "roots" || name == "eval") {
      key = name == "eval" ? "eval_loss" : "roots";
    }
    if (!c["a"].contains(key)) continue;
    out.push_back(name + ": " + T(c["a"][key]) + " (A), " + T(c["b"][key]) + " (B)");
  }
  if (!c["tensors"].empty()) {
    std::string names;
    for (const json& n : c["tensors"]) names += (names.empty() ? "" : ", ") + T(n);
    out.push_back("tensors that differ after the step: " + names);
  }
  if (c.contains("element")) {
    const json& e = c["element"];
    if (e.contains("problem")) {
      out.push_back("first differing tensor: " + T(e["tensor"]) + ": " + T(e["problem"]));
    } else {
      out.push_back("first differing element: " + T(e["tensor"]) + T(e["index"]) + ": " +
                    T(e["a"]) + " (A), " + T(e["b"]) + " (B); " + T(e["differing_elements"]) +
                    " of " + T(e["elements"]) +
                    " elements differ (A's state: " + T(c.value("state_source_a", json(""))) +
                    "; B's: " + T(c.value("state_source_b", json(""))) + ")");
    }
  }
  if (c.contains("batch_element") && c["batch_element"].contains("first")) {
    const json& e = c["batch_element"]["first"];
    if (e.contains("problem")) {
      out.push_back("batch: " + T(e["problem"]));
    } else {
      out.push_back("first differing batch element: " + T(e["tensor"]) + T(e["index"]) +
                    " (batch row " + T(e["batch_row"]) + ", data row " + T(e["data_row_a"]) +
                    " in A, " + T(e["data_row_b"]) + " in B): " + T(e["a"]) + " (A), " + T(e["b"]) +
                    " (B)");
    }
  }
  if (c.contains("element_note")) out.push_back(T(c["element_note"]));
  if (c.contains("batch_note")) out.push_back(T(c["batch_note"]));
  return out;
}

std::string DataContentLine(const json& c) {
  if (c.contains("problem")) return T(c["problem"]);
  const std::string kind = T(c.value("kind", json("")));
  if (kind == "lines") {
    std::string s = T(c["lines_a"]) + " and " + T(c["lines_b"]) + " lines; " +
                    T(c["differing_lines_in_common_length"]) + " of the common lines differ";
    if (c.contains("first")) {
      s += "; first at line " + T(c["first"]["line"]) + ":\n      A: " + T(c["first"]["a"]) +
           "\n      B: " + T(c["first"]["b"]);
    }
    return s;
  }
  if (kind == "npy" || c.contains("differing_elements")) {
    if (!c.value("comparable", false)) return "other dtype or shape";
    std::string s = T(c["differing_elements"]) + " of " + T(c["elements"]) + " elements differ";
    if (c.contains("first")) {
      s += "; the first is " + T(c["first"]["index"]) + ": " + T(c["first"]["a"]) + " (A), " +
           T(c["first"]["b"]) + " (B)";
    }
    return s;
  }
  if (kind == "bytes") {
    return T(c["size_a"]) + " and " + T(c["size_b"]) + " bytes; " +
           T(c["differing_bytes_in_common_length"]) + " differ" +
           (c.contains("first_offset") ? ", the first at offset " + T(c["first_offset"]) : "");
  }
  if (kind == "npz") {
    std::string s;
    for (const json& a : c["arrays"]) {
      s += (s.empty() ? "" : "; ") + T(a["array"]) + ": " +
           (a.contains("absent") ? "only in " + std::string(a["absent"] == "a" ? "B" : "A")
                                 : DataContentLine(a));
    }
    return s;
  }
  return "";
}

}  // namespace

std::string DiffText(const json& r) {
  std::string o;
  auto line = [&](const std::string& s) { o += s + "\n"; };
  line("A: " + T(r["a"]["bundle"]) + "\nB: " + T(r["b"]["bundle"]));
  line(r["identical"].get<bool>() ? "identical: the same program, data, configuration, stages, "
                                    "steps and final state"
                                  : "different; first difference: " + T(r["first_difference"]));
  line("");
  const json& p = r["program"];
  const bool spec_same = p["a"]["sha256"] == p["b"]["sha256"];
  line(std::string("program: ") + (Same(p) ? "same" : "different") + " (" + T(p["a"]["sha256"]) +
       (spec_same ? "" : " -> " + T(p["b"]["sha256"])) + ")");
  if (p.contains("diff")) o += T(p["diff"]);
  for (const json& f : p.value("files", json::array())) {
    line("  " + T(f["name"]) + ": " + (f["same"].get<bool>() ? "same" : "different") + " (" +
         T(f["sha256_a"]) + (f["same"].get<bool>() ? "" : " -> " + T(f["sha256_b"])) + ")");
    if (f.contains("diff")) o += T(f["diff"]);
  }
  if (p.contains("problem")) line("  " + T(p["problem"]));
  const json& d = r["data"];
  line(std::string("data: ") + (Same(d) ? "same" : "different"));
  for (const json& f : d["files"]) {
    line("  " + T(f["path_a"]) + ": " + (f["same"].get<bool>() ? "same" : "different") + " (" +
         T(f["sha256_a"]) + (f["same"].get<bool>() ? "" : " -> " + T(f["sha256_b"])) + ")");
    if (f.contains("content")) line("    " + DataContentLine(f["content"]));
  }
  for (const json& f : d["record"]["fields"]) {
    line("  data/data.json " + T(f["field"]) + ": " + T(f["a"]) + " -> " + T(f["b"]));
  }
  for (const char* which : {"train", "validation"}) {
    const json& s = d["split"][which];
    if (s["same"].get<bool>()) continue;
    std::string l = std::string("  split ") + which + " index: different";
    if (s.contains("differing_positions")) {
      l += ", " + T(s["differing_positions"]) + " of " + T(s["rows_a"]) + " positions differ; " +
           T(s["rows_only_in_a"]) + " rows only in A, " + T(s["rows_only_in_b"]) + " only in B";
      if (s.contains("first")) {
        l += "; first at position " + T(s["first"]["position"]) + ": row " +
             T(s["first"]["row_a"]) + " (A), " + T(s["first"]["row_b"]) + " (B)";
      }
    }
    line(l);
  }
  line("seed: " + T(r["seed"]["a"]) +
       (r["seed"]["a"] == r["seed"]["b"] ? "" : " -> " + T(r["seed"]["b"])));
  for (const char* section : {"config", "run"}) {
    const json& c = r[section];
    line(std::string(section) + ": " +
         (Same(c) ? "same" : std::to_string(c["fields"].size()) + " field(s) differ"));
    for (const json& f : c["fields"]) {
      if (f.contains("absent")) {
        line("  " + T(f["field"]) + ": only in " + (f["absent"] == "a" ? "B" : "A"));
      } else {
        line("  " + T(f["field"]) + ": " + T(f["a"]) + " -> " + T(f["b"]));
      }
    }
  }
  for (const char* section : {"stages", "executables"}) {
    if (!r.contains(section)) continue;
    const json& s = r[section];
    line(std::string(section) + ": " + (Same(s) ? "same" : "different"));
    for (const json& rec : s["records"]) {
      const bool same_record = rec.value("record_same", true);
      line("  " + T(rec["stage"]) + ": " +
           (!rec["same"].get<bool>() ? "DIFFERENT"
            : same_record            ? "same"
                          : "same digest (its record differs: another input or transform)") +
           (rec.contains("absent")
                ? " (only in " + std::string(rec["absent"] == "a" ? "B" : "A") + ")"
                : ""));
    }
    const json& f = s["first"];
    if (f.is_object() && f.contains("text")) {
      const json& t = f["text"];
      if (t.contains("line")) {
        line("  first differing stage: " + T(f["stage"]) + ", " + T(t["file_a"]) + " line " +
             T(t["line"]) + " column " + T(t["column"]) +
             (t.value("newline_only", false) ? " (only the final newline)" : ""));
        for (const json& c : t["context"]) line("      " + T(c));
        line("    A " + T(t["a"]));
        line("    B " + T(t["b"]));
      } else if (t.contains("first_byte")) {
        line("  first differing stage: " + T(f["stage"]) + ", " + T(t["file_a"]) + " byte " +
             T(t["first_byte"]));
      } else if (t.contains("problem")) {
        line("  first differing stage: " + T(f["stage"]) + ": " + T(t["problem"]));
      }
    }
    for (const json& ps : s["passes"]) {
      line("  " + T(ps["stage"]) + " passes: " + T(ps["first_difference"]));
    }
  }
  const json& t = r["training"];
  line(std::string("training: ") + (Same(t) ? "same" : "different") + " (" + T(t["steps_a"]) +
       " and " + T(t["steps_b"]) + " steps)");
  if (t.contains("prefix")) line("  " + T(t["prefix_text"]));
  if (!t["first_chain_difference"].is_null()) {
    line("  first step whose chain entry differs: " + T(t["first_chain_difference"]) + " (" +
         T(t["first_chain_reason"]) + ")");
  }
  if (!t["first_content_difference"].is_null()) {
    const json& c = t["first_content_difference"];
    line("  first step that computed something else: " + T(c["step"]));
    for (const std::string& l : StepLines(c)) line("    " + l);
  }
  for (const char* k : {"problem_a", "problem_b"}) {
    if (t.contains(k)) line("  " + T(t[k]));
  }
  const json& v = r["versions"];
  line("versions: format " + T(v["format_version"]["a"]) +
       (v["format_version"]["a"] == v["format_version"]["b"]
            ? ""
            : " -> " + T(v["format_version"]["b"])) +
       ", detrain " + T(v["detrain"]["a"]) +
       (v["detrain"]["a"] == v["detrain"]["b"] ? "" : " -> " + T(v["detrain"]["b"])));
  if (!r["notes"].empty()) {
    line("not part of the claim:");
    for (const json& n : r["notes"]) line("  " + T(n));
  }
  return o;
}

namespace {

using html::Code;
using html::Esc;
using html::Row;

std::string Mark(bool same) {
  return same ? "<span class=\"ok\">same</span>" : "<span class=\"bad\">different</span>";
}

std::vector<std::pair<double, double>> Points(const json& curve) {
  std::vector<std::pair<double, double>> out;
  for (const json& p : curve) {
    if (p.is_array() && p.size() == 2 && p[0].is_number() && p[1].is_number()) {
      out.emplace_back(p[0].get<double>(), p[1].get<double>());
    }
  }
  return out;
}

std::string UnifiedHtml(const std::string& diff) {
  std::string o = "<pre class=\"diff\">";
  size_t begin = 0;
  while (begin < diff.size()) {
    size_t end = diff.find('\n', begin);
    if (end == std::string::npos) end = diff.size();
    const std::string l = diff.substr(begin, end - begin);
    const char* cls = "";
    if (l.rfind("@@", 0) == 0) {
      cls = "hunk";
    } else if (l.rfind("+++", 0) == 0 || l.rfind("---", 0) == 0) {
      cls = "head";
    } else if (!l.empty() && l[0] == '+') {
      cls = "add";
    } else if (!l.empty() && l[0] == '-') {
      cls = "del";
    }
    o += *cls ? "<span class=\"" + std::string(cls) + "\">" + Esc(l) + "</span>\n" : Esc(l) + "\n";
    begin = end + 1;
  }
  return o + "</pre>";
}

std::string FieldTable(const json& fields) {
  std::string o = "<table><tr><th>field</th><th>A</th><th>B</th></tr>";
  for (const json& f : fields) {
    o += "<tr><td>" + Code(T(f["field"])) + "</td><td>" +
         (f.value("absent", "") == "a" ? "<i>absent</i>" : Code(T(f["a"]))) + "</td><td>" +
         (f.value("absent", "") == "b" ? "<i>absent</i>" : Code(T(f["b"]))) + "</td></tr>";
  }
  return o + "</table>";
}

}  // namespace

std::string DiffHtml(const json& r) {
  const bool identical = r["identical"].get<bool>();
  std::string o = html::PageStart(
      "detrain diff: " + T(r["a"]["bundle"]) + " vs " + T(r["b"]["bundle"]),
      ".diff .add{color:#1a7f37;background:#e6ffec}.diff .del{color:#cf222e;background:#ffebe9}"
      ".diff .hunk{color:#8250df}.diff .head{font-weight:600}td li{word-break:break-all}");
  o += "<h1>Run comparison</h1>";
  o += "<div id=\"verdict\" class=\"banner " + std::string(identical ? "verified" : "failed") +
       "\" data-verdict=\"" + (identical ? "identical" : "different") + "\"><b>" +
       (identical ? "IDENTICAL" : "DIFFERENT") + "</b><br>" +
       Esc(identical ? "The same program, data, configuration, stages, steps and final state."
                     : "First difference: " + T(r["first_difference"])) +
       "</div>";
  o += "<h2>Bundles</h2><table><tr><th></th><th>A</th><th>B</th></tr>";
  for (const char* k : {"bundle", "program", "status", "steps", "final_step_hash", "root_digest"}) {
    o += "<tr><th>" + Esc(k) + "</th><td>" + Code(T(r["a"][k])) + "</td><td>" + Code(T(r["b"][k])) +
         "</td></tr>";
  }
  o += "</table>";
  if (!r["differences"].empty()) {
    o += "<h2>Differences</h2><ol id=\"differences\">";
    for (const json& d : r["differences"]) o += "<li>" + Esc(T(d)) + "</li>";
    o += "</ol>";
  }
  // Inputs.
  const json& p = r["program"];
  o += "<h2>Program</h2><table>" + Row("program", Mark(Same(p)), "program-state") +
       Row("SHA-256 A", Code(T(p["a"]["sha256"]))) + Row("SHA-256 B", Code(T(p["b"]["sha256"]))) +
       "</table>";
  if (p.contains("diff")) o += UnifiedHtml(T(p["diff"]));
  for (const json& f : p.value("files", json::array())) {
    o += "<table>" + Row(T(f["name"]), Mark(f["same"].get<bool>())) +
         Row("SHA-256 A", Code(T(f["sha256_a"]))) + Row("SHA-256 B", Code(T(f["sha256_b"]))) +
         "</table>";
    if (f.contains("diff")) o += UnifiedHtml(T(f["diff"]));
  }
  const json& d = r["data"];
  o += "<h2>Data</h2><table><tr><th>file</th><th>A</th><th>B</th><th></th></tr>";
  for (const json& f : d["files"]) {
    o += "<tr><td>" + Code(T(f["path_a"])) + "</td><td>" + Code(T(f["sha256_a"])) + "</td><td>" +
         Code(T(f["sha256_b"])) + "</td><td>" + Mark(f["same"].get<bool>()) + "</td></tr>";
    if (f.contains("content")) {
      o += "<tr><td colspan=\"4\">" + Esc(DataContentLine(f["content"])) + "</td></tr>";
    }
  }
  o += "</table>";
  if (!d["record"]["fields"].empty())
    o += "<h3>data/data.json</h3>" + FieldTable(d["record"]["fields"]);
  o += "<h2>Configuration and run</h2><table>" +
       Row("seed", Code(T(r["seed"]["a"])) +
                       (r["seed"]["a"] == r["seed"]["b"] ? "" : " → " + Code(T(r["seed"]["b"])))) +
       Row("configuration", Mark(Same(r["config"]))) + Row("run options", Mark(Same(r["run"]))) +
       "</table>";
  if (!r["config"]["fields"].empty())
    o += "<h3>Configuration</h3>" + FieldTable(r["config"]["fields"]);
  if (!r["run"]["fields"].empty()) o += "<h3>Run options</h3>" + FieldTable(r["run"]["fields"]);
  // Stages.
  for (const char* section : {"stages", "executables"}) {
    if (!r.contains(section)) continue;
    const json& s = r[section];
    o += std::string("<h2>") + (std::string(section) == "stages" ? "Stages" : "CUDA executable") +
         "</h2><table><tr><th>stage</th><th>A</th><th>B</th><th></th></tr>";
    for (const json& rec : s["records"]) {
      o += "<tr><td>" + Esc(T(rec["stage"])) + "</td><td>" + Code(T(rec["sha256_a"])) +
           "</td><td>" + Code(T(rec["sha256_b"])) + "</td><td>" + Mark(rec["same"].get<bool>()) +
           "</td></tr>";
    }
    o += "</table>";
    const json& f = s["first"];
    if (f.is_object() && f.contains("text") && f["text"].contains("line")) {
      const json& t = f["text"];
      o += "<p>First differing stage: <b>" + Esc(T(f["stage"])) + "</b>, " + Code(T(t["file_a"])) +
           " line " + Esc(T(t["line"])) + "</p><pre class=\"diff\">";
      for (const json& c : t["context"]) o += " " + Esc(T(c)) + "\n";
      o += "<span class=\"del\">-" + Esc(T(t["a"])) + "</span>\n<span class=\"add\">+" +
           Esc(T(t["b"])) + "</span>\n</pre>";
    }
    for (const json& ps : s["passes"]) {
      o += "<p>" + Esc(T(ps["stage"])) + " passes: " + Esc(T(ps["first_difference"])) + "</p>";
    }
  }
  // Training.
  const json& t = r["training"];
  o += "<h2>Training</h2><table>" +
       Row("steps", Esc(T(t["steps_a"]) + " (A), " + T(t["steps_b"]) + " (B)")) +
       Row("step records", Mark(Same(t)), "training-state");
  if (t.contains("prefix")) o += Row("prefix", Esc(T(t["prefix_text"])));
  if (!t["first_chain_difference"].is_null()) {
    o += Row("first differing chain entry", "step " + Esc(T(t["first_chain_difference"])) + ": " +
                                                Esc(T(t["first_chain_reason"])));
  }
  if (!t["first_content_difference"].is_null()) {
    const json& c = t["first_content_difference"];
    std::string lines;
    for (const std::string& l : StepLines(c)) lines += "<li>" + Esc(l) + "</li>";
    o += Row("first step that computed something else",
             "<b>step " + Esc(T(c["step"])) + "</b><ul>" + lines + "</ul>", "first-step");
  }
  o += "</table>";
  std::vector<html::Series> loss = {{"A", "#0969da", Points(t["loss_a"]), false},
                                    {"B", "#cf222e", Points(t["loss_b"]), false}};
  o += html::Plot("plot-loss", "Training loss per step", "loss", loss);
  std::vector<html::Series> eval = {{"A", "#0969da", Points(t["eval_loss_a"]), true},
                                    {"B", "#cf222e", Points(t["eval_loss_b"]), true}};
  o += html::Plot("plot-eval-loss", "Validation loss at each evaluation", "loss", eval);
  if (!r["notes"].empty()) {
    o += "<h2>Not part of the claim</h2><p class=\"muted\">How the runs were made: these change no "
         "bit of the training.</p><ul>";
    for (const json& n : r["notes"]) o += "<li>" + Esc(T(n)) + "</li>";
    o += "</ul>";
  }
  o += "<p class=\"muted\">Every figure on this page is read from the two bundles' files (and, "
       "for the first differing element, a replay of their steps); the page has no script and "
       "loads nothing (docs/diff.md).</p>";
  return o + "</main></body></html>\n";
}

}  // namespace detrain::diff
