// The run spec reader (frontend/run_spec.h, schemas/run-spec.md): a valid spec read field by
// field, and every rule a hostile or mistaken spec breaks refused with a message naming the
// member (or the line and column of a JSON syntax error).
#include "frontend/run_spec.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace detrain::frontend {
namespace {

using plan::ParamRole;
using Json = nlohmann::json;

Json Valid() {
  return Json::parse(R"({
    "format": "detrain.run-spec", "format_version": 1,
    "train_step": "step.hlo", "initial_state": "init.safetensors",
    "entry": [{"role": "parameter", "name": "w"}, {"role": "optimizer-state", "name": "w_m"},
              {"role": "step", "name": "count"},
              {"role": "batch"}, {"role": "labels"}, {"role": "key"}],
    "data": {"name": "npy", "as": "d", "features": "x.npy", "labels": "y.npy",
             "standardize": false, "validation": 0},
    "train": {"steps": 10, "batch": 4, "shards": 1, "seed": 7, "checkpoint_every": 5,
              "eval_every": 0, "prng": "partitionable"},
    "exporter": {"tool": "tools/export_jax.py", "jax": "0.10.2"}})");
}

// The error message of parsing `j` (which must fail).
std::string ErrorOf(const Json& j) {
  Result<RunSpec> r = ParseRunSpec(j.dump(), "s.json");
  EXPECT_FALSE(r.ok()) << j.dump();
  return r.ok() ? "" : r.status().message();
}

TEST(RunSpecTest, ReadsEveryField) {
  Result<RunSpec> r = ParseRunSpec(Valid().dump(2), "s.json");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->train_step, "step.hlo");
  EXPECT_EQ(r->initial_state, "init.safetensors");
  ASSERT_EQ(r->entry.size(), 6u);
  EXPECT_EQ(r->entry[0].role, ParamRole::kParameter);
  EXPECT_EQ(r->entry[0].name, "w");
  EXPECT_EQ(r->entry[1].role, ParamRole::kOptimizerState);
  EXPECT_EQ(r->entry[2].role, ParamRole::kStep);
  EXPECT_EQ(r->entry[3].role, ParamRole::kBatch);
  EXPECT_EQ(r->entry[3].name, "");
  EXPECT_EQ(r->entry[5].role, ParamRole::kKey);
  EXPECT_EQ(r->data.kind, DataSourceKind::kNpy);
  EXPECT_EQ(r->data.features, "x.npy");
  EXPECT_EQ(r->train.steps, 10);
  EXPECT_EQ(r->train.batch, 4);
  EXPECT_EQ(r->train.seed, 7);
  EXPECT_EQ(r->train.checkpoint_every, 5);
  EXPECT_TRUE(IsStateRole(ParamRole::kStep));
  EXPECT_FALSE(IsStateRole(ParamRole::kKey));
}

TEST(RunSpecTest, RefusesWhatTheFormatDoesNotSay) {
  struct Case {
    std::string pointer;  // JSON pointer of the member to set
    Json value;
    std::string message;
  };
  const Case cases[] = {
      {"/format", "detrain.program", "run spec: format: expected \"detrain.run-spec\""},
      {"/format_version", 2, "format_version: this detrain reads version 1, found 2"},
      {"/format_version", "1", "format_version: this detrain reads version 1, found \"1\""},
      {"/train_step", "../step.hlo", "train_step: \"../step.hlo\" must be a file name"},
      {"/train_step", "dir/step.hlo", "must be a file name in the spec's directory"},
      {"/initial_state", "", "initial_state: \"\" must be a file name"},
      {"/initial_state", 3, "initial_state: expected a string, found 3"},
      {"/entry", Json::object(), "entry: expected an array"},
      {"/entry/0/role", "weights", "entry[0].role: unknown role \"weights\" (expected parameter,"},
      {"/entry/0/name", "w_m", "entry[1].name: \"w_m\" names two entries"},
      {"/entry/0/name", "", "entry[0].name: must not be empty"},
      {"/entry/3/name", "x", "entry[3].name: only state entries"},
      {"/entry/4/role", "batch", "entry[4].role: a second batch entry"},
      {"/entry/1/role", "step", "entry[2].role: a second step entry"},
      {"/entry/0/extra", 1, "entry[0].extra: unexpected member"},
      {"/train/shards", 2, "train.shards: must be 1"},
      {"/train/eval_every", 5, "train.eval_every: must be 0"},
      {"/train/batch", 0, "train.batch: must be >= 1"},
      {"/data/validation", 0.2, "data.validation: must be 0"},
      {"/data/name", "parquet", "data.name: unknown 'parquet'"},
      {"/exporter/jax", 10, "exporter.jax: expected a string"},
      {"/exporter/host", "x", "exporter.host: unexpected member"},
      {"/comment", "hello", "run spec: comment: unexpected member"},
  };
  for (const Case& c : cases) {
    Json j = Valid();
    j[Json::json_pointer(c.pointer)] = c.value;
    const std::string m = ErrorOf(j);
    EXPECT_NE(m.find(c.message), std::string::npos) << c.pointer << ": " << m;
    EXPECT_EQ(m.rfind("s.json: ", 0), 0u) << m;
  }
}

TEST(RunSpecTest, NeedsAParameterABatchAndLabels) {
  Json j = Valid();
  j["entry"] = Json::array({Json{{"role", "batch"}}, Json{{"role", "labels"}}});
  EXPECT_NE(ErrorOf(j).find("no parameter entry"), std::string::npos);
  j["entry"] = Json::array({Json{{"role", "parameter"}, {"name", "w"}}, Json{{"role", "batch"}}});
  EXPECT_NE(ErrorOf(j).find("needs one batch and one labels entry"), std::string::npos);
  j = Valid();
  j.erase("data");
  EXPECT_NE(ErrorOf(j).find("run spec: data: missing"), std::string::npos);
  j = Valid();
  j["train_step"] = "init.safetensors";
  Result<RunSpec> same = ParseRunSpec(j.dump(), "s.json");
  // The reader allows it; the driver refuses two roles for one file (run_spec_import_test.cc).
  EXPECT_TRUE(same.ok());
}

TEST(RunSpecTest, SyntaxErrorsGiveLineAndColumn) {
  Result<RunSpec> r = ParseRunSpec("{\n  \"format\": \"detrain.run-spec\",\n  oops\n}", "s.json");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message().rfind("s.json:3:3: run spec: invalid JSON", 0), 0u)
      << r.status().message();
  for (std::string text : {std::string(""), std::string("[]"), std::string("null"),
                           std::string(100000, '['), std::string("{\"a\":1e999}")}) {
    Result<RunSpec> bad = ParseRunSpec(text, "s.json");
    ASSERT_FALSE(bad.ok()) << text.substr(0, 20);
    EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument) << bad.status().message();
  }
}

TEST(RunSpecTest, TooManyEntriesAreRefusedBeforeTheyAreRead) {
  Json j = Valid();
  Json entries = Json::array();
  for (size_t i = 0; i <= kMaxRunSpecEntries; ++i) entries.push_back(Json{{"role", "batch"}});
  j["entry"] = entries;
  EXPECT_NE(ErrorOf(j).find("more than 65536"), std::string::npos);
}

TEST(RunSpecTest, PlainFileNames) {
  EXPECT_TRUE(IsPlainFileName("train_step.hlo"));
  EXPECT_TRUE(IsPlainFileName("..hidden"));
  const std::string_view bads[] = {
      "", ".", "..", "a/b", "/abs", "a\\b", std::string_view("a\0b", 3)};
  for (std::string_view bad : bads) EXPECT_FALSE(IsPlainFileName(bad)) << bad;
  EXPECT_FALSE(IsPlainFileName(std::string(256, 'a')));
}

}  // namespace
}  // namespace detrain::frontend
