// The files of a bundle other than the step log: the static part written when a run starts
// (program/, stages/, data/, run.json, environment.json) and the part written when it ends
// (lineage.jsonl is written by the run; final/weights.safetensors and manifest.json here).
// schemas/bundle.md specifies every file.
//
// Thread safety: writes under one bundle directory; one run per directory.
#ifndef DETRAIN_EVIDENCE_BUNDLE_BUNDLE_FILES_H_
#define DETRAIN_EVIDENCE_BUNDLE_BUNDLE_FILES_H_

#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "driver/compile.h"
#include "frontend/data.h"
#include "runtime/executor.h"
#include "runtime/train/step_record.h"
#include "runtime/train/train_state.h"
#include "runtime/train/training_data.h"

namespace detrain::bundle {

struct BundleStatics {
  std::string program;  // the program's path as the run was given it (program/ keeps its name)
  bool embed_data = false;
  runtime::Backend backend = runtime::Backend::kCpu;
  const driver::CompileResult* compiled = nullptr;  // stages, config, the data as parsed
  const runtime::TrainingData* data = nullptr;
  const runtime::StepSchedule* schedule = nullptr;
  nlohmann::json environment;
  // Where each data file is read from, by the program's spelling (the verifier's resolution);
  // unlisted files are read where the program names them.
  std::map<std::string, std::string> data_files;
};

// The static files as (relative path, bytes), sorted by path. environment.json is last.
Result<std::vector<std::pair<std::string, std::string>>> StaticFiles(const BundleStatics& s);

Status WriteStatics(const std::string& dir, const BundleStatics& s);
// For --resume: every static file already in `dir` (but environment.json) must have the bytes
// this run would write; the error names the first that does not.
Status CheckStaticsMatch(const std::string& dir, const BundleStatics& s);

// run.json: the options of the run that are part of what it claims (hashed), and the backend it
// ran on (which changes no step: schemas/bundle.md §4.4).
nlohmann::json RunJson(const runtime::StepSchedule& schedule, bool embed_data,
                       runtime::Backend backend);

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

// Every file a run writes into the bundle (relative paths; checkpoints aside).
Result<std::set<std::string>> WrittenNames(const BundleStatics& s);

// True for a temporary file of base/file_io.h's WriteFileAtomic (NAME.tmp.XXXXXX, which only a
// crash leaves behind) of a file NAME the run writes (in `written`, or a checkpoint).
bool IsRunTemporary(const std::string& relative_path, const std::set<std::string>& written);

// manifest.json without its root digest, for the given file entries ({path, size, merkle_root},
// sorted by path; every file but manifest.json and the final weights), with "executables" when
// the compile holds a backend's stages (the CUDA run's). The verifier rebuilds it from a
// recompiled run and compares.
Result<nlohmann::json> ManifestJson(const BundleStatics& s, const FinalState& fin,
                                    const nlohmann::json& files);

// Writes final/weights.safetensors and manifest.json (last), removes progress.json; returns the
// root digest.
Result<std::string> FinishBundle(const std::string& dir, const BundleStatics& s,
                                 const FinalState& fin, const runtime::TrainState& state);

}  // namespace detrain::bundle

#endif  // DETRAIN_EVIDENCE_BUNDLE_BUNDLE_FILES_H_
