// See inspect.h.
#include "evidence/report/inspect.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>

#include "attest/canonical_json.h"
#include "attest/prng/lineage.h"
#include "base/file_io.h"
#include "base/fs.h"
#include "evidence/bundle/bundle_format.h"
#include "evidence/bundle/bundle_reader.h"
#include "evidence/sign/attestations.h"
#include "evidence/verify/verifier.h"

namespace detrain::report {
namespace {

using nlohmann::json;

// The purpose's kind: "step 17 shard 3" -> "step shard", "init w1" -> "init".
std::string PurposeKind(const std::string& purpose) {
  std::string kind;
  size_t pos = 0;
  while (pos < purpose.size()) {
    size_t end = purpose.find(' ', pos);
    std::string word =
        purpose.substr(pos, end == std::string::npos ? std::string::npos : end - pos);
    bool number = !word.empty() && std::all_of(word.begin(), word.end(), ::isdigit);
    if (!number && !(kind.rfind("init", 0) == 0)) kind += (kind.empty() ? "" : " ") + word;
    if (end == std::string::npos) break;
    pos = end + 1;
  }
  return kind;
}

const json* Field(const json& j, std::initializer_list<const char*> path) {
  const json* p = &j;
  for (const char* k : path) {
    if (!p->is_object() || !p->contains(k)) return nullptr;
    p = &(*p)[k];
  }
  return p;
}

std::string Str(const json& j, std::initializer_list<const char*> path,
                const std::string& otherwise = "?") {
  const json* f = Field(j, path);
  if (f == nullptr) return otherwise;
  return f->is_string() ? f->get<std::string>() : f->dump();
}

// A CUDA run's executable (recorded apart from the chain), and where the run ran (as recorded).
void AddBackend(const std::string& dir, const Result<json>& manifest, json* out) {
  json cuda = json::array();
  if (manifest.ok()) {
    if (const json* e = Field(*manifest, {"executables", "cuda"}); e != nullptr && e->is_array()) {
      for (const json& r : *e) {
        cuda.push_back({{"stage", Str(r, {"stage"})},
                        {"file", Str(r, {"file"})},
                        {"size", Str(r, {"size"})},
                        {"sha256", Str(r, {"sha256"})}});
      }
    }
  }
  (*out)["cuda_stages"] = cuda;
  if (Result<json> env = bundle::ReadBundleJson(dir, bundle::kEnvironment); env.ok()) {
    (*out)["backend"] = Str(*env, {"backend"});
    if (const json* d = Field(*env, {"device_list"}); d != nullptr && d->is_array()) {
      json devices = json::array();
      for (const json& x : *d) devices.push_back(x.is_string() ? x.get<std::string>() : x.dump());
      (*out)["devices"] = devices;
    }
  }
}

}  // namespace

namespace {

// What attestation/ holds, as read (inspect does not check signatures: verify
// --trusted-key does): per file, its statement's predicate type and the keys it names.
json AttestationsSummary(const std::string& dir) {
  json out = json::array();
  const std::string adir = JoinPath(dir, sign::kAttestationDir);
  if (!IsDirectory(adir)) return out;  // CheckBundleTree has seen that it is no link
  Result<std::vector<std::string>> files = ListFiles(adir);
  if (!files.ok()) return json::array({{{"problem", std::string(files.status().message())}}});
  for (const std::string& f : *files) {
    json entry = {{"file", std::string(sign::kAttestationDir) + "/" + f}};
    Result<std::string> text = bundle::ReadBundleFile(
        dir, std::string(sign::kAttestationDir) + "/" + f, sign::kMaxEnvelopeBytes);
    Result<json> j = text.ok() ? attest::ParseJson(*text) : Result<json>(text.status());
    if (j.ok() && j->is_object() && j->contains("dsseEnvelope")) {
      const json& hint = (*j)["verificationMaterial"]["publicKey"]["hint"];
      if (hint.is_string()) entry["key"] = hint;
      j = json((*j)["dsseEnvelope"]);
    }
    Result<sign::Envelope> e =
        j.ok() ? sign::EnvelopeFromJson(*j) : Result<sign::Envelope>(j.status());
    Result<json> st = e.ok() ? sign::ParseStatement(e->payload) : Result<json>(e.status());
    if (!st.ok()) {
      entry["problem"] = std::string(st.status().message());
    } else {
      entry["predicate_type"] = (*st)["predicateType"];
      if (!entry.contains("key") && !e->signatures.empty()) entry["key"] = e->signatures[0].keyid;
      const json& p = st->value("predicate", json::object());
      if (p.contains("verificationResult")) {
        entry["result"] = p["verificationResult"];
        entry["time"] = p.value("timeVerified", json(""));
      }
    }
    out.push_back(std::move(entry));
  }
  return out;
}

}  // namespace

json BackendReproduction(const json& manifest) {
  const json* stages = Field(manifest, {"stages"});
  if (stages == nullptr || !stages->is_array()) return json();
  std::string pipeline;
  int64_t format = -1;
  for (const json& e : *stages) {
    if (!e.is_object()) continue;
    const json* p = Field(e, {"transform", "options", "pipeline"});
    const json* f = Field(e, {"transform", "plan_format_version"});
    if (Str(e, {"stage"}) == "opt-hlo" && p != nullptr && p->is_string()) pipeline = *p;
    if (Str(e, {"stage"}) == "plan" && f != nullptr && f->is_number_integer()) format = *f;
  }
  if (pipeline.empty()) return json();
  const std::string gap = verify::BackendGap(verify::CurrentBackend(), pipeline, format);
  return {{"pipeline", pipeline},
          {"plan_format_version", format},
          {"reproduced_here", gap.empty()},
          {"why_not", gap}};
}

Result<json> InspectBundle(const std::string& dir) {
  DETRAIN_ASSIGN_OR_RETURN(const std::vector<std::string> tree, bundle::CheckBundleTree(dir));
  json out = {{"bundle", dir}};
  Result<json> manifest = bundle::ReadBundleJson(dir, bundle::kManifest);
  const bool have_steps = bundle::BundleHasFile(dir, bundle::kSteps);
  if (!manifest.ok() && !have_steps) {
    return InvalidArgument(dir + ": not a bundle (no manifest.json and no steps.jsonl)");
  }
  out["complete"] = manifest.ok();
  if (manifest.ok() && manifest->is_object()) {
    const json& m = *manifest;
    out["status"] = Str(m, {"status"});
    out["format_version"] = Str(m, {"format_version"});
    out["program"] = Str(m, {"program", "path"});
    out["root_digest"] = Str(m, {"root_digest"});
    out["final_step_hash"] = Str(m, {"final", "step_hash"});
    if (const json* stop = Field(m, {"stop", "reason"})) out["stop"] = *stop;
  } else {
    out["status"] = "incomplete";
    if (!manifest.ok()) out["problem"] = std::string(manifest.status().message());
  }
  if (Result<json> data = bundle::ReadBundleJson(dir, bundle::kDataRecord); data.ok()) {
    json files = json::array();
    if (const json* f = Field(*data, {"files"}); f != nullptr && f->is_array()) {
      for (const json& e : *f) {
        files.push_back({{"path", Str(e, {"path"})},
                         {"sha256", Str(e, {"sha256"})},
                         {"embedded", e.is_object() && e.contains("embedded")}});
      }
    }
    out["data"] = {{"files", files},
                   {"rows", Str(*data, {"split", "rows"})},
                   {"train_rows", Str(*data, {"split", "train_rows"})},
                   {"validation_rows", Str(*data, {"split", "validation_rows"})},
                   {"batch", Str(*data, {"batching", "batch"})},
                   {"steps_per_epoch", Str(*data, {"batching", "steps_per_epoch"})},
                   {"standardize", Field(*data, {"standardize"}) != nullptr &&
                                       !Field(*data, {"standardize"})->is_null()}};
  }
  json stages = json::array();
  if (manifest.ok()) {
    if (const json* s = Field(*manifest, {"stages"}); s != nullptr && s->is_array()) {
      for (const json& e : *s)
        stages.push_back({{"stage", Str(e, {"stage"})}, {"sha256", Str(e, {"sha256"})}});
    }
  }
  out["stages"] = stages;
  out["stages_3_4"] = manifest.ok() ? BackendReproduction(*manifest) : json();
  AddBackend(dir, manifest, &out);
  if (Result<std::string> text =
          bundle::ReadBundleFile(dir, bundle::kLineage, bundle::kMaxLogFileBytes);
      text.ok()) {
    Result<prng::KeyLineage> l = prng::KeyLineage::FromJsonl(*text);
    if (l.ok()) {
      std::map<std::string, int64_t> kinds;
      for (const prng::KeyUse& u : l->uses()) ++kinds[PurposeKind(u.purpose)];
      json purposes = json::object();
      for (const auto& [k, n] : kinds) purposes[k] = n;
      out["lineage"] = {{"nodes", l->nodes().size()},
                        {"uses", l->uses().size()},
                        {"mode", prng::ModeName(l->mode())},
                        {"purposes", purposes}};
    } else {
      out["lineage"] = {{"problem", std::string(l.status().message())}};
    }
  }
  if (have_steps) {
    Result<std::string> text =
        bundle::ReadBundleFile(dir, bundle::kSteps, bundle::kMaxLogFileBytes);
    Result<bundle::ParsedSteps> steps =
        text.ok() ? bundle::ParseSteps(*text) : Result<bundle::ParsedSteps>(text.status());
    if (steps.ok()) {
      json loss = json::array(), eval = json::array(), learning_rate = json::array();
      for (const bundle::StepRecord& r : steps->records) {
        loss.push_back({r.step, bundle::FloatOfBits(r.loss_bits)});
        learning_rate.push_back({r.step, bundle::FloatOfBits(r.learning_rate_bits)});
        if (r.eval_loss_bits.has_value()) {
          json acc = r.eval_accuracy_bits.has_value()
                         ? json(bundle::FloatOfBits(*r.eval_accuracy_bits))
                         : json(nullptr);
          eval.push_back({r.step, bundle::FloatOfBits(*r.eval_loss_bits), acc});
        }
      }
      out["steps"] = {
          {"count", steps->records.size()},
          {"state_digest", bundle::DigestPolicyName(steps->policy)},
          {"genesis", bundle::Hex(steps->genesis)},
          {"last_hash", steps->records.empty() ? std::string("(none)")
                                               : bundle::Hex(steps->records.back().hash)}};
      if (!steps->error.empty()) out["steps"]["problem"] = steps->error;
      out["loss"] = loss;
      out["eval"] = eval;
      out["learning_rate"] = learning_rate;
    } else {
      out["steps"] = {{"problem", std::string(steps.status().message())}};
    }
  }
  json checkpoints = json::array();
  for (const std::string& f : tree) {
    if (std::optional<int64_t> done = bundle::CheckpointStepsOf(f)) checkpoints.push_back(*done);
  }
  out["checkpoints"] = checkpoints;
  out["attestations"] = AttestationsSummary(dir);
  return out;
}

std::string InspectText(const json& s, int width, int height) {
  std::string o;
  auto line = [&](const std::string& l) { o += l + "\n"; };
  auto str = [&](const json& j) { return j.is_string() ? j.get<std::string>() : j.dump(); };
  line("bundle      " + str(s["bundle"]) + "  (" +
       (s["complete"].get<bool>() ? "complete, status " + str(s["status"])
                                  : std::string("INCOMPLETE: no manifest.json")) +
       ")");
  if (s.contains("stop")) line("stopped     " + str(s["stop"]));
  if (s.contains("program")) line("program     " + str(s["program"]));
  if (s.contains("data")) {
    const json& d = s["data"];
    for (const json& f : d["files"]) {
      line("data        " + str(f["path"]) + "  sha256:" + str(f["sha256"]) +
           (f["embedded"].get<bool>() ? "  (embedded)" : ""));
    }
    line("split       " + str(d["rows"]) + " rows: " + str(d["train_rows"]) + " train, " +
         str(d["validation_rows"]) + " validation; batch " + str(d["batch"]) + ", " +
         str(d["steps_per_epoch"]) + " steps/epoch" +
         (d["standardize"].get<bool>() ? "; standardized" : ""));
  }
  if (s.contains("backend")) line("backend     " + str(s["backend"]) + " (environment.json)");
  for (const json& d : s.value("devices", json::array())) line("device      " + str(d));
  for (const json& st : s["stages"])
    line("stage       " + str(st["stage"]) + "  sha256:" + str(st["sha256"]));
  if (const json& b = s.value("stages_3_4", json()); b.is_object()) {
    line("stages 3-4  pipeline \"" + str(b["pipeline"]) + "\", plan format " +
         str(b["plan_format_version"]) + ": " +
         (b["reproduced_here"].get<bool>()
              ? std::string("this detrain reproduces them")
              : "this detrain does not reproduce them (" + str(b["why_not"]) +
                    "); verify replays on its own plan"));
  }
  for (const json& st : s.value("cuda_stages", json::array())) {
    line("cuda stage  " + str(st["stage"]) + "  sha256:" + str(st["sha256"]) + "  (" +
         str(st["size"]) + " bytes)");
  }
  if (s.contains("lineage")) {
    const json& l = s["lineage"];
    if (l.contains("nodes")) {
      std::string p;
      for (auto it = l["purposes"].begin(); it != l["purposes"].end(); ++it) {
        p += (p.empty() ? "" : ", ") + it.key() + " " + str(it.value());
      }
      line("lineage     " + str(l["nodes"]) + " keys, " + str(l["uses"]) + " uses (" + p + "), " +
           str(l["mode"]));
    } else {
      line("lineage     " + str(l["problem"]));
    }
  }
  if (s.contains("steps")) {
    const json& st = s["steps"];
    if (st.contains("count")) {
      line("steps       " + str(st["count"]) + " records, state digest " + str(st["state_digest"]));
      if (st.contains("problem")) line("            (stopped reading: " + str(st["problem"]) + ")");
    } else {
      line("steps       " + str(st["problem"]));
    }
  }
  std::string cps;
  for (const json& c : s["checkpoints"]) cps += (cps.empty() ? "" : ", ") + str(c);
  line("checkpoints " + (cps.empty() ? std::string("none") : "after steps " + cps));
  for (const json& e : s.value("eval", json::array())) {
    char b[128];
    if (e[2].is_null()) {
      std::snprintf(b, sizeof(b), "eval        step %lld: loss %.4f", e[0].get<long long>(),
                    e[1].get<double>());
    } else {
      std::snprintf(b, sizeof(b), "eval        step %lld: loss %.4f, accuracy %.4f",
                    e[0].get<long long>(), e[1].get<double>(), e[2].get<double>());
    }
    line(b);
  }
  // The loss curve: each column is the mean loss of its steps; rows from max (top) to min.
  const json loss = s.value("loss", json::array());
  if (!loss.empty() && width > 8 && height > 2) {
    const size_t n = loss.size();
    const int cols = static_cast<int>(std::min<size_t>(static_cast<size_t>(width), n));
    std::vector<double> v(static_cast<size_t>(cols), 0);
    for (int c = 0; c < cols; ++c) {
      size_t a = n * static_cast<size_t>(c) / static_cast<size_t>(cols);
      size_t b = n * static_cast<size_t>(c + 1) / static_cast<size_t>(cols);
      double sum = 0;
      for (size_t i = a; i < b; ++i) sum += loss[i][1].get<double>();
      v[static_cast<size_t>(c)] = sum / static_cast<double>(std::max<size_t>(1, b - a));
    }
    double lo = *std::min_element(v.begin(), v.end()), hi = *std::max_element(v.begin(), v.end());
    if (!(hi > lo)) hi = lo + 1;
    line("loss curve  (training loss per step, " + std::to_string(n) + " steps)");
    for (int r = 0; r < height; ++r) {
      double level = hi - (hi - lo) * r / (height - 1);
      char label[32];
      std::snprintf(label, sizeof(label), "%10.4f |", level);
      std::string row = label;
      for (int c = 0; c < cols; ++c) {
        int cell = static_cast<int>(
            std::lround((hi - v[static_cast<size_t>(c)]) / (hi - lo) * (height - 1)));
        row += cell == r ? '*' : ' ';
      }
      line(row);
    }
    line(std::string(11, ' ') + "+" + std::string(static_cast<size_t>(cols), '-'));
    line(std::string(12, ' ') + "step 0" +
         std::string(static_cast<size_t>(std::max(0, cols - 12)), ' ') + "step " +
         std::to_string(n - 1));
  }
  if (s.contains("final_step_hash"))
    line("final hash  " + str(s["final_step_hash"]));
  else if (s.contains("steps") && s["steps"].contains("last_hash"))
    line("last hash   " + str(s["steps"]["last_hash"]) + " (incomplete)");
  if (s.contains("root_digest")) line("root digest " + str(s["root_digest"]));
  if (s.contains("archive_sha256")) line("archive     sha256:" + str(s["archive_sha256"]));
  for (const json& a : s.value("attestations", json::array())) {
    std::string l = "attestation " + str(a.value("file", json(""))) + "  ";
    if (a.contains("problem")) {
      l += "UNREADABLE: " + str(a["problem"]);
    } else {
      l += str(a["predicate_type"]);
      if (a.contains("result")) l += "  " + str(a["result"]) + " at " + str(a["time"]);
      if (a.contains("key")) l += "  key " + str(a["key"]).substr(0, 16);
    }
    line(l);
  }
  if (s.contains("attestations") && !s["attestations"].empty()) {
    line("            (signatures not checked here: detrain verify --trusted-key KEY.pub)");
  }
  return o;
}

const json& JsonAt(const json& j, std::initializer_list<const char*> path) {
  static const json kNull;
  const json* p = &j;
  for (const char* k : path) {
    if (!p->is_object()) return kNull;
    auto it = p->find(k);
    if (it == p->end()) return kNull;
    p = &*it;
  }
  return *p;
}

std::string JsonText(const json& j) {
  if (j.is_null()) return "";
  return j.is_string() ? j.get<std::string>()
                       : j.dump(-1, ' ', false, json::error_handler_t::replace);
}

}  // namespace detrain::report
