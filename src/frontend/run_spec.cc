// See run_spec.h.
#include "frontend/run_spec.h"

#include <limits>
#include <set>

#include "attest/canonical_json.h"

namespace detrain::frontend {
namespace {

using Json = nlohmann::json;
using plan::ParamRole;

// "line L, column C" of byte `at` of `text` (1-based).
std::string LineColumn(std::string_view text, size_t at) {
  size_t line = 1, col = 1;
  for (size_t i = 0; i < at && i < text.size(); ++i) {
    if (text[i] == '\n') {
      ++line;
      col = 1;
    } else {
      ++col;
    }
  }
  return std::to_string(line) + ":" + std::to_string(col);
}

class SpecReader {
 public:
  explicit SpecReader(std::string path) : path_(std::move(path)) {}

  Status Error(const std::string& member, const std::string& what) const {
    return InvalidArgument(path_ + ": run spec: " + member + ": " + what);
  }

  Status Only(const Json& j, const std::string& where,
              std::initializer_list<std::string_view> allowed) const {
    if (!j.is_object()) return Error(where, "expected an object, found " + j.dump());
    for (const auto& [key, value] : j.items()) {
      bool known = false;
      for (std::string_view a : allowed) known = known || key == a;
      if (!known) return Error(where.empty() ? key : where + "." + key, "unexpected member");
    }
    return Status::Ok();
  }

  Result<std::string> String(const Json& j, const char* key, const std::string& where) const {
    const std::string member = where.empty() ? key : where + "." + key;
    auto it = j.find(key);
    if (it == j.end()) return Error(member, "missing");
    if (!it->is_string()) return Error(member, "expected a string, found " + it->dump());
    return it->get<std::string>();
  }

  Result<std::string> FilePath(const Json& j, const char* key) const {
    DETRAIN_ASSIGN_OR_RETURN(std::string p, String(j, key, ""));
    if (!IsPlainFileName(p)) {
      return Error(key, "\"" + p + "\" must be a file name in the spec's directory (no '/')");
    }
    return p;
  }

  Status Entries(const Json& j, std::vector<RunSpecEntry>* out) const {
    auto it = j.find("entry");
    if (it == j.end()) return Error("entry", "missing");
    if (!it->is_array()) return Error("entry", "expected an array, found " + it->dump());
    if (it->size() > kMaxRunSpecEntries) {
      return Error("entry", "lists " + std::to_string(it->size()) + " parameters, more than " +
                                std::to_string(kMaxRunSpecEntries));
    }
    std::set<std::string> names;
    int counts[plan::kParamRoleCount] = {};
    for (size_t i = 0; i < it->size(); ++i) {
      const Json& e = (*it)[i];
      const std::string where = "entry[" + std::to_string(i) + "]";
      DETRAIN_RETURN_IF_ERROR(Only(e, where, {"role", "name"}));
      DETRAIN_ASSIGN_OR_RETURN(std::string role_name, String(e, "role", where));
      RunSpecEntry entry;
      bool known = false;
      std::string expected;
      for (ParamRole r : plan::kParamRoles) {
        if (!plan::IsRunSpecRole(r)) continue;
        expected += (expected.empty() ? "" : ", ") + std::string(plan::ParamRoleName(r));
        if (role_name == plan::ParamRoleName(r)) {
          entry.role = r;
          known = true;
        }
      }
      if (!known) {
        return Error(where + ".role",
                     "unknown role \"" + role_name + "\" (expected " + expected + ")");
      }
      const int role_index = static_cast<int>(entry.role);
      ++counts[role_index];
      if (plan::IsStateRole(entry.role)) {
        DETRAIN_ASSIGN_OR_RETURN(entry.name, String(e, "name", where));
        if (entry.name.empty()) return Error(where + ".name", "must not be empty");
        if (entry.name.size() > 1024) return Error(where + ".name", "longer than 1024 bytes");
        if (!names.insert(entry.name).second)
          return Error(where + ".name", "\"" + entry.name + "\" names two entries");
        if (entry.role == ParamRole::kStep && counts[role_index] > 1)
          return Error(where + ".role", "a second step entry (the update counter is one tensor)");
      } else {
        if (e.contains("name")) {
          return Error(where + ".name",
                       "only state entries (parameter, optimizer-state, step) "
                       "have a name");
        }
        if (counts[role_index] > 1) {
          return Error(where + ".role", "a second " + role_name +
                                            " entry (at most one each of "
                                            "batch, labels and key)");
        }
      }
      out->push_back(std::move(entry));
    }
    if (counts[static_cast<int>(ParamRole::kParameter)] == 0)
      return Error("entry", "no parameter entry: there is nothing to train");
    if (counts[static_cast<int>(ParamRole::kBatch)] != 1 ||
        counts[static_cast<int>(ParamRole::kLabels)] != 1) {
      return Error("entry",
                   "needs one batch and one labels entry (the data source gives "
                   "features and labels)");
    }
    return Status::Ok();
  }

  Result<RunSpec> Read(const Json& j) const {
    DETRAIN_RETURN_IF_ERROR(Only(j, "",
                                 {"format", "format_version", "train_step", "initial_state",
                                  "entry", "data", "train", "exporter"}));
    DETRAIN_ASSIGN_OR_RETURN(std::string format, String(j, "format", ""));
    if (format != kRunSpecFormat) {
      return Error("format",
                   "expected \"" + std::string(kRunSpecFormat) + "\", found \"" + format + "\"");
    }
    auto version = j.find("format_version");
    if (version == j.end()) return Error("format_version", "missing");
    if (!version->is_number_integer() || *version != kRunSpecFormatVersion) {
      return Error("format_version", "this detrain reads version " +
                                         std::to_string(kRunSpecFormatVersion) + ", found " +
                                         version->dump());
    }
    RunSpec spec;
    DETRAIN_ASSIGN_OR_RETURN(spec.train_step, FilePath(j, "train_step"));
    DETRAIN_ASSIGN_OR_RETURN(spec.initial_state, FilePath(j, "initial_state"));
    DETRAIN_RETURN_IF_ERROR(Entries(j, &spec.entry));
    if (!j.contains("data")) return Error("data", "missing");
    if (!j.contains("train")) return Error("train", "missing");
    Result<DataConfig> data = ParseDataConfig(j["data"], "data");
    if (!data.ok()) return Status(data.status().code(), path_ + ": " + data.status().message());
    spec.data = std::move(*data);
    Result<TrainConfig> train = ParseTrainConfig(j["train"], "train");
    if (!train.ok()) return Status(train.status().code(), path_ + ": " + train.status().message());
    spec.train = *train;
    if (spec.train.shards != 1) {
      return Error("train.shards",
                   "must be 1: an exported step computes its batch as one program (found " +
                       std::to_string(spec.train.shards) + ")");
    }
    if (spec.data.validation != 0) {
      return Error("data.validation",
                   "must be 0: a run spec has no evaluation program to score a held-out split");
    }
    if (spec.train.eval_every != 0) {
      return Error("train.eval_every", "must be 0: a run spec has no evaluation program");
    }
    if (j.contains("exporter")) {
      const Json& e = j["exporter"];
      DETRAIN_RETURN_IF_ERROR(Only(e, "exporter", {"tool", "jax", "jaxlib", "python", "function"}));
      for (const auto& [key, value] : e.items()) {
        if (!value.is_string()) return Error("exporter." + key, "expected a string");
      }
    }
    return spec;
  }

 private:
  std::string path_;
};

}  // namespace

bool IsPlainFileName(std::string_view name) {
  if (name.empty() || name.size() > 255 || name == "." || name == "..") return false;
  for (char c : name) {
    if (c == '/' || c == '\\' || c == '\0') return false;
  }
  return true;
}

Result<RunSpec> ParseRunSpec(std::string_view text, const std::string& path) {
  Result<Json> j = attest::ParseJson(text);
  if (!j.ok()) {
    // "invalid JSON at byte N: ..." becomes "path:line:col: ...".
    const std::string& m = j.status().message();
    const std::string prefix = "invalid JSON at byte ";
    if (m.rfind(prefix, 0) == 0) {
      size_t end = m.find(':', prefix.size());
      size_t at = 0;
      bool digits = end != std::string::npos && end > prefix.size();
      for (size_t i = prefix.size(); digits && i < end; ++i) {
        if (m[i] < '0' || m[i] > '9' || at > std::numeric_limits<size_t>::max() / 10) {
          digits = false;
        } else {
          at = at * 10 + static_cast<size_t>(m[i] - '0');
        }
      }
      // nlohmann counts the byte after the offending one.
      if (digits) {
        return InvalidArgument(path + ":" + LineColumn(text, at > 0 ? at - 1 : 0) +
                               ": run spec: invalid JSON" + m.substr(end));
      }
    }
    return InvalidArgument(path + ": run spec: " + m);
  }
  try {
    return SpecReader(path).Read(*j);
  } catch (const std::exception& e) {
    return Internal(path + ": run spec: unexpected JSON error: " + e.what());
  }
}

}  // namespace detrain::frontend
