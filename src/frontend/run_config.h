// The run configuration of a .dt program, typed: what the checker resolved (parameters and their
// initializers, the data source, the optimizer and its schedule, the train settings, metrics)
// and, once the compile driver has read the data, the resolved split and data file digests.
//
// ParseRunConfig is the one place the configuration is read by key: the checker builds its JSON
// from the built-in table (check.cc) and parses it here once; every other reader uses the typed
// fields. RunConfigJson is the inverse, and its canonical JSON (attest/canonical_json.h) is what
// stage 1's header holds and what is hashed, so Parse(Json(c)) == c and Json(Parse(j)) == j for
// every configuration the checker writes (tests/frontend/run_config_test.cc). The same parser
// reads a configuration back from a bundle's stage 1 or manifest (issue 12), so it checks every
// field's type and range and names the field in its errors instead of trusting its input.
//
// Thread safety: plain data and pure functions. Determinism: the JSON is a pure function of the
// struct; members appear only where the checker would write them (optional settings are absent
// when not given). The CSV options added after format v1 was first written (header, columns)
// are absent at their defaults (header = false, every column but the label), so a configuration
// written before they existed reads back, and prints, byte for byte as it was.
#ifndef DETRAIN_FRONTEND_RUN_CONFIG_H_
#define DETRAIN_FRONTEND_RUN_CONFIG_H_

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "base/status.h"

namespace detrain::frontend {

// The format tag of the configuration object.
inline constexpr char kRunConfigFormat[] = "detrain.program-config.v1";
// The train step holds one copy of the loss per shard: a bound keeps a hostile `shards` from
// making the program (and its compile time) unbounded.
inline constexpr int64_t kMaxShards = 1024;
// Most training steps a run may take: a bundle names checkpoints with eight digits
// (checkpoints/step-NNNNNNNN.safetensors).
inline constexpr int64_t kMaxSteps = 99'999'999;

// The limits of a training configuration's integers, in one place for every form it comes in
// (a .dt program's train(...), the "train" object of a run spec or a manifest, run --steps):
// "" when `value` is allowed for `field` ("steps", "epochs", "batch", "shards", "seed",
// "checkpoint_every", "eval_every"), otherwise what is wrong, as "must be at most 99999999
// (checkpoint names have eight digits), found 100000000".
std::string TrainFieldProblem(std::string_view field, int64_t value);

enum class PrngMode { kPartitionable, kOriginal };

enum class InitializerKind {
  kZeros,
  kOnes,
  kGlorotUniform,
  kGlorotNormal,
  kHeUniform,
  kHeNormal,
  kLecunNormal,
  kNormal,    // stddev
  kConstant,  // value
};

struct InitializerConfig {
  InitializerKind kind = InitializerKind::kZeros;
  double stddev = 0.01;  // kNormal
  double value = 0;      // kConstant
};

struct ParamConfig {
  std::string name;
  std::string type;  // as Type::ToString prints it, e.g. "f32[30,64]"
  InitializerConfig init;
};

enum class DataSourceKind { kCsv, kNpy, kText, kNpz };

// A CSV column: its 0-based index (negative counts from the end) or, with a header, its name.
using ColumnRef = std::variant<int64_t, std::string>;

struct DataConfig {
  DataSourceKind kind = DataSourceKind::kCsv;
  std::string as;                  // the program's name for the source
  std::string path;                // csv, text, npz: as the program writes it
  std::string features;            // npy: the file, as the program writes it; npz: the array
  std::string labels;              // npy: the file; npz: the array
  ColumnRef label = int64_t{-1};   // csv: the label column
  int64_t skip_rows = 0;           // csv
  bool header = false;             // csv: the first line after skip_rows names the columns
  std::vector<ColumnRef> columns;  // csv: the feature columns in order; empty: all but the label
  bool standardize = false;        // csv, npy, npz
  int64_t context = 32;            // text: bytes per sequence
  double validation = 0;           // fraction of rows held out, in [0, 1)
};

// A column as the language spells it, for messages: "name" (quoted) or an index.
std::string ColumnRefText(const ColumnRef& column);
nlohmann::json ColumnRefJson(const ColumnRef& column);

// The first problem with a CSV source's label and feature columns that shows without reading
// the file: a name without header = true, an empty name, an empty list, a column listed twice,
// the label listed as a feature (as the program spells them: index 0 and index -3 may still be
// the same column, which only the loader can tell). `entry` is the index into `columns` of the
// offending entry, kLabelEntry for the label, or kListEntry for the list as a whole.
struct ColumnProblem {
  static constexpr int64_t kLabelEntry = -1;
  static constexpr int64_t kListEntry = -2;
  int64_t entry = 0;
  std::string message;
};
std::optional<ColumnProblem> CheckCsvColumns(bool header, const ColumnRef& label,
                                             const std::vector<ColumnRef>& columns,
                                             bool columns_given);

enum class ScheduleKind { kConstant, kLinear, kCosineDecay, kWarmupCosineDecay };

// optax's schedules; which fields a kind uses is in the comments.
struct ScheduleConfig {
  ScheduleKind kind = ScheduleKind::kConstant;
  double value = 0;          // constant
  double init = 0;           // linear, cosine_decay, warmup_cosine_decay
  double end = 0;            // linear, warmup_cosine_decay
  double peak = 0;           // warmup_cosine_decay
  double alpha = 0;          // cosine_decay
  int64_t steps = 0;         // linear
  int64_t decay_steps = 0;   // cosine_decay, warmup_cosine_decay
  int64_t warmup_steps = 0;  // warmup_cosine_decay
};

// kInProgram: the optimizer is part of an imported train step (a run spec, run_spec.h); its
// configuration has no learning rate, and LearningRateAt gives 0.
enum class OptimizerKind { kSgd, kMomentum, kAdam, kAdamW, kInProgram };

struct OptimizerConfig {
  OptimizerKind kind = OptimizerKind::kSgd;
  ScheduleConfig learning_rate;
  double momentum = 0.9;            // momentum
  bool nesterov = false;            // momentum
  double b1 = 0.9;                  // adam, adamw
  double b2 = 0.999;                // adam, adamw
  double eps = 1e-8;                // adam, adamw
  double weight_decay = 1e-4;       // adamw
  std::optional<double> clip_norm;  // clip_by_global_norm first, when given
};

struct TrainConfig {
  std::optional<int64_t> steps;   // given, or resolved from epochs by the compile driver
  std::optional<int64_t> epochs;  // exactly one of steps/epochs is given in the program
  int64_t batch = 0;              // global batch
  int64_t shards = 8;  // S canonical shards, a power of two dividing batch, <= kMaxShards
  int64_t seed = 0;
  int64_t checkpoint_every = 0;  // 0: never
  int64_t eval_every = 0;        // 0: never
  PrngMode prng = PrngMode::kPartitionable;
};

enum class Metric { kAccuracy, kLoss };

struct DataFileDigest {
  std::string path;    // as the program writes it
  std::string sha256;  // hex
};

// Set by the compile driver after reading the data (driver/program.cc).
struct ResolvedData {
  int64_t rows = 0;
  int64_t train_rows = 0;
  int64_t validation_rows = 0;
  std::vector<DataFileDigest> files;
};

struct RunConfig {
  std::vector<ParamConfig> params;  // declaration order
  DataConfig data;
  OptimizerConfig optimizer;
  TrainConfig train;
  std::vector<Metric> metrics;
  std::string batch_dim;  // the loss's batch dimension name, e.g. "B"
  std::optional<ResolvedData> resolved;
};

// Names as the language and the JSON spell them ("glorot_uniform", "adamw", "warmup_cosine_decay").
std::string_view InitializerName(InitializerKind kind);
std::string_view DataSourceName(DataSourceKind kind);
std::string_view ScheduleName(ScheduleKind kind);
std::string_view OptimizerName(OptimizerKind kind);
std::string_view PrngModeName(PrngMode mode);
std::string_view MetricName(Metric metric);

// Optimizer state tensors per parameter: sgd 0, momentum 1, adam/adamw 2 (in-program: 0, the
// imported step names its own).
int OptimizerSlots(OptimizerKind kind);

// The JSON object of a configuration (and of its parts); RunConfigJson(c)["format"] is
// kRunConfigFormat.
nlohmann::json RunConfigJson(const RunConfig& config);
nlohmann::json OptimizerJson(const OptimizerConfig& optimizer);
nlohmann::json ScheduleJson(const ScheduleConfig& schedule);
nlohmann::json InitializerJson(const InitializerConfig& init);

// The canonical JSON text of RunConfigJson(config): the bytes stage 1's header holds.
Result<std::string> CanonicalRunConfig(const RunConfig& config);

// Parses and checks a configuration object. Errors are InvalidArgument naming the field, e.g.
// "run config: train.shards: must be a power of two, found 3".
Result<RunConfig> ParseRunConfig(const nlohmann::json& json);
Result<OptimizerConfig> ParseOptimizerConfig(const nlohmann::json& json);
Result<ScheduleConfig> ParseScheduleConfig(const nlohmann::json& json);
// The `data` and `train` members alone (a run spec's, run_spec.h); `path` names the member in
// messages.
Result<DataConfig> ParseDataConfig(const nlohmann::json& json, const std::string& path);
Result<TrainConfig> ParseTrainConfig(const nlohmann::json& json, const std::string& path);

}  // namespace detrain::frontend

#endif  // DETRAIN_FRONTEND_RUN_CONFIG_H_
