// A later detrain verifying bundles of this one (schemas/bundle.md §9): its default pipeline
// differs (a pass retired and left out, another moved) and it writes a newer plan format, so it
// reproduces stages 0-2 byte for byte but not stages 3-4. The golden bundle and a bundle made now
// must still verify — every step replayed bit for bit on the plan the later pipeline makes —
// with stages 3-4 reported as not reproduced, naming both pipelines; and tampering with stages
// 0-2, or with a stage 3-4 file and its records, must still fail.
#include <algorithm>
#include <functional>
#include <utility>

#include "attest/sha256.h"
#include "bundle_tamper_fixture.h"
#include "compiler/passes/pipeline.h"
#include "compiler/plan/schema.h"

namespace detrain::tamper_test {
namespace {

const std::string kGolden = std::string(DETRAIN_SOURCE_DIR) + "/audit-bundles/v1/tiny";

// fuse retired (and so left out), merge-dots moved ahead of the constant folds, and the plan
// format after this detrain's.
verify::BackendGeneration LaterDetrain() {
  return {
      "inline,unroll-while,inline,cse,merge-dots,fold-constants,simplify,cse,fold-constants,"
      "combine-all-reduce,cse",
      plan::kPlanFormatVersion + 1,
      {"fuse"}};
}

VerifyReport VerifyAs(const std::string& dir, const std::optional<verify::BackendGeneration>& b) {
  verify::VerifyOptions o;
  o.bundle = dir;
  o.integrity_threads = 2;
  o.backend = b;
  return verify::VerifyBundle(o);
}

const verify::PhaseReport* Phase(const VerifyReport& r, const std::string& name) {
  for (const verify::PhaseReport& p : r.phases) {
    if (p.name == name) return &p;
  }
  return nullptr;
}

std::string RecordedPipeline(const std::string& dir) {
  json m = *attest::ParseJson(Slurp(dir + "/manifest.json"));
  for (const json& s : m["stages"]) {
    if (s["stage"] == "opt-hlo") return s["transform"]["options"]["pipeline"].get<std::string>();
  }
  return "";
}

class LaterDetrainTest : public BundleTamperTest {};

TEST_F(LaterDetrainTest, EarlierBundlesVerifyWithStagesThreeAndFourNotReproduced) {
  const std::vector<std::string> zero_to_two = {"program", "source", "hlo", "init", "eval"};
  const std::vector<std::string> three_four = {"opt-hlo", "plan", "eval-plan"};
  for (const std::string& dir : {kGolden, dir_}) {
    SCOPED_TRACE(dir);
    VerifyReport r = VerifyAs(dir, LaterDetrain());
    ASSERT_EQ(r.outcome, Outcome::kVerified) << r.message;
    EXPECT_GT(r.steps, 0);
    EXPECT_EQ(r.steps_replayed, r.steps);
    const verify::PhaseReport* recompile = Phase(r, "recompile");
    ASSERT_NE(recompile, nullptr);
    EXPECT_EQ(recompile->stages_reproduced, zero_to_two);
    EXPECT_EQ(recompile->stages_not_reproduced, three_four);
    ASSERT_EQ(recompile->notes.size(), 1u);
    const std::string& note = recompile->notes[0];
    EXPECT_NE(note.find("stages 3-4 (3 stages) not reproduced"), std::string::npos) << note;
    EXPECT_NE(note.find("\"" + RecordedPipeline(dir) + "\""), std::string::npos) << note;
    EXPECT_NE(note.find("\"" + LaterDetrain().default_pipeline + "\""), std::string::npos) << note;
    EXPECT_NE(note.find("pass 'fuse' is one this detrain no longer runs"), std::string::npos);
    EXPECT_NE(note.find("this detrain writes plan format " +
                        std::to_string(plan::kPlanFormatVersion + 1)),
              std::string::npos)
        << note;
    EXPECT_NE(r.message.find(note), std::string::npos) << r.message;
    const json j = r.ToJson();
    EXPECT_EQ(j["phases"][1]["phase"], "recompile");
    EXPECT_EQ(j["phases"][1]["stages_not_reproduced"], json(three_four));
  }
}

TEST_F(LaterDetrainTest, ThisDetrainReproducesEveryStage) {
  for (const std::string& dir : {kGolden, dir_}) {
    SCOPED_TRACE(dir);
    VerifyReport r = VerifyAs(dir, std::nullopt);
    ASSERT_EQ(r.outcome, Outcome::kVerified) << r.message;
    const verify::PhaseReport* recompile = Phase(r, "recompile");
    ASSERT_NE(recompile, nullptr);
    EXPECT_TRUE(recompile->stages_not_reproduced.empty());
    EXPECT_EQ(recompile->stages_reproduced.size(), 8u);
    EXPECT_TRUE(recompile->notes.empty());
  }
}

TEST_F(LaterDetrainTest, StagesZeroToTwoAreStillComparedByteForByte) {
  // Stage 2 edited (a constant of the train step) and the bundle resealed, its stage record
  // with it: recompiling gives the original.
  std::string hlo = Slurp(P("stages/02.hlo.hlo"));
  const size_t at = hlo.find("constant(");
  ASSERT_NE(at, std::string::npos);
  hlo.insert(at + 9, "1");
  Spit(P("stages/02.hlo.hlo"), hlo);
  FixManifest(dir_, [&](json& m) {
    for (json& s : m["stages"]) {
      if (s["stage"] == "hlo") {
        s["sha256"] = attest::Sha256Hex(hlo);
        s["size"] = hlo.size();
      }
    }
  });
  VerifyReport r = VerifyAs(dir_, LaterDetrain());
  EXPECT_EQ(r.outcome, Outcome::kFailed) << r.message;
  EXPECT_EQ(LastPhase(r), "recompile");
  EXPECT_NE(r.message.find("stage 2 (hlo) differs"), std::string::npos) << r.message;
}

TEST_F(LaterDetrainTest, AStageThreeFileAndItsRecordsEditedStillFail) {
  // Not reproduced, stage 3 is vouched for by its digests: the file edited and every record of
  // it rewritten (the stage chain's digest, the manifest's file list) breaks the genesis hash,
  // which commits to the chain; the file edited alone breaks its record.
  std::string opt = Slurp(P("stages/03.opt-hlo.hlo"));
  opt += "\n";
  Spit(P("stages/03.opt-hlo.hlo"), opt);
  FixManifest(dir_);
  VerifyReport alone = VerifyAs(dir_, LaterDetrain());
  EXPECT_EQ(alone.outcome, Outcome::kFailed) << alone.message;
  EXPECT_NE(alone.message.find("03.opt-hlo.hlo"), std::string::npos) << alone.message;
  FixManifest(dir_, [&](json& m) {
    for (json& s : m["stages"]) {
      if (s["stage"] == "opt-hlo") {
        s["sha256"] = attest::Sha256Hex(opt);
        s["size"] = opt.size();
      }
      if (s["stage"] == "plan") s["transform"]["input_sha256"] = attest::Sha256Hex(opt);
    }
  });
  VerifyReport resealed = VerifyAs(dir_, LaterDetrain());
  EXPECT_EQ(resealed.outcome, Outcome::kFailed) << resealed.message;
  EXPECT_NE(resealed.message.find("genesis hash differs"), std::string::npos) << resealed.message;
}

TEST_F(LaterDetrainTest, HostileStageThreeAndFourRecordsFailWithoutACrash) {
  // Taken as recorded, the stage 3-4 entries are input: every field the verifier reads is
  // checked before it is used (a type, a count, a pass name that names a dump file).
  auto stage = [](json& m, const std::string& name) -> json& {
    for (json& s : m["stages"]) {
      if (s["stage"] == name) return s;
    }
    return m["stages"][0];
  };
  const std::vector<std::pair<std::string, std::function<void(json&)>>> cases = {
      {"number a string", [&](json& m) { stage(m, "opt-hlo")["number"] = "3"; }},
      {"number missing", [&](json& m) { stage(m, "plan").erase("number"); }},
      {"pass not a record", [&](json& m) { stage(m, "opt-hlo")["transform"]["passes"][0] = 7; }},
      {"pass name a path",
       [&](json& m) { stage(m, "opt-hlo")["transform"]["passes"][0]["pass"] = "../../manifest"; }},
      {"pass name not a string",
       [&](json& m) { stage(m, "opt-hlo")["transform"]["passes"][0]["pass"] = json::array(); }},
      {"10000 passes",
       [&](json& m) {
         json& p = stage(m, "opt-hlo")["transform"]["passes"];
         const json first = p[0];
         for (int i = 0; i < 10000; ++i) p.push_back(first);
       }},
      {"transform missing", [&](json& m) { stage(m, "plan").erase("transform"); }},
      {"transform not an object", [&](json& m) { stage(m, "plan")["transform"] = "cpu-plan"; }},
      {"input stage unknown",
       [&](json& m) { stage(m, "plan")["transform"]["input_stage"] = "nowhere"; }},
      {"plan format negative",
       [&](json& m) { stage(m, "plan")["transform"]["plan_format_version"] = -1; }},
      {"plan format past 32 bits",
       [&](json& m) { stage(m, "plan")["transform"]["plan_format_version"] = 1ull << 40; }},
      {"stage recorded twice", [&](json& m) { m["stages"].push_back(stage(m, "plan")); }},
      {"a backend's stage in the chain", [&](json& m) { stage(m, "plan")["stage"] = "ptx"; }},
      {"stage 2 numbered 3", [&](json& m) { stage(m, "init")["number"] = 3; }},
  };
  for (const auto& [name, edit] : cases) {
    SCOPED_TRACE(name);
    const std::string d = Copy(name);
    FixManifest(d, edit);
    VerifyReport r = VerifyAs(d, LaterDetrain());
    EXPECT_EQ(r.outcome, Outcome::kFailed) << r.message;
    EXPECT_EQ(LastPhase(r), "recompile");
    EXPECT_EQ(r.message.rfind("manifest.json: ", 0), 0u) << r.message;
    EXPECT_LT(r.message.size(), 10000u);
  }
}

}  // namespace
}  // namespace detrain::tamper_test
