// The .dt front end: every error class a user can hit, with its exact message and position,
// and the configuration the checker derives from a valid program.
#include "frontend/check.h"

#include <gtest/gtest.h>

#include <string>

#include "frontend/parser.h"

namespace detrain::frontend {
namespace {

// A valid program; each error case edits one piece of it.
constexpr const char* kValid = R"(data d = csv("x.csv", label = -1, validation = 0.25)
param w1: f32[30, 64] = glorot_uniform
param b1: f32[64] = zeros
param w2: f32[64, 2] = normal(stddev = 0.02)
param b2: f32[2] = zeros
def logits(x: f32[N, 30]) -> f32[N, 2] {
  return relu(x @ w1 + b1) @ w2 + b2
}
def loss(x: f32[B, 30], y: s32[B], key) -> f32[] {
  h = dropout(relu(x @ w1 + b1), rate = 0.1, key = key)
  return mean(softmax_cross_entropy(h @ w2 + b2, y)) + 0 * mean(logits(x))
}
def predict(x: f32[B, 30]) -> f32[B, 2] {
  return logits(x)
}
metrics = [accuracy]
optimizer = adamw(learning_rate = warmup_cosine_decay(init = 0, peak = 1e-3, warmup_steps = 10, decay_steps = 100))
train(steps = 100, batch = 64, shards = 8, seed = 7)
)";

Result<CheckedProgram> CheckText(const SourceFile& src, Program* storage) {
  DETRAIN_ASSIGN_OR_RETURN(*storage, Parse(src));
  return Check(src, *storage);
}

// Replaces the first occurrence of `from` in kValid with `to` and returns the first line of the
// resulting error ("" when the program checks).
std::string FirstErrorLine(const std::string& from, const std::string& to) {
  std::string text = kValid;
  size_t at = text.find(from);
  if (at == std::string::npos) return "test bug: '" + from + "' not in program";
  text.replace(at, from.size(), to);
  SourceFile src("p.dt", text);
  Program program;
  Result<CheckedProgram> r = CheckText(src, &program);
  if (r.ok()) return "";
  const std::string& m = r.status().message();
  return m.substr(0, m.find('\n'));
}

TEST(CheckTest, ValidProgramYieldsConfig) {
  SourceFile src("p.dt", kValid);
  Program program;
  Result<CheckedProgram> r = CheckText(src, &program);
  ASSERT_TRUE(r.ok()) << r.status().message();
  const auto& c = r->config;
  EXPECT_EQ(c.train.batch, 64);
  EXPECT_EQ(c.train.shards, 8);
  EXPECT_EQ(c.train.steps, 100);
  EXPECT_FALSE(c.train.epochs.has_value());
  EXPECT_EQ(c.train.seed, 7);
  EXPECT_EQ(c.train.prng, PrngMode::kPartitionable);
  EXPECT_EQ(c.train.checkpoint_every, 0);
  EXPECT_EQ(c.optimizer.kind, OptimizerKind::kAdamW);
  EXPECT_EQ(c.optimizer.weight_decay, 1e-4);
  EXPECT_FALSE(c.optimizer.clip_norm.has_value());
  EXPECT_EQ(c.optimizer.learning_rate.kind, ScheduleKind::kWarmupCosineDecay);
  EXPECT_EQ(c.optimizer.learning_rate.peak, 1e-3);
  EXPECT_EQ(c.optimizer.learning_rate.end, 0.0);
  ASSERT_EQ(c.params.size(), 4u);
  EXPECT_EQ(c.params[2].init.kind, InitializerKind::kNormal);
  EXPECT_EQ(c.params[2].init.stddev, 0.02);
  EXPECT_EQ(c.data.kind, DataSourceKind::kCsv);
  EXPECT_EQ(c.data.validation, 0.25);
  EXPECT_EQ(c.metrics, std::vector<Metric>{Metric::kAccuracy});
  EXPECT_EQ(c.batch_dim, "B");
  EXPECT_FALSE(c.resolved.has_value());  // the compile driver resolves the data
  ASSERT_EQ(r->params.size(), 4u);
  EXPECT_EQ(r->params[2].second.ToString(), "f32[64,2]");
  EXPECT_NE(r->predict, nullptr);
}

TEST(CheckTest, LexicalErrors) {
  EXPECT_EQ(FirstErrorLine("rate = 0.1", "rate = 0.1$"),
            "p.dt:10:44: error: unexpected character '$'");
  EXPECT_EQ(FirstErrorLine("\"x.csv\"", "\"x.csv"),
            "p.dt:1:14: error: unterminated string (expected '\"' before the end of the line)");
  EXPECT_EQ(FirstErrorLine("0.25", "0.25e"),
            "p.dt:1:48: error: malformed number: expected digits after the exponent");
  EXPECT_EQ(FirstErrorLine("0.25", "0.25x"), "p.dt:1:48: error: malformed number '0.25x'");
}

TEST(CheckTest, SyntaxErrors) {
  EXPECT_EQ(FirstErrorLine("param b1: f32[64]", "param b1 f32[64]"),
            "p.dt:3:10: error: expected ':' and the parameter's type, found 'f32'");
  EXPECT_EQ(FirstErrorLine("f32[64, 2] =", "f32[64 2] ="),
            "p.dt:4:18: error: expected ',' or ']', found number 2");
  EXPECT_EQ(FirstErrorLine("  return logits(x)\n", "  return logits(x\n"),
            "p.dt:15:1: error: expected ',' or ')', found '}'");
  EXPECT_EQ(FirstErrorLine("metrics =", "metric ="),
            "p.dt:16:1: error: expected a declaration (data, param, def, optimizer, metrics or "
            "train), found 'metric'");
  EXPECT_EQ(FirstErrorLine("-> f32[N, 2]", "f32[N, 2]"),
            "p.dt:6:27: error: expected '->' and the result type, found 'f32'");
  EXPECT_EQ(FirstErrorLine("label = -1, validation", "label = -1, 0.25, validation"),
            "p.dt:1:35: error: positional argument after keyword argument 'label'");
}

TEST(CheckTest, NameErrors) {
  EXPECT_EQ(FirstErrorLine("@ w2 + b2, y", "@ w3 + b2, y"),
            "p.dt:11:41: error: undefined name 'w3' (did you mean 'w1'?)");
  EXPECT_EQ(FirstErrorLine("param b2", "param b1"),
            "p.dt:5:7: error: parameter 'b1' is declared twice");
  EXPECT_EQ(
      FirstErrorLine("h = dropout(relu(", "h = dropout(reluu("),
      "p.dt:10:15: error: unknown function 'reluu' (not a layer or a function defined above; "
      "layers: relu, gelu, tanh, sigmoid, exp, log, sqrt, rsqrt, abs, sin, cos, softmax, "
      "log_softmax, softmax_cross_entropy, sigmoid_binary_cross_entropy, mse, mean, sum, dropout, "
      "layer_norm, conv2d, max_pool, avg_pool, reshape, flatten, embedding, attention, fold_in, "
      "accuracy)");
  EXPECT_EQ(FirstErrorLine("def loss", "def loss2"),
            "p.dt:19:1: error: missing 'def loss(...) -> f32[] { ... }': the function training "
            "minimizes");
  EXPECT_EQ(FirstErrorLine("h = dropout", "w1 = dropout"),
            "p.dt:10:3: error: cannot assign to parameter 'w1'");
}

TEST(CheckTest, ShapeAndTypeErrors) {
  EXPECT_EQ(
      FirstErrorLine("param w1: f32[30, 64]", "param w1: f32[31, 64]"),
      "p.dt:7:15: error: x @ w1: f32[N,30] @ f32[31,64]: contracted dimensions 30 and 31 differ");
  EXPECT_EQ(FirstErrorLine("param b1: f32[64]", "param b1: f32[63]"),
            "p.dt:7:15: error: x @ w1 + b1: f32[N,64] + f32[63]: dimensions 64 and 63 cannot be "
            "broadcast");
  EXPECT_EQ(
      FirstErrorLine("y: s32[B]", "y: f32[B]"),
      "p.dt:11:50: error: softmax_cross_entropy: labels must be s32 class indices, found f32[B]");
  EXPECT_EQ(FirstErrorLine("-> f32[] {", "-> f32[B] {"),
            "p.dt:11:10: error: loss returns f32[] but is declared -> f32[B]");
  EXPECT_EQ(FirstErrorLine("key = key)", "key = x)"),
            "p.dt:10:52: error: dropout: 'key' expects a key, found f32[B,30]");
  EXPECT_EQ(FirstErrorLine("mean(logits(x))", "mean(logits(y))"),
            "p.dt:11:72: error: logits: argument 'x' expects f32[N, 30], found s32[B]");
  EXPECT_EQ(FirstErrorLine("param w1: f32[30, 64]", "param w1: f32[K, 64]"),
            "p.dt:2:15: error: parameter shapes must be static, found the name 'K'");
  EXPECT_EQ(FirstErrorLine("param b2: f32[2]", "param b2: f64[2]"),
            "p.dt:5:11: error: unknown element type 'f64' (expected f32, s32 or pred)");
}

TEST(CheckTest, OptionErrors) {
  EXPECT_EQ(FirstErrorLine("label = -1", "lable = -1"),
            "p.dt:1:23: error: csv: unknown option 'lable' (expected one of: path, label, "
            "skip_rows, standardize, validation, header, columns)");
  EXPECT_EQ(
      FirstErrorLine("= glorot_uniform", "= glorot_uniformm"),
      "p.dt:2:25: error: unknown initializer 'glorot_uniformm' (expected one of: zeros, ones, "
      "glorot_uniform, glorot_normal, he_uniform, he_normal, lecun_normal, normal, constant)");
  EXPECT_EQ(FirstErrorLine("adamw(", "adagrad("),
            "p.dt:17:13: error: unknown optimizer 'adagrad' (expected one of: sgd, momentum, adam, "
            "adamw)");
  EXPECT_EQ(FirstErrorLine("rate = 0.1", "rate = 1.5"),
            "p.dt:10:41: error: dropout: rate must be in [0, 1), found 1.5");
  EXPECT_EQ(FirstErrorLine("rate = 0.1", "rate = \"high\""),
            "p.dt:10:41: error: dropout: 'rate' expects a number, found '\"high\"'");
  EXPECT_EQ(FirstErrorLine("rate = 0.1, ", ""),
            "p.dt:10:7: error: dropout: missing argument 'rate' (a number)");
  EXPECT_EQ(FirstErrorLine("param b1: f32[64] = zeros", "param b1: f32[64] = glorot_uniform"),
            "p.dt:3:21: error: glorot_uniform needs a parameter of rank >= 2 (it uses fan-in and "
            "fan-out), found f32[64]; use zeros, ones or normal");
}

// The data source line of kValid with its options replaced.
std::string DataError(const std::string& source) {
  return FirstErrorLine("csv(\"x.csv\", label = -1, validation = 0.25)", source);
}

TEST(CheckTest, DataSourceOptionErrors) {
  EXPECT_EQ(DataError("csv(\"x.csv\", label = \"y\")"),
            "p.dt:1:31: error: csv: column \"y\" is a name, which needs header = true");
  EXPECT_EQ(DataError("csv(\"x.csv\", header = true, label = \"\")"),
            "p.dt:1:46: error: csv: a column name must not be empty");
  EXPECT_EQ(DataError("csv(\"x.csv\", label = 1.5)"),
            "p.dt:1:31: error: csv: 'label' expects a column index or name, found '1.5'");
  EXPECT_EQ(DataError("csv(\"x.csv\", columns = [])"),
            "p.dt:1:33: error: csv: columns must list at least one feature column");
  EXPECT_EQ(DataError("csv(\"x.csv\", columns = 3)"),
            "p.dt:1:33: error: csv: 'columns' expects a list of column indices or names, found "
            "'3'");
  EXPECT_EQ(DataError("csv(\"x.csv\", columns = [0, 1.5])"),
            "p.dt:1:37: error: csv: a column is an index (an integer) or a name (a string), found "
            "'1.5'");
  EXPECT_EQ(DataError("csv(\"x.csv\", columns = [0, \"a\"])"),
            "p.dt:1:37: error: csv: column \"a\" is a name, which needs header = true");
  EXPECT_EQ(DataError("csv(\"x.csv\", header = true, columns = [\"a\", \"b\", \"a\"])"),
            "p.dt:1:59: error: csv: column \"a\" is listed twice");
  EXPECT_EQ(DataError("csv(\"x.csv\", columns = [0, -1])"),
            "p.dt:1:37: error: csv: column -1 is the label; it cannot also be a feature");
  EXPECT_EQ(DataError("csv(\"x.csv\", header = true, label = \"y\", columns = [\"y\"])"),
            "p.dt:1:62: error: csv: column \"y\" is the label; it cannot also be a feature");
  EXPECT_EQ(DataError("npz(\"\")"), "p.dt:1:14: error: npz: the path must not be empty");
  EXPECT_EQ(DataError("npz(\"d.npz\", labels = \"\")"),
            "p.dt:1:32: error: npz: an array name must not be empty");
  EXPECT_EQ(DataError("npz(\"d.npz\", validation = -0.5)"),
            "p.dt:1:36: error: npz: must be in [0, 1), found -0.5");
  EXPECT_EQ(DataError("npz(\"d.npz\", label = \"y\")"),
            "p.dt:1:23: error: npz: unknown option 'label' (expected one of: path, features, "
            "labels, standardize, validation)");
  EXPECT_EQ(DataError("parquet(\"d\")"),
            "p.dt:1:10: error: unknown data source 'parquet' (expected one of: csv, npy, npz, "
            "text)");
}

// The data source options as the checker records them, and the JSON it writes for them.
TEST(CheckTest, DataSourceConfig) {
  struct Case {
    std::string source;
    std::string json;  // the "data" member of the canonical configuration
  };
  const Case cases[] = {
      {"csv(\"x.csv\", label = -1, validation = 0.25)",
       R"({"as":"d","label":-1,"name":"csv","path":"x.csv","skip_rows":0,"standardize":false,)"
       R"("validation":0.25})"},
      {"csv(\"x.csv\", header = false)",
       R"({"as":"d","label":-1,"name":"csv","path":"x.csv","skip_rows":0,"standardize":false,)"
       R"("validation":0})"},
      {"csv(\"x.csv\", header = true, label = \"y\", columns = [\"b\", 0, -2], skip_rows = 1)",
       R"({"as":"d","columns":["b",0,-2],"header":true,"label":"y","name":"csv","path":"x.csv",)"
       R"("skip_rows":1,"standardize":false,"validation":0})"},
      {"npz(\"d.npz\")",
       R"({"as":"d","features":"x","labels":"y","name":"npz","path":"d.npz","standardize":false,)"
       R"("validation":0})"},
      {"npz(\"d.npz\", features = \"inputs\", labels = \"targets\", standardize = true)",
       R"({"as":"d","features":"inputs","labels":"targets","name":"npz","path":"d.npz",)"
       R"("standardize":true,"validation":0})"},
  };
  for (const Case& c : cases) {
    std::string text = kValid;
    const std::string from = "csv(\"x.csv\", label = -1, validation = 0.25)";
    text.replace(text.find(from), from.size(), c.source);
    SourceFile src("p.dt", text);
    Program program;
    Result<CheckedProgram> r = CheckText(src, &program);
    ASSERT_TRUE(r.ok()) << c.source << ": " << r.status().message();
    Result<std::string> canonical = CanonicalRunConfig(r->config);
    ASSERT_TRUE(canonical.ok());
    const std::string key = "\"data\":";
    size_t at = canonical->find(key) + key.size();
    EXPECT_EQ(canonical->substr(at, canonical->find('}', at) + 1 - at), c.json) << c.source;
  }
  SourceFile src("p.dt", std::string(kValid).replace(
                             0, std::string(kValid).find(')') + 1,
                             "data d = csv(\"x.csv\", header = true, label = \"y\", columns = "
                             "[\"b\", 0])"));
  Program program;
  Result<CheckedProgram> r = CheckText(src, &program);
  ASSERT_TRUE(r.ok()) << r.status().message();
  const DataConfig& d = r->config.data;
  EXPECT_TRUE(d.header);
  EXPECT_EQ(d.label, ColumnRef("y"));
  EXPECT_EQ(d.columns, (std::vector<ColumnRef>{"b", int64_t{0}}));
}

TEST(CheckTest, HyperparameterErrors) {
  EXPECT_EQ(FirstErrorLine("batch = 64", "batch = 60"),
            "p.dt:18:28: error: train: batch 60 is not divisible by shards 8");
  EXPECT_EQ(FirstErrorLine("shards = 8", "shards = 6"),
            "p.dt:18:41: error: train: shards must be a power of two (1, 2, 4, 8, ...), found 6");
  EXPECT_EQ(FirstErrorLine("train(steps = 100, ", "train("),
            "p.dt:18:1: error: train: give exactly one of steps = N or epochs = N");
  EXPECT_EQ(FirstErrorLine("train(steps = 100", "train(steps = 100, epochs = 2"),
            "p.dt:18:1: error: train: give exactly one of steps = N or epochs = N");
  EXPECT_EQ(FirstErrorLine("peak = 1e-3", "peak = -1e-3"),
            "p.dt:17:72: error: warmup_cosine_decay: must be >= 0, found -1e-3");
  EXPECT_EQ(FirstErrorLine(
                "warmup_cosine_decay(init = 0, peak = 1e-3, warmup_steps = 10, decay_steps = 100)",
                "-0.1"),
            "p.dt:17:35: error: adamw: learning_rate must be positive, found -0.1");
  EXPECT_EQ(FirstErrorLine("validation = 0.25", "validation = 1"),
            "p.dt:1:48: error: csv: must be in [0, 1), found 1");
  EXPECT_EQ(FirstErrorLine("stddev = 0.02", "stddev = 0"),
            "p.dt:4:40: error: normal: must be a positive number, found 0");
  EXPECT_EQ(FirstErrorLine("seed = 7", "seed = -7"),
            "p.dt:18:51: error: train: seed must be >= 0, found -7");
}

TEST(CheckTest, StructureErrors) {
  EXPECT_EQ(FirstErrorLine("metrics = [accuracy]", "metrics = [precision]"),
            "p.dt:16:12: error: unknown metric 'precision' (expected accuracy or loss)");
  EXPECT_EQ(
      FirstErrorLine("def predict", "def predict2"),
      "p.dt:19:1: error: the accuracy metric needs 'def predict(features...) -> f32[B, classes]'");
  EXPECT_EQ(FirstErrorLine("optimizer = ", "optimizer = sgd(learning_rate = 1)\noptimizer = "),
            "p.dt:18:1: error: 'optimizer' is given twice");
  EXPECT_EQ(
      FirstErrorLine("data d", "data e = npy(features = \"a.npy\", labels = \"b.npy\")\ndata d"),
      "p.dt:2:6: error: only one data source is supported; split it with validation = F");
  EXPECT_EQ(FirstErrorLine("  return logits(x)\n", "  y = logits(x)\n"),
            "p.dt:13:1: error: function 'predict' must end with a return statement");
}

}  // namespace
}  // namespace detrain::frontend
