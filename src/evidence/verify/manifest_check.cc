// See manifest_check.h.
#include "evidence/verify/manifest_check.h"

#include <string>

#include "driver/stage_table.h"

namespace detrain::verify {
namespace {

using nlohmann::json;

enum class T { kObject, kArray, kString, kInt, kBool, kDigest, kAny };

constexpr size_t kMaxBackendStages = 64;

bool IsHex64(const json& j) {
  if (!j.is_string()) return false;
  const std::string& s = j.get_ref<const std::string&>();
  if (s.size() != 64) return false;
  for (char c : s) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

bool Is(const json& j, T t) {
  switch (t) {
    case T::kObject:
      return j.is_object();
    case T::kArray:
      return j.is_array();
    case T::kString:
      return j.is_string();
    case T::kInt:
      return j.is_number_unsigned() || (j.is_number_integer() && j.get<int64_t>() >= 0);
    case T::kBool:
      return j.is_boolean();
    case T::kDigest:
      return IsHex64(j);
    case T::kAny:
      return true;
  }
  return false;
}

const char* Name(T t) {
  switch (t) {
    case T::kObject:
      return "an object";
    case T::kArray:
      return "an array";
    case T::kString:
      return "a string";
    case T::kInt:
      return "a non-negative integer";
    case T::kBool:
      return "true or false";
    case T::kDigest:
      return "64 lowercase hex digits";
    case T::kAny:
      return "a value";
  }
  return "?";
}

struct Field {
  const char* path;  // dot-separated
  T type;
};

Status CheckFields(const json& root, const std::string& file, std::initializer_list<Field> fields) {
  for (const Field& f : fields) {
    const json* j = &root;
    std::string path = f.path;
    size_t start = 0;
    while (true) {
      size_t dot = path.find('.', start);
      std::string key =
          path.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
      if (!j->is_object() || !j->contains(key)) {
        return DataLoss(file + ": missing field \"" + path + "\"");
      }
      j = &(*j)[key];
      if (dot == std::string::npos) break;
      start = dot + 1;
    }
    if (!Is(*j, f.type)) {
      return DataLoss(file + ": field \"" + path + "\": expected " + Name(f.type));
    }
  }
  return Status::Ok();
}

// "executables": {"cuda": [stage record, ...]} — the fields driver::StageRecordJson writes that
// the verifier reads, and a bounded count (a backend's executable is a handful of stages).
Status CheckExecutables(const json& e) {
  if (!e.is_object()) return DataLoss("manifest.json: field \"executables\": expected an object");
  for (auto it = e.begin(); it != e.end(); ++it) {
    if (it.key() != driver::kBackendCuda) {
      return DataLoss("manifest.json: field \"executables." + it.key() +
                      "\": not a backend this detrain knows (cuda)");
    }
  }
  if (!e.contains(driver::kBackendCuda)) {
    return DataLoss("manifest.json: field \"executables\": expected \"cuda\"");
  }
  const json& cuda = e[driver::kBackendCuda];
  if (!cuda.is_array() || cuda.empty() || cuda.size() > kMaxBackendStages) {
    return DataLoss("manifest.json: field \"executables.cuda\": expected an array of 1 to " +
                    std::to_string(kMaxBackendStages) + " stage records");
  }
  for (size_t i = 0; i < cuda.size(); ++i) {
    DETRAIN_RETURN_IF_ERROR(CheckFields(cuda[i],
                                        "manifest.json executables.cuda[" + std::to_string(i) + "]",
                                        {{"stage", T::kString},
                                         {"number", T::kInt},
                                         {"file", T::kString},
                                         {"size", T::kInt},
                                         {"sha256", T::kDigest},
                                         {"transform", T::kObject},
                                         {"transform.name", T::kString},
                                         {"transform.options", T::kObject},
                                         {"transform.input_stage", T::kString},
                                         {"transform.input_sha256", T::kDigest}}));
  }
  return Status::Ok();
}

}  // namespace

Status CheckFormatVersion(const json& m) {
  if (!m.is_object()) return DataLoss("manifest.json: expected a JSON object");
  if (!m.contains("format") || m["format"] != "detrain.bundle") {
    return DataLoss("manifest.json: \"format\" is not \"detrain.bundle\": not a detrain bundle");
  }
  if (!m.contains("format_version") || !m["format_version"].is_number_integer()) {
    return DataLoss("manifest.json: \"format_version\" must be an integer");
  }
  const int64_t v = m["format_version"].get<int64_t>();
  if (v != 1) {
    return InvalidArgument("manifest.json: bundle format version " + std::to_string(v) +
                           "; this detrain reads format version 1 (field \"format_version\")");
  }
  return Status::Ok();
}

Status CheckManifest(const json& m) {
  DETRAIN_RETURN_IF_ERROR(CheckFields(m, "manifest.json",
                                      {{"status", T::kString},
                                       {"program", T::kObject},
                                       {"program.path", T::kString},
                                       {"program.sha256", T::kDigest},
                                       {"run", T::kObject},
                                       {"run.steps", T::kInt},
                                       {"run.checkpoint_every", T::kInt},
                                       {"run.eval_every", T::kInt},
                                       {"run.state_digest", T::kString},
                                       {"run.embed_data", T::kBool},
                                       {"run.backend", T::kString},
                                       {"config", T::kObject},
                                       {"config.params", T::kArray},
                                       {"stages", T::kArray},
                                       {"data", T::kObject},
                                       {"data.rows", T::kInt},
                                       {"steps", T::kObject},
                                       {"steps.count", T::kInt},
                                       {"steps.genesis", T::kDigest},
                                       {"steps.state_digest", T::kString},
                                       {"final", T::kObject},
                                       {"final.steps_done", T::kInt},
                                       {"final.step_hash", T::kDigest},
                                       {"final.params_root", T::kDigest},
                                       {"final.optimizer_root", T::kDigest},
                                       {"checkpoints", T::kArray},
                                       {"files", T::kArray},
                                       {"root_digest", T::kDigest}}));
  const std::string status = m["status"].get<std::string>();
  if (status != "complete" && status != "stopped") {
    return DataLoss("manifest.json: \"status\" must be \"complete\" or \"stopped\", found \"" +
                    status + "\"");
  }
  if (status == "stopped") {
    DETRAIN_RETURN_IF_ERROR(CheckFields(m, "manifest.json", {{"stop.reason", T::kString}}));
  }
  const std::string& program = m["program"]["path"].get_ref<const std::string&>();
  if (program.rfind("program/", 0) != 0 || program.find("..") != std::string::npos ||
      program.find('/', 8) != std::string::npos) {
    return DataLoss("manifest.json: \"program.path\" must name a file in program/");
  }
  for (const json& p : m["config"]["params"]) {
    DETRAIN_RETURN_IF_ERROR(
        CheckFields(p, "manifest.json config.params[]", {{"name", T::kString}}));
  }
  for (const json& s : m["stages"]) {
    DETRAIN_RETURN_IF_ERROR(
        CheckFields(s, "manifest.json stages[]", {{"stage", T::kString}, {"sha256", T::kString}}));
  }
  for (const json& f : m["files"]) {
    DETRAIN_RETURN_IF_ERROR(
        CheckFields(f, "manifest.json files[]",
                    {{"path", T::kString}, {"size", T::kInt}, {"merkle_root", T::kDigest}}));
    if (f.size() != 3) {
      return DataLoss(
          "manifest.json: a files[] entry has fields other than path, size and "
          "merkle_root");
    }
    const std::string& p = f["path"].get_ref<const std::string&>();
    if (p.empty() || p[0] == '/' || p.find("..") != std::string::npos) {
      return DataLoss("manifest.json: file path \"" + p + "\" leaves the bundle");
    }
  }
  if (m.contains("executables")) DETRAIN_RETURN_IF_ERROR(CheckExecutables(m["executables"]));
  if (m["final"]["steps_done"] != m["steps"]["count"]) {
    return DataLoss("manifest.json: final.steps_done differs from steps.count");
  }
  return Status::Ok();
}

Status CheckDataRecord(const json& d) {
  DETRAIN_RETURN_IF_ERROR(CheckFields(d, "data/data.json", {{"files", T::kArray}}));
  for (const json& f : d["files"]) {
    DETRAIN_RETURN_IF_ERROR(
        CheckFields(f, "data/data.json files[]",
                    {{"path", T::kString}, {"sha256", T::kDigest}, {"size", T::kInt}}));
    if (f.contains("embedded")) {
      if (!f["embedded"].is_string())
        return DataLoss("data/data.json: \"embedded\" must be a string");
      const std::string& e = f["embedded"].get_ref<const std::string&>();
      if (e.rfind("data/files/", 0) != 0 || e.find("..") != std::string::npos) {
        return DataLoss("data/data.json: \"embedded\" must name a file in data/files/");
      }
    }
  }
  return Status::Ok();
}

Result<Manifest> ReadManifest(json m) {
  DETRAIN_RETURN_IF_ERROR(CheckFormatVersion(m));
  DETRAIN_RETURN_IF_ERROR(CheckManifest(m));
  Manifest r;
  r.stopped = m["status"] == "stopped";
  if (r.stopped) r.stop_reason = m["stop"]["reason"].get<std::string>();
  r.program_path = m["program"]["path"].get<std::string>();
  const json& run = m["run"];
  r.run.steps = run["steps"].get<int64_t>();
  r.run.checkpoint_every = run["checkpoint_every"].get<int64_t>();
  r.run.eval_every = run["eval_every"].get<int64_t>();
  r.run.embed_data = run["embed_data"].get<bool>();
  r.run.backend = run["backend"].get<std::string>();
  r.data_rows = m["data"]["rows"].get<int64_t>();
  if (m["data"].contains("files") && m["data"]["files"].is_array()) {
    for (const json& f : m["data"]["files"]) {
      if (f.is_object() && f.contains("path") && f["path"].is_string()) {
        r.data_files.push_back(f["path"].get<std::string>());
      }
    }
  }
  r.steps.count = m["steps"]["count"].get<int64_t>();
  r.steps.genesis = m["steps"]["genesis"].get<std::string>();
  r.steps.state_digest = m["steps"]["state_digest"].get<std::string>();
  const json& fin = m["final"];
  r.final.steps_done = fin["steps_done"].get<int64_t>();
  r.final.step_hash = fin["step_hash"].get<std::string>();
  r.final.params_root = fin["params_root"].get<std::string>();
  r.final.optimizer_root = fin["optimizer_root"].get<std::string>();
  for (const json& f : m["files"]) {
    r.files.push_back({f["path"].get<std::string>(), f["size"].get<uint64_t>(),
                       f["merkle_root"].get<std::string>()});
  }
  r.root_digest = m["root_digest"].get<std::string>();
  for (const json& s : m["stages"]) {
    if (s.is_object() && s.value("stage", "") == "plan" && s.contains("transform") &&
        s["transform"].is_object() && s["transform"].contains("plan_format_version") &&
        s["transform"]["plan_format_version"].is_number_integer()) {
      r.plan_format_version = s["transform"]["plan_format_version"].get<int64_t>();
    }
    if (!s.is_object() || s.value("stage", "") != "opt-hlo" || !s.contains("transform")) continue;
    const json& t = s["transform"];
    if (t.is_object() && t.contains("options") && t["options"].is_object() &&
        t["options"].contains("pipeline") && t["options"]["pipeline"].is_string()) {
      r.pipeline = t["options"]["pipeline"].get<std::string>();
    }
  }
  r.has_executables = m.contains("executables");
  r.json = std::move(m);
  return r;
}

Result<std::vector<DataFileRecord>> ReadDataFiles(const json& d) {
  DETRAIN_RETURN_IF_ERROR(CheckDataRecord(d));
  std::vector<DataFileRecord> files;
  for (const json& f : d["files"]) {
    files.push_back({f["path"].get<std::string>(), f["sha256"].get<std::string>(),
                     f["size"].get<uint64_t>(),
                     f.contains("embedded") ? f["embedded"].get<std::string>() : ""});
  }
  return files;
}

}  // namespace detrain::verify
