// What the recompile phase checks last (schemas/bundle.md "Verification"): that a bundle holds
// nothing but what its run gives. Every file but environment.json is a function of the program,
// its data and the run, and so is the manifest — so the bundle must list exactly the files a
// bundle of this run has, hold the static ones byte for byte as the writer writes them (stage
// dumps, pass dumps and plan text included, which no digest comparison reaches), and its
// manifest must claim exactly what they and the step log give. The writer's own code
// (bundle::StaticFiles, bundle::ManifestJson) builds what is expected, so the two cannot drift.
//
// Thread safety: pure functions of their arguments (CheckRebuiltFiles reads files).
#ifndef DETRAIN_ATTEST_VERIFY_CLAIMS_CHECK_H_
#define DETRAIN_ATTEST_VERIFY_CLAIMS_CHECK_H_

#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "attest/bundle/bundle_format.h"
#include "attest/bundle/step_runner.h"
#include "base/status.h"
#include "driver/compile.h"
#include "runtime/train/training_data.h"

namespace detrain::verify {

// The first line (1-based) where two texts differ, with both lines, or the first byte.
std::string FirstDifference(const std::string& a, const std::string& b, bool text);

// Where two JSON values first differ, as "\"PATH\": recorded A, expected B" (object keys in
// order, array elements by index); "" when equal. Recurses once per level: the values must come
// from attest::ParseJson (depth bounded) or from code.
std::string JsonDifference(const nlohmann::json& recorded, const nlohmann::json& expected,
                           const std::string& path = "");

// A bundle that passed the integrity phase, and its recompiled run.
struct RebuiltRun {
  std::string dir;
  const nlohmann::json* manifest = nullptr;    // passed CheckManifest
  const bundle::ParsedSteps* steps = nullptr;  // parsed and chained
  const driver::CompileResult* compiled = nullptr;
  const runtime::TrainingData* data = nullptr;
  const bundle::StepSchedule* schedule = nullptr;
  const std::map<std::string, std::string>* data_files = nullptr;  // where the data was read
};

// DataLoss naming the first file or manifest field that is not what the run gives.
Status CheckRebuiltFiles(const RebuiltRun& run);

}  // namespace detrain::verify

#endif  // DETRAIN_ATTEST_VERIFY_CLAIMS_CHECK_H_
