// The files of a bundle other than the step log: the static part written when a run starts
// (program/, stages/, data/, run.json, environment.json) and the part written when it ends
// (lineage.jsonl is written by the run; final/weights.safetensors and manifest.json here).
// schemas/bundle.md specifies every file.
//
// Thread safety: writes under one bundle directory; one run per directory.
#ifndef DETRAIN_ATTEST_BUNDLE_BUNDLE_FILES_H_
#define DETRAIN_ATTEST_BUNDLE_BUNDLE_FILES_H_

#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "attest/bundle/attested_run.h"
#include "attest/bundle/step_runner.h"
#include "driver/compile.h"
#include "frontend/data.h"
#include "runtime/train/training_data.h"

namespace detrain::bundle {

struct BundleStatics {
  const RunOptions* options = nullptr;
  const driver::CompileResult* compiled = nullptr;  // stages, config, the data as parsed
  const runtime::TrainingData* data = nullptr;
  const StepSchedule* schedule = nullptr;
  nlohmann::json environment;
  // Where each data file (as the program writes it) is read from; null: next to the program.
  // The verifier sets it to the files it resolved, to rebuild the static files and compare.
  const std::map<std::string, std::string>* data_files = nullptr;
};

// The static files as (relative path, bytes), sorted by path. environment.json is last.
Result<std::vector<std::pair<std::string, std::string>>> StaticFiles(const BundleStatics& s);

Status WriteStatics(const std::string& dir, const BundleStatics& s);
// For --resume: every static file already in `dir` (but environment.json) must have the bytes
// this run would write; the error names the first that does not.
Status CheckStaticsMatch(const std::string& dir, const BundleStatics& s);

// run.json: the options of the run that are part of what it claims (hashed).
nlohmann::json RunJson(const StepSchedule& schedule, bool embed_data);

// data.json and split.safetensors (also what the verifier recomputes and compares).
Result<nlohmann::json> DataJson(const frontend::RunConfig& config, const frontend::Dataset& parsed,
                                const runtime::TrainingData& data,
                                const std::vector<std::pair<std::string, uint64_t>>& file_sizes,
                                const std::vector<std::string>& embedded);
Result<std::string> SplitFileBytes(const runtime::TrainingData& data);

struct FinalState {
  int64_t steps_done = 0;
  attest::Digest256 step_hash{};
  attest::Digest256 genesis{};
  attest::Digest256 params_root{}, optimizer_root{};
  bool stopped = false;
  std::string stop_reason;
};

// The final weights' bytes for a given root digest (deterministic: the verifier rebuilds them).
Result<std::string> FinalWeightsBytes(const runtime::TrainState& params, const FinalState& fin,
                                      const std::string& root_digest);

// manifest.json without its root digest: what the run claims, given the bundle's file list
// (`files`, the entries of schemas/bundle.md; the checkpoint list is derived from it). The
// verifier rebuilds it from the recompiled program and compares.
nlohmann::json ManifestJson(const BundleStatics& s, const FinalState& fin, nlohmann::json files);

// Writes final/weights.safetensors and manifest.json (last), removes progress.json; returns the
// root digest.
Result<std::string> FinishBundle(const std::string& dir, const BundleStatics& s,
                                 const FinalState& fin, const runtime::TrainState& state);

// The parameters of a state (the final weights hold only these).
runtime::TrainState ParamsOf(const runtime::TrainState& state);

}  // namespace detrain::bundle

#endif  // DETRAIN_ATTEST_BUNDLE_BUNDLE_FILES_H_
