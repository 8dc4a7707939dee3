// See claims_check.h.
#include "attest/verify/claims_check.h"

#include <algorithm>
#include <set>

#include "attest/bundle/bundle_files.h"
#include "attest/sha256.h"
#include "base/file_io.h"
#include "base/fs.h"

namespace detrain::verify {

using nlohmann::json;

std::string FirstDifference(const std::string& a, const std::string& b, bool text) {
  size_t n = std::min(a.size(), b.size());
  size_t i = 0;
  while (i < n && a[i] == b[i]) ++i;
  if (i == n && a.size() == b.size()) return "identical";
  if (!text) {
    return "first differing byte at offset " + std::to_string(i) + " (sizes " +
           std::to_string(a.size()) + " and " + std::to_string(b.size()) + ")";
  }
  size_t line = 1 + static_cast<size_t>(
                        std::count(a.begin(), a.begin() + static_cast<std::ptrdiff_t>(i), '\n'));
  auto line_at = [&](const std::string& s) {
    size_t begin = s.rfind('\n', i == 0 ? 0 : i - 1);
    begin = (begin == std::string::npos || i == 0) ? 0 : begin + 1;
    size_t end = s.find('\n', begin);
    std::string l = s.substr(begin, end == std::string::npos ? std::string::npos : end - begin);
    if (l.size() > 160) l = l.substr(0, 160) + "...";
    return l;
  };
  return "first difference on line " + std::to_string(line) + ":\n    bundle:     " + line_at(a) +
         "\n    recompiled: " + line_at(b);
}

std::string JsonDifference(const json& recorded, const json& expected, const std::string& path) {
  if (recorded == expected) return "";
  auto at = [&](const std::string& key) { return path.empty() ? key : path + "." + key; };
  if (recorded.is_object() && expected.is_object()) {
    std::set<std::string> keys;
    for (auto it = recorded.begin(); it != recorded.end(); ++it) keys.insert(it.key());
    for (auto it = expected.begin(); it != expected.end(); ++it) keys.insert(it.key());
    for (const std::string& k : keys) {
      if (!recorded.contains(k)) return "\"" + at(k) + "\" is missing";
      if (!expected.contains(k)) return "\"" + at(k) + "\" is not a field of this format";
      std::string d = JsonDifference(recorded[k], expected[k], at(k));
      if (!d.empty()) return d;
    }
  }
  if (recorded.is_array() && expected.is_array() && recorded.size() == expected.size()) {
    for (size_t i = 0; i < recorded.size(); ++i) {
      std::string d =
          JsonDifference(recorded[i], expected[i], path + "[" + std::to_string(i) + "]");
      if (!d.empty()) return d;
    }
  }
  auto text = [](const json& j) {
    std::string t = j.dump(-1, ' ', false, json::error_handler_t::replace);
    return t.size() > 160 ? t.substr(0, 160) + "..." : t;
  };
  return "\"" + path + "\": recorded " + text(recorded) + ", expected " + text(expected);
}

Status CheckRebuiltFiles(const RebuiltRun& run) {
  const json& m = *run.manifest;
  const std::vector<bundle::StepRecord>& records = run.steps->records;
  bundle::RunOptions options;
  options.program = m["program"]["path"].get<std::string>();
  options.embed_data = m["run"]["embed_data"].get<bool>();
  bundle::BundleStatics s;
  s.options = &options;
  s.compiled = run.compiled;
  s.data = run.data;
  s.schedule = run.schedule;
  s.data_files = run.data_files;
  Result<std::vector<std::pair<std::string, std::string>>> statics = bundle::StaticFiles(s);
  if (!statics.ok()) {
    return DataLoss("rebuilding the bundle's files: " + std::string(statics.status().message()));
  }
  std::set<std::string> want = {bundle::kSteps, bundle::kLineage};
  for (const auto& [rel, bytes] : *statics) want.insert(rel);
  for (int64_t t = 0; t < static_cast<int64_t>(records.size()); ++t) {
    if (run.schedule->Checkpoints(t)) want.insert(bundle::CheckpointPath(t + 1));
  }
  std::set<std::string> listed;
  for (const json& f : m["files"]) listed.insert(f["path"].get<std::string>());
  for (const std::string& p : listed) {
    if (want.count(p) == 0)
      return DataLoss("manifest.json lists " + p + ", not a file of this run");
  }
  for (const std::string& p : want) {
    if (listed.count(p) == 0) {
      return DataLoss("manifest.json does not list " + p + ", which a bundle of this run holds");
    }
  }
  for (const auto& [rel, bytes] : *statics) {
    if (rel == bundle::kEnvironment) continue;  // recorded, not claimed (DESIGN.md §5)
    Result<std::string> have = ReadFile(JoinPath(run.dir, rel));
    if (!have.ok()) return have.status();
    if (*have != bytes) {
      const bool binary = rel.ends_with(".pb") || rel.ends_with(".safetensors");
      return DataLoss(rel + " differs from what recompiling the program gives; " +
                      FirstDifference(*have, bytes, !binary));
    }
  }
  bundle::FinalState fin;
  fin.steps_done = static_cast<int64_t>(records.size());
  fin.step_hash = records.empty() ? run.steps->genesis : records.back().hash;
  fin.genesis = run.steps->genesis;
  attest::ParseDigestHex(m["final"]["params_root"].get<std::string>(), &fin.params_root);
  attest::ParseDigestHex(m["final"]["optimizer_root"].get<std::string>(), &fin.optimizer_root);
  fin.stopped = m["status"] == "stopped";
  if (fin.stopped) fin.stop_reason = m["stop"]["reason"].get<std::string>();
  json recorded = m;
  recorded.erase("root_digest");
  std::string diff = JsonDifference(recorded, bundle::ManifestJson(s, fin, m["files"]));
  if (!diff.empty()) return DataLoss("manifest.json: " + diff);
  return Status::Ok();
}

}  // namespace detrain::verify
