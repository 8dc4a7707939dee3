// See run_config.h: the names of the enumerations and the JSON writer. The parser is in
// run_config_parse.cc; both use the name tables of run_config_names.h.
#include "frontend/run_config.h"

#include "attest/canonical_json.h"
#include "frontend/run_config_names.h"

namespace detrain::frontend {

std::string_view InitializerName(InitializerKind kind) { return NameOf(kInitializerNames, kind); }
std::string_view DataSourceName(DataSourceKind kind) { return NameOf(kDataSourceNames, kind); }
std::string_view ScheduleName(ScheduleKind kind) { return NameOf(kScheduleNames, kind); }
std::string_view OptimizerName(OptimizerKind kind) { return NameOf(kOptimizerNames, kind); }
std::string_view PrngModeName(PrngMode mode) { return NameOf(kPrngModeNames, mode); }
std::string_view MetricName(Metric metric) { return NameOf(kMetricNames, metric); }

std::string TrainFieldProblem(std::string_view field, int64_t value) {
  const std::string found = ", found " + std::to_string(value);
  const int64_t min =
      field == "seed" || field == "checkpoint_every" || field == "eval_every" ? 0 : 1;
  if (value < min) return "must be >= " + std::to_string(min) + found;
  if (field == "steps" && value > kMaxSteps) {
    return "must be at most " + std::to_string(kMaxSteps) +
           " (checkpoint names have eight digits)" + found;
  }
  if (field == "shards") {
    if (value > kMaxShards) return "must be at most " + std::to_string(kMaxShards) + found;
    if ((value & (value - 1)) != 0) return "must be a power of two (1, 2, 4, 8, ...)" + found;
  }
  return "";
}

int OptimizerSlots(OptimizerKind kind) {
  switch (kind) {
    case OptimizerKind::kSgd:
      return 0;
    case OptimizerKind::kMomentum:
      return 1;
    case OptimizerKind::kAdam:
    case OptimizerKind::kAdamW:
      return 2;
    case OptimizerKind::kInProgram:
      return 0;
  }
  return 0;
}

nlohmann::json ScheduleJson(const ScheduleConfig& s) {
  nlohmann::json j = {{"name", ScheduleName(s.kind)}};
  switch (s.kind) {
    case ScheduleKind::kConstant:
      j["value"] = s.value;
      break;
    case ScheduleKind::kLinear:
      j["init"] = s.init;
      j["end"] = s.end;
      j["steps"] = s.steps;
      break;
    case ScheduleKind::kCosineDecay:
      j["init"] = s.init;
      j["decay_steps"] = s.decay_steps;
      j["alpha"] = s.alpha;
      break;
    case ScheduleKind::kWarmupCosineDecay:
      j["init"] = s.init;
      j["peak"] = s.peak;
      j["warmup_steps"] = s.warmup_steps;
      j["decay_steps"] = s.decay_steps;
      j["end"] = s.end;
      break;
  }
  return j;
}

nlohmann::json OptimizerJson(const OptimizerConfig& o) {
  if (o.kind == OptimizerKind::kInProgram) return {{"name", OptimizerName(o.kind)}};
  nlohmann::json j = {{"name", OptimizerName(o.kind)},
                      {"learning_rate", ScheduleJson(o.learning_rate)}};
  switch (o.kind) {
    case OptimizerKind::kInProgram:
      break;
    case OptimizerKind::kSgd:
      break;
    case OptimizerKind::kMomentum:
      j["momentum"] = o.momentum;
      j["nesterov"] = o.nesterov;
      break;
    case OptimizerKind::kAdamW:
      j["weight_decay"] = o.weight_decay;
      [[fallthrough]];
    case OptimizerKind::kAdam:
      j["b1"] = o.b1;
      j["b2"] = o.b2;
      j["eps"] = o.eps;
      break;
  }
  if (o.clip_norm.has_value()) j["clip_norm"] = *o.clip_norm;
  return j;
}

nlohmann::json InitializerJson(const InitializerConfig& init) {
  nlohmann::json j = {{"name", InitializerName(init.kind)}};
  if (init.kind == InitializerKind::kNormal) j["stddev"] = init.stddev;
  if (init.kind == InitializerKind::kConstant) j["value"] = init.value;
  return j;
}

std::string ColumnRefText(const ColumnRef& column) {
  if (const auto* name = std::get_if<std::string>(&column)) return "\"" + *name + "\"";
  return std::to_string(std::get<int64_t>(column));
}

nlohmann::json ColumnRefJson(const ColumnRef& column) {
  if (const auto* name = std::get_if<std::string>(&column)) return *name;
  return std::get<int64_t>(column);
}

std::optional<ColumnProblem> CheckCsvColumns(bool header, const ColumnRef& label,
                                             const std::vector<ColumnRef>& columns,
                                             bool columns_given) {
  auto name_problem = [&](const ColumnRef& c, int64_t entry) -> std::optional<ColumnProblem> {
    const auto* name = std::get_if<std::string>(&c);
    if (name == nullptr) return std::nullopt;
    if (name->empty()) return ColumnProblem{entry, "a column name must not be empty"};
    if (!header) {
      return ColumnProblem{entry,
                           "column " + ColumnRefText(c) + " is a name, which needs header = true"};
    }
    return std::nullopt;
  };
  if (auto p = name_problem(label, ColumnProblem::kLabelEntry)) return p;
  if (columns_given && columns.empty()) {
    return ColumnProblem{ColumnProblem::kListEntry,
                         "columns must list at least one feature column"};
  }
  for (size_t i = 0; i < columns.size(); ++i) {
    const int64_t entry = static_cast<int64_t>(i);
    if (auto p = name_problem(columns[i], entry)) return p;
    if (columns[i] == label) {
      return ColumnProblem{
          entry, "column " + ColumnRefText(label) + " is the label; it cannot also be a feature"};
    }
    for (size_t j = 0; j < i; ++j) {
      if (columns[j] == columns[i]) {
        return ColumnProblem{entry, "column " + ColumnRefText(columns[i]) + " is listed twice"};
      }
    }
  }
  return std::nullopt;
}

namespace {

nlohmann::json DataJson(const DataConfig& d) {
  nlohmann::json j = {{"name", DataSourceName(d.kind)}, {"as", d.as}, {"validation", d.validation}};
  switch (d.kind) {
    case DataSourceKind::kCsv: {
      j["path"] = d.path;
      j["label"] = ColumnRefJson(d.label);
      j["skip_rows"] = d.skip_rows;
      j["standardize"] = d.standardize;
      if (d.header) j["header"] = true;  // absent at the defaults: see the header comment
      nlohmann::json columns = nlohmann::json::array();
      for (const ColumnRef& c : d.columns) columns.push_back(ColumnRefJson(c));
      if (!d.columns.empty()) j["columns"] = columns;
      break;
    }
    case DataSourceKind::kNpy:
      j["features"] = d.features;
      j["labels"] = d.labels;
      j["standardize"] = d.standardize;
      break;
    case DataSourceKind::kNpz:
      j["path"] = d.path;
      j["features"] = d.features;
      j["labels"] = d.labels;
      j["standardize"] = d.standardize;
      break;
    case DataSourceKind::kText:
      j["path"] = d.path;
      j["context"] = d.context;
      break;
  }
  return j;
}

nlohmann::json TrainJson(const TrainConfig& t) {
  nlohmann::json j = {{"batch", t.batch},
                      {"shards", t.shards},
                      {"seed", t.seed},
                      {"checkpoint_every", t.checkpoint_every},
                      {"eval_every", t.eval_every},
                      {"prng", PrngModeName(t.prng)}};
  if (t.steps.has_value()) j["steps"] = *t.steps;
  if (t.epochs.has_value()) j["epochs"] = *t.epochs;
  return j;
}

nlohmann::json ResolvedJson(const ResolvedData& r) {
  nlohmann::json files = nlohmann::json::array();
  for (const DataFileDigest& f : r.files) files.push_back({{"path", f.path}, {"sha256", f.sha256}});
  return {{"rows", r.rows},
          {"train_rows", r.train_rows},
          {"validation_rows", r.validation_rows},
          {"files", files}};
}

}  // namespace

nlohmann::json RunConfigJson(const RunConfig& c) {
  nlohmann::json params = nlohmann::json::array();
  for (const ParamConfig& p : c.params) {
    params.push_back({{"name", p.name}, {"type", p.type}, {"init", InitializerJson(p.init)}});
  }
  nlohmann::json metrics = nlohmann::json::array();
  for (Metric m : c.metrics) metrics.push_back(MetricName(m));
  nlohmann::json j = {{"format", kRunConfigFormat},  {"params", params},
                      {"data", DataJson(c.data)},    {"optimizer", OptimizerJson(c.optimizer)},
                      {"train", TrainJson(c.train)}, {"metrics", metrics},
                      {"batch_dim", c.batch_dim}};
  if (c.resolved.has_value()) j["resolved"] = ResolvedJson(*c.resolved);
  return j;
}

Result<std::string> CanonicalRunConfig(const RunConfig& config) {
  return attest::CanonicalJson(RunConfigJson(config));
}

}  // namespace detrain::frontend
