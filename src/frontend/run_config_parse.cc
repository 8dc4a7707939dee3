// See run_config.h: ParseRunConfig, the one reader of the configuration JSON. Every object's
// members are checked against the list its kind may have (an extra or misplaced member is an
// error: Json(Parse(j)) == j must hold for whatever is accepted), and every value against the
// ranges the language's rules enforce (builtins_config.cc), so a configuration read back from a
// bundle is held to the same rules as one the checker built.
#include <cmath>
#include <initializer_list>
#include <limits>

#include "attest/canonical_json.h"
#include "frontend/run_config.h"
#include "frontend/run_config_names.h"

namespace detrain::frontend {
namespace {

using Json = nlohmann::json;

Status Error(const std::string& path, const std::string& what) {
  return InvalidArgument("run config: " + path + ": " + what);
}

std::string Join(const std::string& path, std::string_view key) {
  return path.empty() ? std::string(key) : path + "." + std::string(key);
}

// A JSON object being read, with its path for messages.
class Obj {
 public:
  Obj(const Json& j, std::string path) : j_(j), path_(std::move(path)) {}

  // The object itself, and that it has only `allowed` members.
  Status Check(std::initializer_list<std::string_view> allowed) const {
    if (!j_.is_object())
      return Error(Where(), "expected an object, found " + std::string(j_.type_name()));
    for (const auto& [key, value] : j_.items()) {
      bool known = false;
      for (std::string_view a : allowed) known = known || key == a;
      if (!known) return Error(Join(path_, key), "unexpected member");
    }
    return Status::Ok();
  }

  bool Has(const char* key) const { return j_.contains(key); }
  std::string Path(const char* key) const { return Join(path_, key); }

  Result<const Json*> Member(const char* key) const {
    auto it = j_.find(key);
    if (it == j_.end()) return Error(Path(key), "missing");
    return &*it;
  }

  Status Int(const char* key, int64_t min, int64_t* out) const {
    DETRAIN_ASSIGN_OR_RETURN(const Json* v, Member(key));
    bool too_big = v->is_number_unsigned() &&
                   v->get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max());
    if (!v->is_number_integer() || too_big)
      return Error(Path(key), "expected an integer, found " + v->dump());
    *out = v->get<int64_t>();
    if (*out < min)
      return Error(Path(key), "must be >= " + std::to_string(min) + ", found " + v->dump());
    return Status::Ok();
  }

  Status OptionalInt(const char* key, int64_t min, std::optional<int64_t>* out) const {
    if (!Has(key)) return Status::Ok();
    int64_t v;
    DETRAIN_RETURN_IF_ERROR(Int(key, min, &v));
    *out = v;
    return Status::Ok();
  }

  // A finite number in [lo, hi] (hi_open: [lo, hi)); `positive` excludes 0.
  Status Number(const char* key, double* out, double lo = -HUGE_VAL, double hi = HUGE_VAL,
                bool hi_open = false, bool positive = false) const {
    DETRAIN_ASSIGN_OR_RETURN(const Json* v, Member(key));
    if (!v->is_number()) return Error(Path(key), "expected a number, found " + v->dump());
    *out = v->get<double>();
    bool ok = std::isfinite(*out) && *out >= lo && (hi_open ? *out < hi : *out <= hi) &&
              !(positive && *out <= 0);
    if (!ok) {
      std::string range = positive         ? std::string("a positive number")
                          : std::isinf(lo) ? std::string("a finite number")
                          : std::isinf(hi)
                              ? "a number >= " + Format(lo)
                              : "in [" + Format(lo) + ", " + Format(hi) + (hi_open ? ")" : "]");
      return Error(Path(key), "must be " + range + ", found " + v->dump());
    }
    return Status::Ok();
  }

  Status Bool(const char* key, bool* out) const {
    DETRAIN_ASSIGN_OR_RETURN(const Json* v, Member(key));
    if (!v->is_boolean()) return Error(Path(key), "expected true or false, found " + v->dump());
    *out = v->get<bool>();
    return Status::Ok();
  }

  Status String(const char* key, std::string* out, bool non_empty = false) const {
    DETRAIN_ASSIGN_OR_RETURN(const Json* v, Member(key));
    if (!v->is_string()) return Error(Path(key), "expected a string, found " + v->dump());
    *out = v->get<std::string>();
    if (non_empty && out->empty()) return Error(Path(key), "must not be empty");
    return Status::Ok();
  }

  // An integer index or a string name (a CSV column).
  static Status Column(const Json& v, const std::string& path, ColumnRef* out) {
    if (v.is_string()) {
      *out = v.get<std::string>();
      return Status::Ok();
    }
    bool too_big = v.is_number_unsigned() &&
                   v.get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max());
    if (!v.is_number_integer() || too_big)
      return Error(path, "expected a column index or name, found " + v.dump());
    *out = v.get<int64_t>();
    return Status::Ok();
  }

  template <typename E, size_t N>
  Status Name(const char* key, const NameTable<E> (&table)[N], E* out) const {
    std::string name;
    DETRAIN_RETURN_IF_ERROR(String(key, &name));
    std::optional<E> v = ValueOf(table, name);
    if (!v.has_value())
      return Error(Path(key), "unknown '" + name + "' (expected " + NameList(table) + ")");
    *out = *v;
    return Status::Ok();
  }

  Obj Sub(const Json& j, const char* key) const { return Obj(j, Path(key)); }

 private:
  static std::string Format(double v) { return attest::FormatJsonNumber(v); }
  std::string Where() const { return path_.empty() ? "the configuration" : path_; }

  const Json& j_;
  std::string path_;
};

Result<InitializerConfig> ParseInitializer(const Obj& o) {
  InitializerConfig init;
  DETRAIN_RETURN_IF_ERROR(o.Check({"name", "stddev", "value"}));
  DETRAIN_RETURN_IF_ERROR(o.Name("name", kInitializerNames, &init.kind));
  if (init.kind == InitializerKind::kNormal) {
    DETRAIN_RETURN_IF_ERROR(o.Check({"name", "stddev"}));
    DETRAIN_RETURN_IF_ERROR(o.Number("stddev", &init.stddev, 0, HUGE_VAL, false, true));
  } else if (init.kind == InitializerKind::kConstant) {
    DETRAIN_RETURN_IF_ERROR(o.Check({"name", "value"}));
    DETRAIN_RETURN_IF_ERROR(o.Number("value", &init.value));
  } else {
    DETRAIN_RETURN_IF_ERROR(o.Check({"name"}));
  }
  return init;
}

Status ParseParams(const Json& j, std::vector<ParamConfig>* out) {
  if (!j.is_array())
    return Error("params", "expected an array, found " + std::string(j.type_name()));
  for (size_t i = 0; i < j.size(); ++i) {
    Obj o(j[i], "params[" + std::to_string(i) + "]");
    DETRAIN_RETURN_IF_ERROR(o.Check({"name", "type", "init"}));
    ParamConfig p;
    DETRAIN_RETURN_IF_ERROR(o.String("name", &p.name, true));
    DETRAIN_RETURN_IF_ERROR(o.String("type", &p.type, true));
    DETRAIN_ASSIGN_OR_RETURN(const Json* init, o.Member("init"));
    DETRAIN_ASSIGN_OR_RETURN(p.init, ParseInitializer(o.Sub(*init, "init")));
    out->push_back(std::move(p));
  }
  return Status::Ok();
}

// csv's label, header and columns; `header` and `columns` are absent at their defaults.
Status ParseCsvColumns(const Obj& o, DataConfig* d) {
  DETRAIN_ASSIGN_OR_RETURN(const Json* label, o.Member("label"));
  DETRAIN_RETURN_IF_ERROR(o.Column(*label, o.Path("label"), &d->label));
  if (o.Has("header")) {
    DETRAIN_RETURN_IF_ERROR(o.Bool("header", &d->header));
    if (!d->header) return Error(o.Path("header"), "is written only when true, found false");
  }
  const bool given = o.Has("columns");
  if (given) {
    DETRAIN_ASSIGN_OR_RETURN(const Json* columns, o.Member("columns"));
    if (!columns->is_array()) {
      return Error(o.Path("columns"), "expected an array, found " + columns->dump());
    }
    for (size_t i = 0; i < columns->size(); ++i) {
      ColumnRef c;
      DETRAIN_RETURN_IF_ERROR(
          o.Column((*columns)[i], o.Path("columns") + "[" + std::to_string(i) + "]", &c));
      d->columns.push_back(std::move(c));
    }
  }
  if (auto p = CheckCsvColumns(d->header, d->label, d->columns, given)) {
    std::string path = p->entry == ColumnProblem::kLabelEntry ? o.Path("label")
                       : p->entry == ColumnProblem::kListEntry
                           ? o.Path("columns")
                           : o.Path("columns") + "[" + std::to_string(p->entry) + "]";
    return Error(path, p->message);
  }
  return Status::Ok();
}

Result<DataConfig> ParseData(const Obj& o) {
  DataConfig d;
  DETRAIN_RETURN_IF_ERROR(
      o.Check({"name", "as", "validation", "path", "label", "skip_rows", "standardize", "header",
               "columns", "features", "labels", "context"}));
  DETRAIN_RETURN_IF_ERROR(o.Name("name", kDataSourceNames, &d.kind));
  DETRAIN_RETURN_IF_ERROR(o.String("as", &d.as, true));
  DETRAIN_RETURN_IF_ERROR(o.Number("validation", &d.validation, 0, 1, true));
  switch (d.kind) {
    case DataSourceKind::kCsv:
      DETRAIN_RETURN_IF_ERROR(o.Check({"name", "as", "validation", "path", "label", "skip_rows",
                                       "standardize", "header", "columns"}));
      DETRAIN_RETURN_IF_ERROR(o.String("path", &d.path, true));
      DETRAIN_RETURN_IF_ERROR(o.Int("skip_rows", 0, &d.skip_rows));
      DETRAIN_RETURN_IF_ERROR(o.Bool("standardize", &d.standardize));
      DETRAIN_RETURN_IF_ERROR(ParseCsvColumns(o, &d));
      break;
    case DataSourceKind::kNpy:
      DETRAIN_RETURN_IF_ERROR(
          o.Check({"name", "as", "validation", "features", "labels", "standardize"}));
      DETRAIN_RETURN_IF_ERROR(o.String("features", &d.features));
      DETRAIN_RETURN_IF_ERROR(o.String("labels", &d.labels));
      DETRAIN_RETURN_IF_ERROR(o.Bool("standardize", &d.standardize));
      break;
    case DataSourceKind::kNpz:
      DETRAIN_RETURN_IF_ERROR(
          o.Check({"name", "as", "validation", "path", "features", "labels", "standardize"}));
      DETRAIN_RETURN_IF_ERROR(o.String("path", &d.path, true));
      DETRAIN_RETURN_IF_ERROR(o.String("features", &d.features, true));
      DETRAIN_RETURN_IF_ERROR(o.String("labels", &d.labels, true));
      DETRAIN_RETURN_IF_ERROR(o.Bool("standardize", &d.standardize));
      break;
    case DataSourceKind::kText:
      DETRAIN_RETURN_IF_ERROR(o.Check({"name", "as", "validation", "path", "context"}));
      DETRAIN_RETURN_IF_ERROR(o.String("path", &d.path));
      DETRAIN_RETURN_IF_ERROR(o.Int("context", 1, &d.context));
      break;
  }
  return d;
}

Result<ScheduleConfig> ParseSchedule(const Obj& o) {
  ScheduleConfig s;
  DETRAIN_RETURN_IF_ERROR(o.Check(
      {"name", "value", "init", "end", "peak", "alpha", "steps", "decay_steps", "warmup_steps"}));
  DETRAIN_RETURN_IF_ERROR(o.Name("name", kScheduleNames, &s.kind));
  switch (s.kind) {
    case ScheduleKind::kConstant:
      DETRAIN_RETURN_IF_ERROR(o.Check({"name", "value"}));
      DETRAIN_RETURN_IF_ERROR(o.Number("value", &s.value, 0, HUGE_VAL, false, true));
      break;
    case ScheduleKind::kLinear:
      DETRAIN_RETURN_IF_ERROR(o.Check({"name", "init", "end", "steps"}));
      DETRAIN_RETURN_IF_ERROR(o.Number("init", &s.init, 0));
      DETRAIN_RETURN_IF_ERROR(o.Number("end", &s.end, 0));
      DETRAIN_RETURN_IF_ERROR(o.Int("steps", 1, &s.steps));
      break;
    case ScheduleKind::kCosineDecay:
      DETRAIN_RETURN_IF_ERROR(o.Check({"name", "init", "decay_steps", "alpha"}));
      DETRAIN_RETURN_IF_ERROR(o.Number("init", &s.init, 0));
      DETRAIN_RETURN_IF_ERROR(o.Int("decay_steps", 1, &s.decay_steps));
      DETRAIN_RETURN_IF_ERROR(o.Number("alpha", &s.alpha, 0, 1));
      break;
    case ScheduleKind::kWarmupCosineDecay:
      DETRAIN_RETURN_IF_ERROR(
          o.Check({"name", "init", "peak", "warmup_steps", "decay_steps", "end"}));
      DETRAIN_RETURN_IF_ERROR(o.Number("init", &s.init, 0));
      DETRAIN_RETURN_IF_ERROR(o.Number("peak", &s.peak, 0));
      DETRAIN_RETURN_IF_ERROR(o.Int("warmup_steps", 0, &s.warmup_steps));
      DETRAIN_RETURN_IF_ERROR(o.Int("decay_steps", 1, &s.decay_steps));
      DETRAIN_RETURN_IF_ERROR(o.Number("end", &s.end, 0));
      if (s.warmup_steps >= s.decay_steps) {
        return Error(o.Path("warmup_steps"), "must be smaller than decay_steps (" +
                                                 std::to_string(s.decay_steps) + "), found " +
                                                 std::to_string(s.warmup_steps));
      }
      break;
  }
  return s;
}

Result<OptimizerConfig> ParseOptimizer(const Obj& o) {
  OptimizerConfig c;
  DETRAIN_RETURN_IF_ERROR(o.Check({"name", "learning_rate", "momentum", "nesterov", "b1", "b2",
                                   "eps", "weight_decay", "clip_norm"}));
  DETRAIN_RETURN_IF_ERROR(o.Name("name", kOptimizerNames, &c.kind));
  if (c.kind == OptimizerKind::kInProgram) {
    // The imported step holds the optimizer and its schedule: nothing else to say.
    DETRAIN_RETURN_IF_ERROR(o.Check({"name"}));
    c.learning_rate.value = 0;
    return c;
  }
  DETRAIN_ASSIGN_OR_RETURN(const Json* lr, o.Member("learning_rate"));
  DETRAIN_ASSIGN_OR_RETURN(c.learning_rate, ParseSchedule(o.Sub(*lr, "learning_rate")));
  switch (c.kind) {
    case OptimizerKind::kSgd:
      DETRAIN_RETURN_IF_ERROR(o.Check({"name", "learning_rate", "clip_norm"}));
      break;
    case OptimizerKind::kMomentum:
      DETRAIN_RETURN_IF_ERROR(
          o.Check({"name", "learning_rate", "momentum", "nesterov", "clip_norm"}));
      DETRAIN_RETURN_IF_ERROR(o.Number("momentum", &c.momentum, 0, 1, true));
      DETRAIN_RETURN_IF_ERROR(o.Bool("nesterov", &c.nesterov));
      break;
    case OptimizerKind::kInProgram:
      break;
    case OptimizerKind::kAdam:
    case OptimizerKind::kAdamW:
      if (c.kind == OptimizerKind::kAdam) {
        DETRAIN_RETURN_IF_ERROR(o.Check({"name", "learning_rate", "b1", "b2", "eps", "clip_norm"}));
      } else {
        DETRAIN_RETURN_IF_ERROR(o.Number("weight_decay", &c.weight_decay, 0));
      }
      DETRAIN_RETURN_IF_ERROR(o.Number("b1", &c.b1, 0, 1, true));
      DETRAIN_RETURN_IF_ERROR(o.Number("b2", &c.b2, 0, 1, true));
      DETRAIN_RETURN_IF_ERROR(o.Number("eps", &c.eps, 0));
      break;
  }
  if (o.Has("clip_norm")) {
    double clip;
    DETRAIN_RETURN_IF_ERROR(o.Number("clip_norm", &clip, 0, HUGE_VAL, false, true));
    c.clip_norm = clip;
  }
  return c;
}

constexpr int64_t kAnyInt = std::numeric_limits<int64_t>::min();

Result<TrainConfig> ParseTrain(const Obj& o) {
  TrainConfig t;
  DETRAIN_RETURN_IF_ERROR(o.Check(
      {"steps", "epochs", "batch", "shards", "seed", "checkpoint_every", "eval_every", "prng"}));
  // Bounds: TrainFieldProblem (run_config.h), the same for every form of the configuration.
  DETRAIN_RETURN_IF_ERROR(o.OptionalInt("steps", kAnyInt, &t.steps));
  DETRAIN_RETURN_IF_ERROR(o.OptionalInt("epochs", kAnyInt, &t.epochs));
  if (!t.steps.has_value() && !t.epochs.has_value())
    return Error(o.Path("steps"), "give steps or epochs");
  DETRAIN_RETURN_IF_ERROR(o.Int("batch", kAnyInt, &t.batch));
  DETRAIN_RETURN_IF_ERROR(o.Int("shards", kAnyInt, &t.shards));
  DETRAIN_RETURN_IF_ERROR(o.Int("seed", kAnyInt, &t.seed));
  DETRAIN_RETURN_IF_ERROR(o.Int("checkpoint_every", kAnyInt, &t.checkpoint_every));
  DETRAIN_RETURN_IF_ERROR(o.Int("eval_every", kAnyInt, &t.eval_every));
  const std::pair<const char*, std::optional<int64_t>> fields[] = {
      {"steps", t.steps},          {"epochs", t.epochs}, {"batch", t.batch},
      {"shards", t.shards},        {"seed", t.seed},     {"checkpoint_every", t.checkpoint_every},
      {"eval_every", t.eval_every}};
  for (const auto& [field, value] : fields) {
    if (!value.has_value()) continue;
    if (std::string why = TrainFieldProblem(field, *value); !why.empty()) {
      return Error(o.Path(field), why);
    }
  }
  if (t.batch % t.shards != 0) {
    return Error(o.Path("batch"), std::to_string(t.batch) + " is not divisible by shards " +
                                      std::to_string(t.shards));
  }
  DETRAIN_RETURN_IF_ERROR(o.Name("prng", kPrngModeNames, &t.prng));
  return t;
}

Status ParseMetrics(const Json& j, std::vector<Metric>* out) {
  if (!j.is_array())
    return Error("metrics", "expected an array, found " + std::string(j.type_name()));
  for (size_t i = 0; i < j.size(); ++i) {
    std::string path = "metrics[" + std::to_string(i) + "]";
    std::optional<Metric> m =
        j[i].is_string() ? ValueOf(kMetricNames, j[i].get<std::string>()) : std::nullopt;
    if (!m.has_value())
      return Error(path,
                   "unknown metric " + j[i].dump() + " (expected " + NameList(kMetricNames) + ")");
    out->push_back(*m);
  }
  return Status::Ok();
}

bool IsSha256Hex(const std::string& s) {
  if (s.size() != 64) return false;
  for (char c : s) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

Result<ResolvedData> ParseResolved(const Obj& o) {
  ResolvedData r;
  DETRAIN_RETURN_IF_ERROR(o.Check({"rows", "train_rows", "validation_rows", "files"}));
  DETRAIN_RETURN_IF_ERROR(o.Int("rows", 0, &r.rows));
  DETRAIN_RETURN_IF_ERROR(o.Int("train_rows", 0, &r.train_rows));
  DETRAIN_RETURN_IF_ERROR(o.Int("validation_rows", 0, &r.validation_rows));
  if (r.train_rows + r.validation_rows != r.rows) {
    return Error(o.Path("rows"), std::to_string(r.rows) + " is not train_rows + validation_rows (" +
                                     std::to_string(r.train_rows + r.validation_rows) + ")");
  }
  DETRAIN_ASSIGN_OR_RETURN(const Json* files, o.Member("files"));
  if (!files->is_array()) return Error(o.Path("files"), "expected an array");
  for (size_t i = 0; i < files->size(); ++i) {
    Obj f((*files)[i], o.Path("files") + "[" + std::to_string(i) + "]");
    DETRAIN_RETURN_IF_ERROR(f.Check({"path", "sha256"}));
    DataFileDigest d;
    DETRAIN_RETURN_IF_ERROR(f.String("path", &d.path, true));
    DETRAIN_RETURN_IF_ERROR(f.String("sha256", &d.sha256));
    if (!IsSha256Hex(d.sha256)) return Error(f.Path("sha256"), "expected 64 lowercase hex digits");
    r.files.push_back(std::move(d));
  }
  return r;
}

Result<RunConfig> ParseTop(const Json& j) {
  Obj o(j, "");
  DETRAIN_RETURN_IF_ERROR(o.Check(
      {"format", "params", "data", "optimizer", "train", "metrics", "batch_dim", "resolved"}));
  std::string format;
  DETRAIN_RETURN_IF_ERROR(o.String("format", &format));
  if (format != kRunConfigFormat) {
    return Error("format",
                 "expected \"" + std::string(kRunConfigFormat) + "\", found \"" + format + "\"");
  }
  RunConfig c;
  DETRAIN_ASSIGN_OR_RETURN(const Json* params, o.Member("params"));
  DETRAIN_RETURN_IF_ERROR(ParseParams(*params, &c.params));
  DETRAIN_ASSIGN_OR_RETURN(const Json* data, o.Member("data"));
  DETRAIN_ASSIGN_OR_RETURN(c.data, ParseData(o.Sub(*data, "data")));
  DETRAIN_ASSIGN_OR_RETURN(const Json* opt, o.Member("optimizer"));
  DETRAIN_ASSIGN_OR_RETURN(c.optimizer, ParseOptimizer(o.Sub(*opt, "optimizer")));
  DETRAIN_ASSIGN_OR_RETURN(const Json* train, o.Member("train"));
  DETRAIN_ASSIGN_OR_RETURN(c.train, ParseTrain(o.Sub(*train, "train")));
  DETRAIN_ASSIGN_OR_RETURN(const Json* metrics, o.Member("metrics"));
  DETRAIN_RETURN_IF_ERROR(ParseMetrics(*metrics, &c.metrics));
  DETRAIN_RETURN_IF_ERROR(o.String("batch_dim", &c.batch_dim, true));
  if (o.Has("resolved")) {
    DETRAIN_ASSIGN_OR_RETURN(const Json* resolved, o.Member("resolved"));
    DETRAIN_ASSIGN_OR_RETURN(c.resolved, ParseResolved(o.Sub(*resolved, "resolved")));
  }
  return c;
}

// nlohmann::json throws on misuse; the checks above avoid every throwing call, and this is the
// boundary that keeps any exception from leaving the library.
template <typename F>
auto Guarded(F f) -> decltype(f()) {
  try {
    return f();
  } catch (const std::exception& e) {
    return Internal(std::string("run config: unexpected JSON error: ") + e.what());
  }
}

}  // namespace

Result<RunConfig> ParseRunConfig(const nlohmann::json& json) {
  return Guarded([&] { return ParseTop(json); });
}

Result<OptimizerConfig> ParseOptimizerConfig(const nlohmann::json& json) {
  return Guarded([&] { return ParseOptimizer(Obj(json, "optimizer")); });
}

Result<ScheduleConfig> ParseScheduleConfig(const nlohmann::json& json) {
  return Guarded([&] { return ParseSchedule(Obj(json, "learning_rate")); });
}

Result<DataConfig> ParseDataConfig(const nlohmann::json& json, const std::string& path) {
  return Guarded([&] { return ParseData(Obj(json, path)); });
}

Result<TrainConfig> ParseTrainConfig(const nlohmann::json& json, const std::string& path) {
  return Guarded([&] { return ParseTrain(Obj(json, path)); });
}

}  // namespace detrain::frontend
