// See report.h.
#include "evidence/report/report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <set>

#include "attest/canonical_json.h"
#include "attest/prng/lineage.h"
#include "base/file_io.h"
#include "base/fs.h"
#include "base/safetensors.h"
#include "evidence/bundle/bundle_format.h"
#include "evidence/bundle/bundle_reader.h"
#include "evidence/report/html.h"
#include "evidence/report/inspect.h"
#include "evidence/sign/attestations.h"

namespace detrain::report {
namespace {

using html::Code;
using html::Coord;
using html::Esc;
using html::Grouped;
using html::Num;
using html::Plot;
using html::Row;
using html::Series;
using nlohmann::json;

// ---- the sections' data ----------------------------------------------------------------------

// The split's row ids: disjoint, within [0, rows), and together every row.
json SplitCheck(const std::string& dir, int64_t rows) {
  Result<std::string> bytes =
      bundle::ReadBundleFile(dir, bundle::kSplitFile, bundle::kMaxStageFileBytes);
  Result<SafetensorsFile> f =
      bytes.ok() ? ParseSafetensors(*bytes) : Result<SafetensorsFile>(bytes.status());
  if (!f.ok()) return {{"checked", false}, {"problem", std::string(f.status().message())}};
  auto ids = [&](const char* name, std::vector<int64_t>* out) -> std::string {
    for (const SafeTensor& t : f->tensors) {
      if (t.name != name) continue;
      const int size = SafetensorsItemSize(t.dtype);
      if (t.dtype != "I32" && t.dtype != "U32" && t.dtype != "I64") return "unexpected dtype";
      for (size_t i = 0; i + static_cast<size_t>(size) <= t.data.size(); i += size) {
        int64_t v = 0;
        if (size == 4) {
          int32_t x;
          std::memcpy(&x, t.data.data() + i, 4);
          v = t.dtype == "U32" ? static_cast<int64_t>(static_cast<uint32_t>(x)) : x;
        } else {
          std::memcpy(&v, t.data.data() + i, 8);
        }
        out->push_back(v);
      }
      return "";
    }
    return std::string("no tensor ") + name;
  };
  std::vector<int64_t> train, validation;
  std::string why = ids("train_index", &train);
  if (why.empty()) why = ids("validation_index", &validation);
  if (!why.empty()) return {{"checked", false}, {"problem", bundle::kSplitFile + (": " + why)}};
  std::vector<char> seen(static_cast<size_t>(std::max<int64_t>(rows, 0)), 0);
  bool in_range = true, disjoint = true;
  for (const auto* set : {&train, &validation}) {
    for (int64_t v : *set) {
      if (v < 0 || v >= rows) {
        in_range = false;
        continue;
      }
      if (seen[static_cast<size_t>(v)]) disjoint = false;
      seen[static_cast<size_t>(v)] = 1;
    }
  }
  const bool complete =
      in_range && std::all_of(seen.begin(), seen.end(), [](char c) { return c != 0; });
  return {{"checked", true},
          {"rows", rows},
          {"train_rows", train.size()},
          {"validation_rows", validation.size()},
          {"disjoint", disjoint && in_range},
          {"complete", complete}};
}

bool IsTextStage(const std::string& file) {
  for (const char* ext : {".dt", ".hlo", ".txt", ".json", ".cu", ".ptx"}) {
    const size_t n = std::strlen(ext);
    if (file.size() > n && file.compare(file.size() - n, n, ext) == 0) return true;
  }
  return false;
}

json StageEntry(const std::string& dir, const json& record, const char* chain) {
  const std::string file = JsonText(JsonAt(record, {"file"}));
  json e = {{"chain", chain},
            {"number", JsonAt(record, {"number"})},
            {"stage", JsonAt(record, {"stage"})},
            {"file", std::string(bundle::kStagesDir) + "/" + file},
            {"size", JsonAt(record, {"size"})},
            {"sha256", JsonAt(record, {"sha256"})},
            {"transform", JsonAt(record, {"transform"})}};
  if (!IsTextStage(file) || file.find('/') != std::string::npos) {
    e["shown"] = "binary";
    return e;
  }
  Result<std::string> bytes = bundle::ReadBundleFile(
      dir, std::string(bundle::kStagesDir) + "/" + file, bundle::kMaxStageFileBytes);
  if (!bytes.ok()) {
    e["shown"] = "missing";
    return e;
  }
  std::string text = bytes->substr(0, kReportStageTextBytes);
  // Cut at a character boundary.
  for (int back = 0; back < 4 && !attest::IsValidUtf8(text); ++back) text.pop_back();
  if (!attest::IsValidUtf8(text)) {
    e["shown"] = "binary";
    return e;
  }
  e["shown"] = text.size() == bytes->size() ? "all" : "part";
  e["shown_bytes"] = text.size();
  e["text"] = std::move(text);
  return e;
}

json StageChain(const std::string& dir, const json& manifest) {
  json out = json::array();
  for (const json& r : JsonAt(manifest, {"stages"})) out.push_back(StageEntry(dir, r, "train"));
  for (const json& r : JsonAt(manifest, {"executables", "cuda"})) {
    out.push_back(StageEntry(dir, r, "cuda"));
  }
  return out;
}

// The purpose's kind for grouping: its words without the numbers ("dropout layer step shard").
std::string Kind(const std::string& purpose) {
  std::string kind;
  size_t pos = 0;
  while (pos <= purpose.size()) {
    size_t end = purpose.find(' ', pos);
    if (end == std::string::npos) end = purpose.size();
    std::string word = purpose.substr(pos, end - pos);
    const bool number = !word.empty() && std::all_of(word.begin(), word.end(),
                                                     [](char c) { return c >= '0' && c <= '9'; });
    if (!number && !word.empty()) kind += (kind.empty() ? "" : " ") + word;
    if (kind == "init") return kind + " " + purpose.substr(std::min(purpose.size(), pos + 5));
    pos = end + 1;
  }
  return kind;
}

json LineageSection(const std::string& dir) {
  Result<std::string> text =
      bundle::ReadBundleFile(dir, bundle::kLineage, bundle::kMaxLogFileBytes);
  if (!text.ok()) return {{"problem", std::string(text.status().message())}};
  Result<prng::KeyLineage> l = prng::KeyLineage::FromJsonl(*text);
  if (!l.ok()) return {{"problem", std::string(l.status().message())}};
  std::map<uint64_t, std::vector<std::string>> purposes;
  std::map<std::string, int64_t> kinds;
  for (const prng::KeyUse& u : l->uses()) {
    purposes[u.key_id].push_back(u.purpose);
    ++kinds[Kind(u.purpose)];
  }
  json by_kind = json::array();
  for (const auto& [k, n] : kinds) by_kind.push_back({{"kind", k}, {"uses", n}});
  json nodes = json::array();
  for (const prng::LineageNode& n : l->nodes()) {
    if (nodes.size() >= kReportLineageNodes) break;
    json p = json::array();
    if (auto it = purposes.find(n.id); it != purposes.end()) {
      for (const std::string& s : it->second) p.push_back(s);
    }
    nodes.push_back({{"id", n.id},
                     {"parent", n.parent.has_value() ? json(*n.parent) : json(nullptr)},
                     {"op", std::string(prng::LineageOpName(n.op))},
                     {"argument", n.argument},
                     {"key", {n.key.hi, n.key.lo}},
                     {"purposes", std::move(p)}});
  }
  return {{"mode", std::string(prng::ModeName(l->mode()))},
          {"nodes", l->nodes().size()},
          {"uses", l->uses().size()},
          {"by_purpose", std::move(by_kind)},
          {"tree", std::move(nodes)}};
}

// The model's parameters: a .dt program's from its configuration; an imported step's (a run
// spec) from its initial state, stages/02.init.json, the tensors of role "parameter".
json Model(const std::string& dir, const json& manifest) {
  json params = json::array();
  for (const json& p : JsonAt(manifest, {"config", "params"})) {
    params.push_back({{"name", JsonAt(p, {"name"})}, {"type", JsonAt(p, {"type"})}});
  }
  const json& optimizer = JsonAt(manifest, {"config", "optimizer"});
  if (JsonAt(optimizer, {"name"}) == "in-program") {
    Result<json> init = bundle::ReadBundleJson(dir, "stages/02.init.json");
    for (const json& t : init.ok() ? JsonAt(*init, {"tensors"}) : json::array()) {
      if (JsonAt(t, {"role"}) != "parameter" || !JsonAt(t, {"shape"}).is_array()) continue;
      std::string type = JsonText(JsonAt(t, {"dtype"})) + "[";
      for (const json& d : t["shape"]) type += (type.back() == '[' ? "" : ",") + JsonText(d);
      params.push_back({{"name", JsonAt(t, {"name"})}, {"type", type + "]"}});
    }
  }
  return {{"params", params}, {"optimizer", optimizer}};
}

// The banner: what is known about verification, and from where.
json Verification(const std::string& dir, const json& summary, const ReportOptions& o) {
  if (!summary.value("complete", false)) {
    return {{"state", "incomplete"},
            {"headline", "INCOMPLETE"},
            {"message",
             "the bundle has no manifest.json: the run did not finish (run --resume "
             "continues it); nothing about it can be verified yet"}};
  }
  if (o.verification != nullptr) {
    const verify::VerifyReport& r = *o.verification;
    const bool ok = r.outcome == verify::Outcome::kVerified;
    return {{"state", ok                                          ? "verified"
                      : r.outcome == verify::Outcome::kIncomplete ? "incomplete"
                                                                  : "failed"},
            {"headline", ok ? "VERIFIED" : "VERIFICATION FAILED"},
            {"source", "detrain verify, run for this report"},
            {"message", r.message}};
  }
  json summaries = json::array();
  for (const json& a : summary.value("attestations", json::array())) {
    if (a.contains("result")) summaries.push_back(a);
  }
  if (!o.trusted_keys.empty() && !summaries.empty()) {
    sign::AttestationReport check = sign::CheckAttestations(
        dir, JsonText(summary.value("root_digest", json(""))), o.trusted_keys);
    if (!check.ok) {
      return {{"state", "failed"},
              {"headline", "SIGNATURE CHECK FAILED"},
              {"source", "attestation/ checked against the trusted keys"},
              {"message", check.message}};
    }
    // The newest signed verdict (RFC 3339 UTC times sort as text; ties: the later file).
    auto time_of = [](const sign::AttestationCheck& c) {
      const size_t at = c.detail.rfind(" at ");
      return at == std::string::npos ? std::string() : c.detail.substr(at + 4);
    };
    const sign::AttestationCheck* best = nullptr;
    for (const sign::AttestationCheck& c : check.checked) {
      if (c.predicate_type != sign::kVerificationSummary) continue;
      if (best == nullptr || time_of(c) >= time_of(*best)) best = &c;
    }
    if (best != nullptr) {
      const bool passed = best->detail.rfind("PASSED", 0) == 0;
      return {{"state", passed ? "verified" : "failed"},
              {"headline", passed ? "VERIFIED (signed summary)" : "FAILED (signed summary)"},
              {"source", best->file + ", signed by key " + best->signer},
              {"signer", best->signer},
              {"message", best->detail}};
    }
  }
  std::string message =
      "no verification was run for this report (detrain inspect --verify, or "
      "detrain verify)";
  if (!summaries.empty()) {
    message += "; " + std::to_string(summaries.size()) +
               " signed verification summary(ies) present, not checked: give --trusted-key";
  }
  return {{"state", "not-verified"}, {"headline", "NOT VERIFIED"}, {"message", message}};
}

// ---- HTML ------------------------------------------------------------------------------------

// A JSON value as compact text (strings without quotes).
std::string Flat(const json& j) { return JsonText(j); }

std::string Banner(const json& v) {
  const std::string state = JsonText(v.value("state", json("not-verified")));
  std::string o = "<div id=\"verification\" class=\"banner " + Esc(state) + "\" data-state=\"" +
                  Esc(state) + "\"><b>" + Esc(JsonText(v.value("headline", json("")))) +
                  "</b><br>" + Esc(JsonText(v.value("message", json(""))));
  if (v.contains("source"))
    o += "<br><span class=\"muted\">" + Esc(JsonText(v["source"])) + "</span>";
  return o + "</div>";
}

std::string SummarySection(const json& r) {
  std::string o = "<h2 id=\"summary\">Summary</h2><table>";
  o += Row("bundle", Code(JsonText(r.value("bundle", json("")))) +
                         (r.contains("archive_sha256")
                              ? " (archive, sha256 " + Code(JsonText(r["archive_sha256"])) + ")"
                              : ""));
  o += Row("status", Esc(JsonText(r.value("status", json("")))) +
                         (r.contains("stop") ? " — " + Esc(JsonText(r["stop"])) : ""));
  o += Row("program", Code(JsonText(JsonAt(r, {"program_record", "path"}))) + " sha256 " +
                          Code(JsonText(JsonAt(r, {"program_record", "sha256"}))) +
                          (JsonAt(r, {"program_source"}).is_string()
                               ? " <span class=\"muted\">(run from " +
                                     Esc(JsonText(r["program_source"])) + ")</span>"
                               : ""));
  std::string model;
  int64_t total = 0;
  for (const json& p : JsonAt(r, {"model", "params"})) {
    model += (model.empty() ? "" : ", ") + Code(JsonText(p["name"]) + " " + JsonText(p["type"]));
    // Element count from "f32[a,b]".
    const std::string t = JsonText(p["type"]);
    int64_t n = 1;
    size_t lb = t.find('['), pos = lb == std::string::npos ? std::string::npos : lb + 1;
    while (pos != std::string::npos && pos < t.size() && t[pos] != ']') {
      size_t end = t.find_first_of(",]", pos);
      if (end == std::string::npos) break;
      n *= std::max<int64_t>(1, std::atoll(t.substr(pos, end - pos).c_str()));
      pos = t[end] == ',' ? end + 1 : end;
    }
    total += n;
  }
  o += Row("model", Grouped(total) + " parameters: " + model);
  o += Row("optimizer", Code(Flat(JsonAt(r, {"model", "optimizer"}))));
  const json& d = JsonAt(r, {"data"});
  std::string files;
  for (const json& f : JsonAt(d, {"files"})) {
    files += Code(JsonText(f["path"])) + " sha256 <span class=\"digest\">" +
             Code(JsonText(f["sha256"])) + "</span>" +
             (f.value("embedded", false) ? " (embedded)" : "") + "<br>";
  }
  o += Row("data", files + Esc(JsonText(JsonAt(d, {"rows"}))) + " rows", "data");
  const json& split = JsonAt(r, {"split_check"});
  std::string split_html = Esc(JsonText(JsonAt(d, {"train_rows"}))) + " train, " +
                           Esc(JsonText(JsonAt(d, {"validation_rows"}))) + " validation. ";
  if (split.value("checked", false)) {
    const bool good = split.value("disjoint", false) && split.value("complete", false);
    split_html += std::string("<span class=\"") + (good ? "ok" : "bad") + "\">" +
                  (good ? "Disjoint and complete" : "NOT a disjoint, complete split") +
                  "</span>: checked for this report from " + Code(bundle::kSplitFile) + " (" +
                  Esc(JsonText(split["train_rows"])) + " + " +
                  Esc(JsonText(split["validation_rows"])) + " row ids over " +
                  Esc(JsonText(split["rows"])) + " rows, none shared).";
  } else {
    split_html +=
        "<span class=\"bad\">not checked: " + Esc(JsonText(split.value("problem", json("")))) +
        "</span>";
  }
  o += Row("split", split_html, "split");
  o += Row("seed", Esc(JsonText(JsonAt(r, {"seed"}))), "seed");
  o += Row("steps", Esc(JsonText(JsonAt(r, {"steps", "count"}))) + " recorded", "steps");
  const json& fin = JsonAt(r, {"final_metrics"});
  std::string metrics = "training loss " + Num(fin.value("loss", NAN));
  if (fin.contains("eval_loss")) {
    metrics += "; at step " + JsonText(fin["eval_step"]) + ": validation loss " +
               Num(fin["eval_loss"].get<double>());
    if (fin["eval_accuracy"].is_number()) {
      metrics += ", accuracy " + Num(fin["eval_accuracy"].get<double>());
    }
  }
  o += Row("final metrics", Esc(metrics), "final-metrics");
  o += Row("final step hash", Code(JsonText(r.value("final_step_hash", json("")))),
           "final-step-hash");
  o += Row("root digest", Code(JsonText(r.value("root_digest", json("")))), "root-digest");
  return o + "</table>";
}

std::string PlotsSection(const json& r) {
  std::string o = "<h2 id=\"plots\">Training</h2>";
  Series loss{"training loss", "#0969da", {}, false};
  for (const json& p : r.value("loss", json::array())) {
    loss.points.emplace_back(p[0].get<double>(), p[1].get<double>());
  }
  o += Plot("plot-loss", "Training loss per step", "loss", {loss});
  Series eval_loss{"validation loss", "#bc4c00", {}, true};
  Series eval_acc{"validation accuracy", "#1a7f37", {}, true};
  for (const json& e : r.value("eval", json::array())) {
    eval_loss.points.emplace_back(e[0].get<double>(), e[1].get<double>());
    if (e[2].is_number()) eval_acc.points.emplace_back(e[0].get<double>(), e[2].get<double>());
  }
  o += Plot("plot-eval-loss", "Validation loss at each evaluation", "loss", {eval_loss});
  if (!eval_acc.points.empty()) {
    o += Plot("plot-eval-accuracy", "Validation accuracy at each evaluation", "accuracy (fraction)",
              {eval_acc});
  }
  Series lr{"learning rate", "#8250df", {}, false};
  for (const json& p : r.value("learning_rate", json::array())) {
    lr.points.emplace_back(p[0].get<double>(), p[1].get<double>());
  }
  if (JsonAt(r, {"model", "optimizer", "name"}) == "in-program") {
    o += "<figure id=\"plot-learning-rate\"><figcaption>Learning-rate schedule</figcaption><p "
         "class=\"muted\">inside the imported train step (its optimizer is part of the exported "
         "HLO: schemas/run-spec.md); steps.jsonl records 0</p></figure>";
  } else {
    o += Plot("plot-learning-rate", "Learning-rate schedule", "learning rate", {lr});
  }
  return o;
}

std::string StagesSection(const json& r) {
  std::string o =
      "<h2 id=\"stages\">Stage chain</h2><p class=\"muted\">Each stage is made from the one "
      "before by the named transform; its SHA-256 is in the manifest, and <code>detrain "
      "verify</code> rebuilds stages 1–4 and compares them byte for byte — stages 3–4 when it "
      "runs the recorded pipeline and plan format (schemas/bundle.md §9).</p>";
  if (const json& b = r.value("stages_3_4", json()); b.is_object()) {
    o += b["reproduced_here"].get<bool>()
             ? "<p>This detrain reproduces stages 3–4 (pipeline " + Code(JsonText(b["pipeline"])) +
                   ", plan format " + Esc(JsonText(b["plan_format_version"])) + ").</p>"
             : "<p>This detrain does <b>not</b> reproduce stages 3–4: " +
                   Esc(JsonText(b["why_not"])) +
                   ". <code>detrain verify</code> compares stages 0–2 byte for byte and replays "
                   "every step on its own plan.</p>";
  }
  o += "<table><tr><th>stage</th><th>file, size, sha256</th><th>transform (from stage)</th></tr>";
  for (const json& s : r.value("stage_chain", json::array())) {
    const json& t = s.value("transform", json::object());
    std::string transform = Code(JsonText(JsonAt(t, {"name"})));
    if (JsonAt(t, {"input_stage"}).is_string())
      transform += " from " + Esc(JsonText(t["input_stage"]));
    const json& options = JsonAt(t, {"options"});
    if (options.is_object() && !options.empty()) transform += "<br>options " + Code(options.dump());
    o += "<tr><th>" + Esc(JsonText(s["number"])) + ". " + Esc(JsonText(s["stage"])) +
         (JsonText(s["chain"]) == "cuda" ? " (CUDA)" : "") + "</th><td>" +
         Code(JsonText(s["file"])) + ", " + Grouped(s.value("size", json(0)).get<int64_t>()) +
         " bytes<br><code class=\"digest\">" + Esc(JsonText(s["sha256"])) + "</code>";
    const std::string shown = JsonText(s.value("shown", json("")));
    if (shown == "all" || shown == "part") {
      o += "<details><summary>text" +
           (shown == "part" ? " (first " + Grouped(s["shown_bytes"].get<int64_t>()) + " of " +
                                  Grouped(s["size"].get<int64_t>()) + " bytes)"
                            : std::string()) +
           "</summary><pre>" + Esc(JsonText(s["text"])) + "</pre></details>";
    } else if (shown == "binary") {
      o += "<br><span class=\"muted\">binary; not shown</span>";
    } else {
      o += "<br><span class=\"bad\">file missing</span>";
    }
    o += "</td><td>" + transform + "</td></tr>";
  }
  return o + "</table>";
}

std::string LineageSectionHtml(const json& r) {
  const json& l = r.value("lineage_tree", json::object());
  std::string o = "<h2 id=\"lineage\">Key lineage</h2>";
  if (l.contains("problem")) return o + "<p class=\"bad\">" + Esc(JsonText(l["problem"])) + "</p>";
  o += "<p>" + Grouped(l.value("nodes", json(0)).get<int64_t>()) + " keys and " +
       Grouped(l.value("uses", json(0)).get<int64_t>()) + " uses, threefry (" +
       Esc(JsonText(l.value("mode", json("")))) + " mode), every one derived from the seed by " +
       "splits and fold-ins (<code>detrain prng</code> re-derives any of them).</p>";
  o += "<table id=\"lineage-purposes\"><tr><th>purpose</th><td><b>uses</b></td></tr>";
  for (const json& k : l.value("by_purpose", json::array())) {
    o += "<tr><th>" + Esc(JsonText(k["kind"])) + "</th><td>" + Grouped(k["uses"].get<int64_t>()) +
         "</td></tr>";
  }
  o += "</table>";
  const json& tree = l.value("tree", json::array());
  const int64_t nodes = l.value("nodes", json(0)).get<int64_t>();
  o += "<details id=\"lineage-tree\"><summary>the tree (" +
       (static_cast<int64_t>(tree.size()) < nodes
            ? "first " + Grouped(static_cast<int64_t>(tree.size())) + " of " + Grouped(nodes) +
                  " keys"
            : Grouped(nodes) + " keys") +
       ")</summary>";
  // Children lists in id order, then an iterative depth-first rendering (no recursion: a
  // lineage may be deep).
  std::map<uint64_t, std::vector<size_t>> children;
  std::vector<size_t> roots;
  std::set<uint64_t> present;
  for (const json& n : tree) present.insert(n["id"].get<uint64_t>());
  for (size_t i = 0; i < tree.size(); ++i) {
    const json& p = tree[i]["parent"];
    if (p.is_null() || present.count(p.get<uint64_t>()) == 0) {
      roots.push_back(i);
    } else {
      children[p.get<uint64_t>()].push_back(i);
    }
  }
  auto label = [&](const json& n) {
    std::string s = "<code>#" + JsonText(n["id"]) + "</code> " + Esc(JsonText(n["op"])) + "(" +
                    Esc(JsonText(n["argument"])) + ") key [" + Esc(JsonText(n["key"][0])) + ", " +
                    Esc(JsonText(n["key"][1])) + "]";
    for (const json& p : n["purposes"]) s += " <b>" + Esc(JsonText(p)) + "</b>";
    return s;
  };
  o += "<ul class=\"tree\">";
  struct Frame {
    size_t node;
    size_t next_child;
  };
  for (size_t root : roots) {
    std::vector<Frame> stack = {{root, 0}};
    o += "<li>" + label(tree[root]);
    while (!stack.empty()) {
      Frame& f = stack.back();
      const auto it = children.find(tree[f.node]["id"].get<uint64_t>());
      const size_t n = it == children.end() ? 0 : it->second.size();
      if (f.next_child == 0 && n > 0) o += "<ul class=\"tree\">";
      if (f.next_child < n) {
        const size_t child = it->second[f.next_child++];
        o += "<li>" + label(tree[child]);
        stack.push_back({child, 0});
        continue;
      }
      if (n > 0) o += "</ul>";
      o += "</li>";
      stack.pop_back();
    }
  }
  return o + "</ul></details>";
}

void FlattenRows(const std::string& prefix, const json& j, std::string* o) {
  if (j.is_object() && !j.empty()) {
    for (auto it = j.begin(); it != j.end(); ++it) {
      FlattenRows(prefix.empty() ? it.key() : prefix + "." + it.key(), it.value(), o);
    }
    return;
  }
  *o += Row(prefix, Code(JsonText(j)));
}

std::string EnvironmentSection(const json& r) {
  std::string o =
      "<h2 id=\"environment\">Environment and signatures</h2><p class=\"muted\">"
      "Recorded by the run for the auditor (environment.json): where it ran. Not "
      "part of the reproducibility claim — the same bits come out on any machine, "
      "thread count and device count.</p><table id=\"environment-table\">";
  std::string rows;
  FlattenRows("", r.value("environment", json::object()), &rows);
  o += rows + "</table>";
  o += "<h3>Attestations</h3>";
  const json& a = r.value("attestations", json::array());
  if (a.empty()) return o + "<p id=\"attestations\">None: the bundle is not signed.</p>";
  o += "<table id=\"attestations\"><tr><th>file</th><td><b>statement, signer key id</b></td>"
       "</tr>";
  for (const json& e : a) {
    std::string v = e.contains("problem")
                        ? "<span class=\"bad\">" + Esc(JsonText(e["problem"])) + "</span>"
                        : Code(JsonText(e.value("predicate_type", json("")))) + "<br>key " +
                              Code(JsonText(e.value("key", json(""))));
    if (e.contains("result"))
      v += "<br>" + Esc(JsonText(e["result"])) + " at " + Esc(JsonText(e["time"]));
    o += Row(JsonText(e.value("file", json(""))), v);
  }
  return o +
         "</table><p class=\"muted\">Signatures are checked by <code>detrain verify "
         "--trusted-key KEY.pub</code> (and, for the banner, <code>inspect --trusted-key"
         "</code>).</p>";
}

}  // namespace

Result<json> ReportJson(const std::string& dir, const ReportOptions& o) {
  DETRAIN_ASSIGN_OR_RETURN(json r, InspectBundle(dir));
  r["format"] = "detrain.report";
  r["format_version"] = 1;
  if (!o.name.empty()) r["bundle"] = o.name;
  if (!o.archive_sha256.empty()) r["archive_sha256"] = o.archive_sha256;
  Result<json> manifest = bundle::ReadBundleJson(dir, bundle::kManifest);
  const json m = manifest.ok() && manifest->is_object() ? *manifest : json::object();
  r["program_record"] = JsonAt(m, {"program"});
  if (Result<json> env = bundle::ReadBundleJson(dir, bundle::kEnvironment); env.ok()) {
    r["environment"] = *env;
    if (JsonAt(*env, {"program"}).is_string()) r["program_source"] = (*env)["program"];
  }
  r["model"] = Model(dir, m);
  r["seed"] = JsonAt(m, {"config", "train", "seed"});
  const json& rows = JsonAt(r, {"data", "rows"});
  int64_t n = 0;
  if (rows.is_string()) n = std::atoll(rows.get<std::string>().c_str());
  if (rows.is_number_integer()) n = rows.get<int64_t>();
  r["split_check"] = SplitCheck(dir, n);
  json fin = json::object();
  if (!r.value("loss", json::array()).empty()) fin["loss"] = r["loss"].back()[1];
  if (!r.value("eval", json::array()).empty()) {
    const json& e = r["eval"].back();
    fin["eval_step"] = e[0];
    fin["eval_loss"] = e[1];
    fin["eval_accuracy"] = e[2];
  }
  r["final_metrics"] = fin;
  r["stage_chain"] = StageChain(dir, m);
  r["stages_3_4"] = BackendReproduction(m);
  r["lineage_tree"] = LineageSection(dir);
  r["verification"] = Verification(dir, r, o);
  return r;
}

std::string ReportHtml(const json& r) {
  const std::string title = "detrain audit report: " + JsonText(r.value("bundle", json("")));
  std::string o = html::PageStart(title);
  o += "<h1>Audit report — " +
       Esc(JsonText(r.value("program_source", r.value("program", json(""))))) + "</h1>";
  o += Banner(r.value("verification", json::object()));
  o += SummarySection(r);
  o += PlotsSection(r);
  o += StagesSection(r);
  o += LineageSectionHtml(r);
  o += EnvironmentSection(r);
  o += "<p class=\"muted\">Every figure on this page is read from the bundle's files; the page "
       "has no script and loads nothing (schemas/bundle.md, docs/report.md).</p>";
  return o + "</main></body></html>\n";
}

}  // namespace detrain::report
