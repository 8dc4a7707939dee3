// The typed run configuration: every field parsed, Json(Parse(j)) == j for every kind of every
// part, the golden stage-1 headers of the examples reproduced byte for byte from their parse,
// and a specific error, naming the field, for each kind of bad value.
#include "frontend/run_config.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "attest/canonical_json.h"

namespace detrain::frontend {
namespace {

using Json = nlohmann::json;

// A resolved configuration with a value in every field (csv data, momentum with clipping).
Json Full() {
  return Json::parse(R"({
    "format": "detrain.program-config.v1",
    "batch_dim": "B",
    "data": {"as": "d", "label": 0, "name": "csv", "path": "x.csv", "skip_rows": 2,
             "standardize": true, "validation": 0.25},
    "metrics": ["loss", "accuracy"],
    "optimizer": {"name": "momentum", "momentum": 0.8, "nesterov": true, "clip_norm": 2.5,
                  "learning_rate": {"name": "linear", "init": 0.5, "end": 0.125, "steps": 40}},
    "params": [{"name": "w", "type": "f32[3,2]", "init": {"name": "normal", "stddev": 0.5}},
               {"name": "b", "type": "f32[2]", "init": {"name": "constant", "value": -1.5}},
               {"name": "v", "type": "f32[2,2]", "init": {"name": "lecun_normal"}}],
    "resolved": {"rows": 10, "train_rows": 8, "validation_rows": 2,
                 "files": [{"path": "x.csv", "sha256":
                   "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff"}]},
    "train": {"batch": 4, "shards": 2, "seed": 9007199254740993, "checkpoint_every": 5,
              "eval_every": 3, "prng": "original", "epochs": 3, "steps": 6}
  })");
}

std::string Canonical(const Json& j) { return *attest::CanonicalJson(j); }

TEST(RunConfigTest, ParsesEveryField) {
  Result<RunConfig> r = ParseRunConfig(Full());
  ASSERT_TRUE(r.ok()) << r.status().message();
  const RunConfig& c = *r;
  EXPECT_EQ(c.batch_dim, "B");
  EXPECT_EQ(c.data.kind, DataSourceKind::kCsv);
  EXPECT_EQ(c.data.as, "d");
  EXPECT_EQ(c.data.path, "x.csv");
  EXPECT_EQ(c.data.label, ColumnRef(int64_t{0}));
  EXPECT_FALSE(c.data.header);
  EXPECT_TRUE(c.data.columns.empty());
  EXPECT_EQ(c.data.skip_rows, 2);
  EXPECT_TRUE(c.data.standardize);
  EXPECT_EQ(c.data.validation, 0.25);
  EXPECT_EQ(c.metrics, (std::vector<Metric>{Metric::kLoss, Metric::kAccuracy}));
  EXPECT_EQ(c.optimizer.kind, OptimizerKind::kMomentum);
  EXPECT_EQ(c.optimizer.momentum, 0.8);
  EXPECT_TRUE(c.optimizer.nesterov);
  EXPECT_EQ(c.optimizer.clip_norm, 2.5);
  EXPECT_EQ(c.optimizer.learning_rate.kind, ScheduleKind::kLinear);
  EXPECT_EQ(c.optimizer.learning_rate.init, 0.5);
  EXPECT_EQ(c.optimizer.learning_rate.end, 0.125);
  EXPECT_EQ(c.optimizer.learning_rate.steps, 40);
  ASSERT_EQ(c.params.size(), 3u);
  EXPECT_EQ(c.params[0].name, "w");
  EXPECT_EQ(c.params[0].type, "f32[3,2]");
  EXPECT_EQ(c.params[0].init.kind, InitializerKind::kNormal);
  EXPECT_EQ(c.params[0].init.stddev, 0.5);
  EXPECT_EQ(c.params[1].init.kind, InitializerKind::kConstant);
  EXPECT_EQ(c.params[1].init.value, -1.5);
  EXPECT_EQ(c.params[2].init.kind, InitializerKind::kLecunNormal);
  ASSERT_TRUE(c.resolved.has_value());
  EXPECT_EQ(c.resolved->rows, 10);
  EXPECT_EQ(c.resolved->train_rows, 8);
  EXPECT_EQ(c.resolved->validation_rows, 2);
  ASSERT_EQ(c.resolved->files.size(), 1u);
  EXPECT_EQ(c.resolved->files[0].path, "x.csv");
  EXPECT_EQ(c.train.batch, 4);
  EXPECT_EQ(c.train.shards, 2);
  EXPECT_EQ(c.train.seed, 9007199254740993);  // above 2^53: must not pass through a double
  EXPECT_EQ(c.train.checkpoint_every, 5);
  EXPECT_EQ(c.train.eval_every, 3);
  EXPECT_EQ(c.train.prng, PrngMode::kOriginal);
  EXPECT_EQ(c.train.epochs, 3);
  EXPECT_EQ(c.train.steps, 6);
  EXPECT_EQ(OptimizerSlots(c.optimizer.kind), 1);
  EXPECT_EQ(Canonical(RunConfigJson(c)), Canonical(Full()));
}

// Each variant of each part replaces its part of Full(); the JSON must come back unchanged.
TEST(RunConfigTest, EveryKindRoundTrips) {
  const std::vector<std::pair<std::string, std::string>> variants = {
      {"data", R"({"as": "d", "name": "npy", "features": "x.npy", "labels": "y.npy",
                  "standardize": false, "validation": 0})"},
      {"data", R"({"as": "d", "name": "text", "path": "c.txt", "context": 16, "validation": 0.1})"},
      {"data", R"({"as": "d", "name": "csv", "path": "h.csv", "header": true, "label": "y",
                  "columns": ["b", 0, -1], "skip_rows": 0, "standardize": false,
                  "validation": 0})"},
      {"data", R"({"as": "d", "name": "csv", "path": "h.csv", "label": 3, "columns": [1, -1],
                  "skip_rows": 0, "standardize": true, "validation": 0})"},
      {"data", R"({"as": "d", "name": "npz", "path": "d.npz", "features": "x", "labels": "y",
                  "standardize": true, "validation": 0.5})"},
      {"optimizer", R"({"name": "sgd", "learning_rate": {"name": "constant", "value": 0.1}})"},
      {"optimizer", R"({"name": "adam", "b1": 0.9, "b2": 0.999, "eps": 1e-8,
                       "learning_rate": {"name": "cosine_decay", "init": 0.1, "decay_steps": 10,
                                         "alpha": 0.5}})"},
      {"optimizer", R"({"name": "adamw", "b1": 0.9, "b2": 0.99, "eps": 0, "weight_decay": 0.01,
                       "clip_norm": 1,
                       "learning_rate": {"name": "warmup_cosine_decay", "init": 0, "peak": 0.003,
                                         "warmup_steps": 2, "decay_steps": 30, "end": 0}})"},
      {"train", R"({"batch": 8, "shards": 8, "seed": 0, "checkpoint_every": 0, "eval_every": 0,
                   "prng": "partitionable", "epochs": 2})"},
      {"metrics", "[]"},
  };
  for (const auto& [part, text] : variants) {
    const Json value = Json::parse(text);
    Json j = Full();
    j[part] = value;
    Result<RunConfig> r = ParseRunConfig(j);
    ASSERT_TRUE(r.ok()) << value.dump() << ": " << r.status().message();
    EXPECT_EQ(Canonical(RunConfigJson(*r)), Canonical(j)) << value.dump();
  }
  Json unresolved = Full();
  unresolved.erase("resolved");
  Result<RunConfig> r = ParseRunConfig(unresolved);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_FALSE(r->resolved.has_value());
  EXPECT_EQ(Canonical(RunConfigJson(*r)), Canonical(unresolved));
}

// The stage-1 header of each example, as its golden holds it, parses and prints back to the
// same bytes: the typed configuration changes no digest, and a verifier can read stage 1 back.
TEST(RunConfigTest, GoldenHeadersRoundTripByteForByte) {
  for (const char* example : {"breast_cancer", "digits", "charlm"}) {
    std::ifstream f(std::string(DETRAIN_SOURCE_DIR) + "/tests/frontend/testdata/golden/" + example +
                    "/source.txt");
    std::string line;
    std::getline(f, line);
    std::getline(f, line);
    const std::string prefix = "// config ";
    ASSERT_EQ(line.rfind(prefix, 0), 0u) << example;
    std::string header = line.substr(prefix.size());
    Result<Json> j = attest::ParseJson(header);
    ASSERT_TRUE(j.ok()) << j.status().message();
    Result<RunConfig> c = ParseRunConfig(*j);
    ASSERT_TRUE(c.ok()) << example << ": " << c.status().message();
    Result<std::string> again = CanonicalRunConfig(*c);
    ASSERT_TRUE(again.ok());
    EXPECT_EQ(*again, header) << example;
  }
}

struct BadCase {
  std::string pointer;  // JSON pointer into Full(); the member is removed when value is null
  Json value;
  std::string message;
};

TEST(RunConfigTest, BadValuesNameTheField) {
  const BadCase cases[] = {
      {"/format", "detrain.program-config.v0",
       "format: expected \"detrain.program-config.v1\", found \"detrain.program-config.v0\""},
      {"/batch_dim", nullptr, "batch_dim: missing"},
      {"/extra", 1, "extra: unexpected member"},
      {"/train/shards", 3, "train.shards: must be a power of two (1, 2, 4, 8, ...), found 3"},
      {"/train/batch", 0, "train.batch: must be >= 1, found 0"},
      {"/train/steps", 100000000,
       "train.steps: must be at most 99999999 (checkpoint names have eight digits), found "
       "100000000"},
      {"/train/steps", 0, "train.steps: must be >= 1, found 0"},
      {"/train/shards", 2048, "train.shards: must be at most 1024, found 2048"},
      {"/train/batch", 5, "train.batch: 5 is not divisible by shards 2"},
      {"/train/seed", 1.5, "train.seed: expected an integer, found 1.5"},
      {"/train/seed", -1, "train.seed: must be >= 0, found -1"},
      {"/train/seed", 18446744073709551615u,
       "train.seed: expected an integer, found 18446744073709551615"},
      {"/train/prng", "fast", "train.prng: unknown 'fast' (expected partitionable or original)"},
      {"/train/eval_every", "often", "train.eval_every: expected an integer, found \"often\""},
      {"/optimizer/momentum", 1, "optimizer.momentum: must be in [0, 1), found 1"},
      {"/optimizer/nesterov", 1, "optimizer.nesterov: expected true or false, found 1"},
      {"/optimizer/b1", 0.9, "optimizer.b1: unexpected member"},
      {"/optimizer/clip_norm", 0, "optimizer.clip_norm: must be a positive number, found 0"},
      {"/optimizer/name", "lamb",
       "optimizer.name: unknown 'lamb' (expected sgd, momentum, adam, adamw or in-program)"},
      {"/optimizer/learning_rate/steps", 0, "optimizer.learning_rate.steps: must be >= 1, found 0"},
      {"/optimizer/learning_rate/init", -0.5,
       "optimizer.learning_rate.init: must be a number >= 0, found -0.5"},
      {"/data/validation", 1, "data.validation: must be in [0, 1), found 1"},
      {"/data/name", "parquet", "data.name: unknown 'parquet' (expected csv, npy, npz or text)"},
      {"/data/header", false, "data.header: is written only when true, found false"},
      {"/data/header", 1, "data.header: expected true or false, found 1"},
      {"/data/label", 1.5, "data.label: expected a column index or name, found 1.5"},
      {"/data/label", "y", "data.label: column \"y\" is a name, which needs header = true"},
      {"/data/columns", Json::array(),
       "data.columns: columns must list at least one feature column"},
      {"/data/columns", Json::object(), "data.columns: expected an array, found {}"},
      {"/data/columns", Json::array({"a"}),
       "data.columns[0]: column \"a\" is a name, which needs header = true"},
      {"/data/columns", Json::array({1, true}),
       "data.columns[1]: expected a column index or name, found true"},
      {"/data/columns", Json::array({1, 1}), "data.columns[1]: column 1 is listed twice"},
      {"/data/columns", Json::array({0}),
       "data.columns[0]: column 0 is the label; it cannot also be a feature"},
      {"/data/context", 8, "data.context: unexpected member"},
      {"/data/path", "", "data.path: must not be empty"},
      {"/params/0/init/name", "xavier",
       "params[0].init.name: unknown 'xavier' (expected zeros, ones, glorot_uniform, "
       "glorot_normal, "
       "he_uniform, he_normal, lecun_normal, normal or constant)"},
      {"/params/0/init/stddev", 0, "params[0].init.stddev: must be a positive number, found 0"},
      {"/params/1/name", nullptr, "params[1].name: missing"},
      {"/metrics/0", "f1", "metrics[0]: unknown metric \"f1\" (expected accuracy or loss)"},
      {"/resolved/rows", 11, "resolved.rows: 11 is not train_rows + validation_rows (10)"},
      {"/resolved/files/0/sha256", "ABC",
       "resolved.files[0].sha256: expected 64 lowercase hex digits"},
  };
  for (const BadCase& c : cases) {
    Json j = Full();
    Json::json_pointer p(c.pointer);
    if (c.value.is_null()) {
      j[p.parent_pointer()].erase(p.back());
    } else {
      j[p] = c.value;
    }
    Result<RunConfig> r = ParseRunConfig(j);
    ASSERT_FALSE(r.ok()) << c.pointer;
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument) << c.pointer;
    EXPECT_EQ(r.status().message(), "run config: " + c.message) << c.pointer;
  }
}

// The limits are those of a .dt program's train(...) (frontend::TrainFieldProblem): the largest
// step count is accepted in every form, one more in none.
TEST(RunConfigTest, TrainLimitsAreTheProgramsAtTheBoundary) {
  Json j = Full();
  j["train"]["steps"] = kMaxSteps;
  Result<RunConfig> r = ParseRunConfig(j);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->train.steps, kMaxSteps);
  EXPECT_EQ(TrainFieldProblem("steps", kMaxSteps), "");
  EXPECT_NE(TrainFieldProblem("steps", kMaxSteps + 1), "");
  EXPECT_EQ(TrainFieldProblem("shards", 1024), "");
  EXPECT_NE(TrainFieldProblem("shards", 2048), "");
  EXPECT_NE(TrainFieldProblem("shards", 0), "");
  EXPECT_EQ(TrainFieldProblem("seed", 0), "");
  EXPECT_NE(TrainFieldProblem("seed", -1), "");
}

TEST(RunConfigTest, NpzFields) {
  Json j = Full();
  j["data"] = Json::parse(R"({"as": "d", "name": "npz", "path": "d.npz", "features": "f",
                              "labels": "l", "standardize": false, "validation": 0})");
  Result<RunConfig> r = ParseRunConfig(j);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->data.kind, DataSourceKind::kNpz);
  EXPECT_EQ(r->data.path, "d.npz");
  EXPECT_EQ(r->data.features, "f");
  EXPECT_EQ(r->data.labels, "l");
  EXPECT_EQ(DataSourceName(r->data.kind), "npz");
  for (const char* member : {"path", "features", "labels"}) {
    Json bad = j;
    bad["data"][member] = "";
    r = ParseRunConfig(bad);
    ASSERT_FALSE(r.ok()) << member;
    EXPECT_EQ(r.status().message(),
              "run config: data." + std::string(member) + ": must not be empty");
  }
  j["data"]["skip_rows"] = 0;
  r = ParseRunConfig(j);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), "run config: data.skip_rows: unexpected member");
}

// Parse(Json(c)) == c for the CSV column fields, compared field by field.
TEST(RunConfigTest, CsvColumnsRoundTripTyped) {
  RunConfig c = *ParseRunConfig(Full());
  c.data.header = true;
  c.data.label = "target";
  c.data.columns = {"b", int64_t{-3}, "a"};
  Result<RunConfig> again = ParseRunConfig(RunConfigJson(c));
  ASSERT_TRUE(again.ok()) << again.status().message();
  EXPECT_TRUE(again->data.header);
  EXPECT_EQ(again->data.label, c.data.label);
  EXPECT_EQ(again->data.columns, c.data.columns);
  EXPECT_EQ(Canonical(RunConfigJson(*again)), Canonical(RunConfigJson(c)));
}

TEST(RunConfigTest, StructuralErrors) {
  Result<RunConfig> r = ParseRunConfig(Json::array());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), "run config: the configuration: expected an object, found array");
  Json j = Full();
  j["train"].erase("steps");
  j["train"].erase("epochs");
  r = ParseRunConfig(j);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), "run config: train.steps: give steps or epochs");
  j = Full();
  j["optimizer"]["learning_rate"] = Json::parse(R"({"name": "warmup_cosine_decay", "init": 0,
      "peak": 1, "warmup_steps": 9, "decay_steps": 9, "end": 0})");
  r = ParseRunConfig(j);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(
      r.status().message(),
      "run config: optimizer.learning_rate.warmup_steps: must be smaller than decay_steps (9), "
      "found 9");
  j = Full();
  j["params"] = Json::object();
  r = ParseRunConfig(j);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), "run config: params: expected an array, found object");
}

}  // namespace
}  // namespace detrain::frontend
