// The run spec path of the compile driver (driver/run_spec_import.cc, schemas/run-spec.md): a
// hand-written HLO train step (linear regression by SGD with an update counter) becomes stages
// 0, 1, 2, init, 3 and 4 with the spec's roles; every mismatch between the spec, the HLO, the
// initial state and the data is refused with a message naming the file and the entry.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "base/npy.h"
#include "base/safetensors.h"
#include "driver/compile.h"
#include "test_util.h"

namespace detrain::driver {
namespace {

using plan::ParamRole;
using Json = nlohmann::json;

constexpr char kStep[] = R"(HloModule tiny_step

add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}

ENTRY step {
  w = f32[3] parameter(0)
  count = s32[] parameter(1)
  x = f32[4,3] parameter(2)
  y = f32[4] parameter(3)
  pred = f32[4] dot(x, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  err = f32[4] subtract(pred, y)
  sq = f32[4] multiply(err, err)
  zero = f32[] constant(0)
  sum = f32[] reduce(sq, zero), dimensions={0}, to_apply=add
  n = f32[] constant(4)
  loss = f32[] divide(sum, n)
  g = f32[3] dot(err, x), lhs_contracting_dims={0}, rhs_contracting_dims={0}
  lr = f32[] constant(0.05)
  lrb = f32[3] broadcast(lr), dimensions={}
  upd = f32[3] multiply(g, lrb)
  w2 = f32[3] subtract(w, upd)
  one = s32[] constant(1)
  c2 = s32[] add(count, one)
  ROOT r = (f32[3], s32[], f32[]) tuple(w2, c2, loss)
}
)";

Json Spec() {
  return Json::parse(R"({
    "format": "detrain.run-spec", "format_version": 1,
    "train_step": "step.hlo", "initial_state": "init.safetensors",
    "entry": [{"role": "parameter", "name": "w"}, {"role": "step", "name": "count"},
              {"role": "batch"}, {"role": "labels"}],
    "data": {"name": "npy", "as": "d", "features": "x.npy", "labels": "y.npy",
             "standardize": false, "validation": 0},
    "train": {"steps": 6, "batch": 4, "shards": 1, "seed": 1, "checkpoint_every": 0,
              "eval_every": 0, "prng": "partitionable"}})");
}

template <typename T>
std::string Bytes(const std::vector<T>& v) {
  return std::string(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(T));
}

class RunSpecImportTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("run_spec_import_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    Write("step.hlo", kStep);
    WriteSpec(Spec());
    std::vector<float> x, y;
    for (int r = 0; r < 8; ++r) {
      for (int f = 0; f < 3; ++f) x.push_back(static_cast<float>((r * 3 + f) % 5) - 2.0f);
      y.push_back(static_cast<float>(r % 3));
    }
    ASSERT_TRUE(WriteNpyFile(Path("x.npy"), {NpyDtype::kF32, {8, 3}, Bytes(x)}).ok());
    ASSERT_TRUE(WriteNpyFile(Path("y.npy"), {NpyDtype::kF32, {8}, Bytes(y)}).ok());
    WriteState({{"w", "F32", {3}, Bytes(std::vector<float>{0.5f, -0.25f, 1.0f})},
                {"count", "I32", {}, Bytes(std::vector<int32_t>{0})}});
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::string Path(const std::string& name) const { return (dir_ / name).string(); }
  void Write(const std::string& name, const std::string& bytes) const {
    std::ofstream(Path(name), std::ios::binary) << bytes;
  }
  void WriteSpec(const Json& spec) const { Write("run.json", spec.dump(2)); }
  void WriteState(std::vector<SafeTensor> tensors) const {
    SafetensorsFile f;
    f.tensors = std::move(tensors);
    ASSERT_TRUE(WriteSafetensorsFile(Path("init.safetensors"), f).ok());
  }
  std::string ErrorOf() const {
    Result<CompileResult> c = Compile(Path("run.json"), {});
    EXPECT_FALSE(c.ok());
    return c.ok() ? "" : c.status().message();
  }

  std::filesystem::path dir_;
};

TEST_F(RunSpecImportTest, StagesRolesAndInitialState) {
  Result<CompileResult> c = Compile(Path("run.json"), {});
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_TRUE(c->is_run_spec());
  std::vector<std::string> names, files;
  for (const StageRecord& r : c->stages.records()) {
    names.push_back(r.name);
    files.push_back(r.file_name);
  }
  EXPECT_EQ(names,
            (std::vector<std::string>{"program", "source", "hlo", "init", "opt-hlo", "plan"}));
  EXPECT_EQ(files[0], "00.program.json");
  EXPECT_EQ(c->stages.Find(kStageProgram)->bytes, test::Slurp(Path("run.json")));
  const StageRecord& source = *c->stages.Find(kStageSource);
  EXPECT_EQ(source.transform.name, "import-hlo");
  EXPECT_EQ(source.bytes.rfind("// detrain.imported-step.v1\n// config {", 0), 0u);
  // Stage 1 commits to both files' digests; stage 2 is the canonical module after the header.
  const std::string& hlo = c->stages.Find(kStageHlo)->bytes;
  EXPECT_EQ(source.bytes.substr(source.bytes.size() - hlo.size()), hlo);
  EXPECT_NE(source.bytes.find("\"initial_state\":{\"path\":\"init.safetensors\",\"sha256\":\""),
            std::string::npos);
  Json init = Json::parse(c->stages.Find(kStageInit)->bytes);
  EXPECT_EQ(init["format"], "detrain.initial-state.v1");
  ASSERT_EQ(init["tensors"].size(), 2u);
  EXPECT_EQ(init["tensors"][1]["name"], "count");
  EXPECT_EQ(init["tensors"][1]["role"], "step");
  EXPECT_EQ(init["tensors"][1]["dtype"], "s32");
  EXPECT_EQ(c->signature.roles, (std::vector<ParamRole>{ParamRole::kParameter, ParamRole::kStep,
                                                        ParamRole::kBatch, ParamRole::kLabels}));
  EXPECT_EQ(c->signature.shards, 1);
  ASSERT_NE(c->initial_state, nullptr);
  ASSERT_EQ(c->initial_state->size(), 2u);
  EXPECT_EQ((*c->initial_state)[0].value.Get<float>(1), -0.25f);
  ASSERT_TRUE(c->config.has_value());
  EXPECT_EQ(c->config->optimizer.kind, frontend::OptimizerKind::kInProgram);
  EXPECT_TRUE(c->config->params.empty());
  EXPECT_EQ(c->config->resolved->rows, 8);
  EXPECT_EQ(c->program_files.size(), 2u);
  EXPECT_EQ(c->program_files[0].first, "init.safetensors");
  EXPECT_EQ(c->program_files[1].first, "step.hlo");

  // Any spelling of the same spec is another stage 0, but the same module and state.
  Write("run.json", Spec().dump());
  Result<CompileResult> again = Compile(Path("run.json"), {});
  ASSERT_TRUE(again.ok()) << again.status().message();
  EXPECT_NE(again->stages.Find(kStageProgram)->sha256, c->stages.Find(kStageProgram)->sha256);
  EXPECT_EQ(again->stages.Find(kStagePlan)->sha256, c->stages.Find(kStagePlan)->sha256);
}

TEST_F(RunSpecImportTest, EntryListMustMatchTheHlo) {
  Json spec = Spec();
  spec["entry"].erase(1);
  WriteSpec(spec);
  EXPECT_NE(ErrorOf().find("step.hlo: the entry computation takes 4 parameters; the run spec's "
                           "entry list has 3"),
            std::string::npos);
  spec = Spec();
  spec["entry"][1] = {{"role", "parameter"}, {"name", "count"}};
  WriteSpec(spec);
  EXPECT_NE(ErrorOf().find("parameter 1 s32[] is entry[1] (parameter 'count'), but a trained "
                           "parameter must be f32"),
            std::string::npos);
  spec = Spec();
  spec["entry"].push_back({{"role", "key"}});
  WriteSpec(spec);
  std::string keyed = kStep;
  keyed.insert(keyed.find("  pred = "), "  k = f32[2] parameter(4)\n");
  Write("step.hlo", keyed);
  EXPECT_NE(ErrorOf().find("parameter 4 f32[2] is entry[4] (key), but a step key is u32[2]"),
            std::string::npos);
  Write("step.hlo", kStep);
  spec = Spec();
  spec["train"]["batch"] = 2;
  WriteSpec(spec);
  EXPECT_NE(ErrorOf().find("is entry[2] (batch), but its first dimension must be the batch, 2"),
            std::string::npos);
}

TEST_F(RunSpecImportTest, ResultMustBeTheNewStateThenTheLoss) {
  std::string swapped = kStep;
  swapped.replace(swapped.find("ROOT r = (f32[3], s32[], f32[]) tuple(w2, c2, loss)"),
                  std::string("ROOT r = (f32[3], s32[], f32[]) tuple(w2, c2, loss)").size(),
                  "ROOT r = (f32[3], f32[], s32[]) tuple(w2, loss, c2)");
  Write("step.hlo", swapped);
  EXPECT_NE(ErrorOf().find("result 1 is f32[], but state tensor 1 is s32[]"), std::string::npos);
  std::string bare = kStep;
  bare.replace(bare.find("ROOT r = (f32[3], s32[], f32[]) tuple(w2, c2, loss)"),
               std::string("ROOT r = (f32[3], s32[], f32[]) tuple(w2, c2, loss)").size(),
               "ROOT r = f32[3] subtract(w, upd)");
  Write("step.hlo", bare);
  EXPECT_NE(ErrorOf().find("the entry computation returns f32[3]; a train step returns a tuple"),
            std::string::npos);
  Write("step.hlo", "HloModule broken\nENTRY e {\n  ROOT x = f32[] nonsense()\n}\n");
  const std::string m = ErrorOf();
  EXPECT_EQ(m.find(Path("step.hlo") + ":3:"), 0u) << m;
}

TEST_F(RunSpecImportTest, InitialStateMustHoldExactlyTheState) {
  WriteState({{"w", "F32", {3}, Bytes(std::vector<float>{1, 2, 3})}});
  EXPECT_NE(ErrorOf().find("init.safetensors: no tensor 'count' for entry[1] (step 'count')"),
            std::string::npos);
  WriteState({{"w", "F32", {2}, Bytes(std::vector<float>{1, 2})},
              {"count", "I32", {}, Bytes(std::vector<int32_t>{0})}});
  EXPECT_NE(ErrorOf().find("tensor 'w' is F32 [2]; entry[0] (parameter 'w') takes f32[3]"),
            std::string::npos);
  WriteState({{"w", "F32", {3}, Bytes(std::vector<float>{1, 2, 3})},
              {"count", "I32", {}, Bytes(std::vector<int32_t>{0})},
              {"stray", "F32", {}, Bytes(std::vector<float>{0})}});
  EXPECT_NE(ErrorOf().find("tensor 'stray' is not a state entry of the run spec"),
            std::string::npos);
  Write("init.safetensors", std::string("\xff\xff\xff\xff\xff\xff\xff\x7f", 8));
  EXPECT_NE(ErrorOf().find("init.safetensors"), std::string::npos);
  std::filesystem::remove(Path("init.safetensors"));
  EXPECT_NE(ErrorOf().find("init.safetensors"), std::string::npos);
}

TEST_F(RunSpecImportTest, DataMustFitTheBatchAndLabels) {
  std::vector<float> x(8 * 2, 1.0f);
  ASSERT_TRUE(WriteNpyFile(Path("x.npy"), {NpyDtype::kF32, {8, 2}, Bytes(x)}).ok());
  EXPECT_NE(ErrorOf().find("the data source gives features f32[4,2] per batch, but entry[2] "
                           "(batch) of the train step is f32[4,3]"),
            std::string::npos);
  std::vector<float> few(3 * 3, 1.0f);
  ASSERT_TRUE(WriteNpyFile(Path("x.npy"), {NpyDtype::kF32, {3, 3}, Bytes(few)}).ok());
  const std::string m = ErrorOf();
  EXPECT_FALSE(m.empty());
}

TEST_F(RunSpecImportTest, OneFileCannotPlayTwoParts) {
  Json spec = Spec();
  spec["initial_state"] = "step.hlo";
  WriteSpec(spec);
  EXPECT_NE(ErrorOf().find("must be three different files"), std::string::npos);
  spec = Spec();
  spec["train_step"] = "run.json";
  WriteSpec(spec);
  EXPECT_NE(ErrorOf().find("must be three different files"), std::string::npos);
}

}  // namespace
}  // namespace detrain::driver
