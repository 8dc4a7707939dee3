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

int OptimizerSlots(OptimizerKind kind) {
  switch (kind) {
    case OptimizerKind::kSgd:
      return 0;
    case OptimizerKind::kMomentum:
      return 1;
    case OptimizerKind::kAdam:
    case OptimizerKind::kAdamW:
      return 2;
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
  nlohmann::json j = {{"name", OptimizerName(o.kind)},
                      {"learning_rate", ScheduleJson(o.learning_rate)}};
  switch (o.kind) {
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

namespace {

nlohmann::json DataJson(const DataConfig& d) {
  nlohmann::json j = {{"name", DataSourceName(d.kind)}, {"as", d.as}, {"validation", d.validation}};
  switch (d.kind) {
    case DataSourceKind::kCsv:
      j["path"] = d.path;
      j["label"] = d.label;
      j["skip_rows"] = d.skip_rows;
      j["standardize"] = d.standardize;
      break;
    case DataSourceKind::kNpy:
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
