// See bundle_files.h.
#include "evidence/bundle/bundle_files.h"

#include <cctype>
#include <set>

#include "attest/canonical_json.h"
#include "attest/merkle.h"
#include "attest/tensor_digest.h"
#include "base/file_io.h"
#include "base/fs.h"
#include "compiler/plan/builder.h"
#include "driver/dump.h"
#include "evidence/bundle/bundle_format.h"
#include "evidence/bundle/bundle_reader.h"

namespace detrain::bundle {
namespace {

using nlohmann::json;

// Where the program's data file `written` is read from (as frontend::LoadProgramData does).
std::string DataPath(const std::string& program, const std::string& written) {
  return !written.empty() && written[0] == '/' ? written : DirName(program) + "/" + written;
}

std::vector<int64_t> WithRows(int64_t rows, const std::vector<int64_t>& dims) {
  std::vector<int64_t> out = {rows};
  out.insert(out.end(), dims.begin(), dims.end());
  return out;
}

Result<std::string> TensorHex(std::string_view name, std::string_view dtype,
                              std::vector<int64_t> shape, std::string_view data) {
  attest::TensorView v{name, dtype, std::move(shape), data};
  DETRAIN_ASSIGN_OR_RETURN(attest::Digest256 d, attest::TensorDigest(v, nullptr));
  return Hex(d);
}

template <typename T>
std::string_view BytesOf(const std::vector<T>& v) {
  return {reinterpret_cast<const char*>(v.data()), v.size() * sizeof(T)};
}

// The embedded copy's name for each data file: data/files/BASENAME (".N" added on a clash).
std::vector<std::string> EmbeddedNames(const frontend::Dataset& ds) {
  std::vector<std::string> names;
  for (const auto& [written, digest] : ds.file_sha256) {
    std::string name = std::string(kEmbeddedDataDir) + "/" + BaseName(written);
    std::string candidate = name;
    for (int i = 1; std::find(names.begin(), names.end(), candidate) != names.end(); ++i) {
      candidate = name + "." + std::to_string(i);
    }
    names.push_back(candidate);
  }
  return names;
}

std::map<std::string, std::string> FinalWeightsMetadata(const FinalState& fin,
                                                        const std::string& root_digest) {
  return {{"format", "pt"},
          {"detrain.format", kWeightsFormat},
          {"detrain.bundle_root", root_digest},
          {"detrain.final_step_hash", Hex(fin.step_hash)},
          {"detrain.params_root", Hex(fin.params_root)},
          {"detrain.steps_done", std::to_string(fin.steps_done)}};
}

}  // namespace

json RunJson(const runtime::StepSchedule& schedule, bool embed_data, runtime::Backend backend) {
  return {{"format", "detrain.run"},
          {"format_version", kFormatVersion},
          {"backend", runtime::BackendName(backend)},
          {"steps", schedule.steps},
          {"checkpoint_every", schedule.checkpoint_every},
          {"eval_every", schedule.eval_every},
          {"state_digest", DigestPolicyName(schedule.policy)},
          {"embed_data", embed_data}};
}

Result<std::string> SplitFileBytes(const runtime::TrainingData& data) {
  const runtime::DataSplit& s = data.split();
  const std::string s64(ir::SafetensorsDType(ir::ElementType::kS64));
  const std::string f32(ir::SafetensorsDType(ir::ElementType::kF32));
  SafetensorsFile f;
  f.metadata = {{"detrain.format", "detrain.split.v1"}};
  f.tensors.push_back(
      {"train_index", s64, {static_cast<int64_t>(s.train.size())}, std::string(BytesOf(s.train))});
  f.tensors.push_back({"validation_index",
                       s64,
                       {static_cast<int64_t>(s.validation.size())},
                       std::string(BytesOf(s.validation))});
  if (!s.mean.empty()) {
    f.tensors.push_back(
        {"mean", f32, {static_cast<int64_t>(s.mean.size())}, std::string(BytesOf(s.mean))});
    f.tensors.push_back(
        {"scale", f32, {static_cast<int64_t>(s.scale.size())}, std::string(BytesOf(s.scale))});
  }
  return SerializeSafetensors(f);
}

Result<json> DataJson(const frontend::RunConfig& config, const frontend::Dataset& ds,
                      const runtime::TrainingData& data,
                      const std::vector<std::pair<std::string, uint64_t>>& file_sizes,
                      const std::vector<std::string>& embedded) {
  const runtime::DataSplit& s = data.split();
  json files = json::array();
  for (size_t i = 0; i < ds.file_sha256.size(); ++i) {
    json f = {{"path", ds.file_sha256[i].first},
              {"sha256", ds.file_sha256[i].second},
              {"size", i < file_sizes.size() ? file_sizes[i].second : 0}};
    if (i < embedded.size() && !embedded[i].empty()) f["embedded"] = embedded[i];
    files.push_back(f);
  }
  const bool x_s32 = !ds.x_s32.empty();
  const bool y_s32 = ds.label_type == frontend::LabelType::kS32;
  const std::string_view x_type =
      ir::ElementTypeName(x_s32 ? ir::ElementType::kS32 : ir::ElementType::kF32);
  const std::string_view y_type =
      ir::ElementTypeName(y_s32 ? ir::ElementType::kS32 : ir::ElementType::kF32);
  DETRAIN_ASSIGN_OR_RETURN(std::string x_digest,
                           TensorHex("features", x_type, WithRows(ds.rows, ds.x_dims),
                                     x_s32 ? BytesOf(ds.x_s32) : BytesOf(ds.x)));
  DETRAIN_ASSIGN_OR_RETURN(std::string y_digest,
                           TensorHex("labels", y_type, WithRows(ds.rows, ds.y_dims),
                                     y_s32 ? BytesOf(ds.y_s32) : BytesOf(ds.y_f32)));
  DETRAIN_ASSIGN_OR_RETURN(
      std::string train_digest,
      TensorHex("train_index", "s64", {static_cast<int64_t>(s.train.size())}, BytesOf(s.train)));
  DETRAIN_ASSIGN_OR_RETURN(
      std::string validation_digest,
      TensorHex("validation_index", "s64", {static_cast<int64_t>(s.validation.size())},
                BytesOf(s.validation)));
  json j = {
      {"format", kDataFormat},
      {"format_version", kFormatVersion},
      {"source", frontend::DataSourceName(config.data.kind)},
      {"files", files},
      {"parsed",
       {{"features",
         {{"dtype", x_type}, {"shape", WithRows(ds.rows, ds.x_dims)}, {"sha256", x_digest}}},
        {"labels",
         {{"dtype", y_type}, {"shape", WithRows(ds.rows, ds.y_dims)}, {"sha256", y_digest}}}}},
      {"split",
       {{"key", "fold_in(key(seed), 1)"},
        {"method", "permutation(key, rows); the last floor(validation * rows) are validation"},
        {"rows", s.rows},
        {"train_rows", s.train.size()},
        {"validation_rows", s.validation.size()},
        {"train_index_sha256", train_digest},
        {"validation_index_sha256", validation_digest},
        {"tensors", kSplitFile}}},
      {"batching",
       {{"batch", s.batch},
        {"remainder", s.remainder},
        {"steps_per_epoch", s.steps_per_epoch},
        {"shuffle",
         "train_index[permutation(fold_in(fold_in(key(seed), 3), epoch), train_rows)]"}}},
  };
  if (!s.mean.empty()) {
    j["standardize"] = {{"over", "the training rows, in ascending row order"},
                        {"features", s.mean.size()},
                        {"tensors", kSplitFile}};
  } else {
    j["standardize"] = nullptr;
  }
  return j;
}

Result<std::vector<std::pair<std::string, std::string>>> StaticFiles(const BundleStatics& s) {
  const driver::CompileResult& c = *s.compiled;
  std::vector<std::pair<std::string, std::string>> files;
  const driver::StageRecord* program = c.stages.Find(driver::kStageProgram);
  files.emplace_back(std::string(kProgramDir) + "/" + BaseName(s.program), program->bytes);
  // A run spec's train step and initial state, beside it (its names are plain file names).
  for (const auto& [name, bytes] : c.program_files) {
    files.emplace_back(std::string(kProgramDir) + "/" + name, bytes);
  }
  for (const driver::StageRecord& r : c.stages.records()) {
    files.emplace_back(std::string(kStagesDir) + "/" + r.file_name, r.bytes);
  }
  for (const auto& [name, text] : c.pass_dumps) {
    files.emplace_back(std::string(kStagesDir) + "/" + driver::kPassDumpDir + "/" + name, text);
  }
  if (const driver::StageRecord* plan = c.stages.Find(driver::kStagePlan)) {
    DETRAIN_ASSIGN_OR_RETURN(std::string text, plan::PlanToText(plan->bytes));
    files.emplace_back(std::string(kStagesDir) + "/" + driver::kPlanTextFile, text);
  }
  // The data: sizes of the files as read, and embedded copies.
  std::vector<std::pair<std::string, uint64_t>> sizes;
  std::vector<std::string> embedded =
      s.embed_data ? EmbeddedNames(*c.dataset) : std::vector<std::string>();
  for (size_t i = 0; i < c.dataset->file_sha256.size(); ++i) {
    const auto& [written, digest] = c.dataset->file_sha256[i];
    auto redirected = s.data_files.find(written);
    const std::string path =
        redirected != s.data_files.end() ? redirected->second : DataPath(s.program, written);
    if (s.embed_data) {
      DETRAIN_ASSIGN_OR_RETURN(std::string bytes, ReadFile(path));
      if (attest::Sha256Hex(bytes) != digest) {
        return FailedPrecondition(path + ": changed while the run started (its SHA-256 differs)");
      }
      sizes.emplace_back(written, bytes.size());
      files.emplace_back(embedded[i], std::move(bytes));
    } else {
      DETRAIN_ASSIGN_OR_RETURN(uint64_t size, RegularFileSize(path));
      sizes.emplace_back(written, size);
    }
  }
  DETRAIN_ASSIGN_OR_RETURN(json data, DataJson(*c.config, *c.dataset, *s.data, sizes, embedded));
  DETRAIN_ASSIGN_OR_RETURN(std::string data_text, CanonicalLine(data));
  files.emplace_back(kDataRecord, std::move(data_text));
  DETRAIN_ASSIGN_OR_RETURN(std::string split, SplitFileBytes(*s.data));
  files.emplace_back(kSplitFile, std::move(split));
  DETRAIN_ASSIGN_OR_RETURN(std::string run,
                           CanonicalLine(RunJson(*s.schedule, s.embed_data, s.backend)));
  files.emplace_back(kRunRecord, std::move(run));
  std::sort(files.begin(), files.end());
  DETRAIN_ASSIGN_OR_RETURN(std::string env, CanonicalLine(s.environment));
  files.emplace_back(kEnvironment, std::move(env));
  return files;
}

Status WriteStatics(const std::string& dir, const BundleStatics& s) {
  DETRAIN_ASSIGN_OR_RETURN(auto files, StaticFiles(s));
  for (const auto& [rel, bytes] : files) {
    const std::string path = JoinPath(dir, rel);
    DETRAIN_RETURN_IF_ERROR(MakeDirs(path.substr(0, path.rfind('/'))));
    DETRAIN_RETURN_IF_ERROR(WriteFileAtomic(path, bytes));
  }
  return Status::Ok();
}

Status CheckStaticsMatch(const std::string& dir, const BundleStatics& s) {
  DETRAIN_ASSIGN_OR_RETURN(auto files, StaticFiles(s));
  for (const auto& [rel, bytes] : files) {
    if (rel == kEnvironment) continue;
    if (!PathExists(JoinPath(dir, rel))) continue;  // the run was killed before writing it
    DETRAIN_ASSIGN_OR_RETURN(std::string old, ReadBundleFile(dir, rel, kMaxTensorFileBytes));
    if (old != bytes) {
      return FailedPrecondition(dir + ": cannot resume: " + rel +
                                " differs from what this program, its data and these options "
                                "produce (the bundle belongs to another run)");
    }
  }
  return Status::Ok();
}

Result<std::string> FinalWeightsBytes(const runtime::TrainState& params, const FinalState& fin,
                                      const std::string& root_digest) {
  return SerializeSafetensors(
      runtime::StateFile(params, FinalWeightsMetadata(fin, root_digest), /*params_only=*/true));
}

Result<std::set<std::string>> WrittenNames(const BundleStatics& s) {
  DETRAIN_ASSIGN_OR_RETURN(auto files, StaticFiles(s));
  std::set<std::string> names = {kManifest, kProgress, kSteps, kLineage, kFinalWeights};
  for (const auto& [rel, bytes] : files) names.insert(rel);
  return names;
}

bool IsRunTemporary(const std::string& rel, const std::set<std::string>& written) {
  // WriteFileAtomic's temporaries: NAME.tmp.XXXXXX (mkstemp's six characters), for a NAME this
  // run writes — never a file of the user's that happens to look like one.
  const size_t n = rel.size();
  if (n < 12 || rel.compare(n - 11, 5, ".tmp.") != 0) return false;
  for (size_t i = n - 6; i < n; ++i) {
    if (!std::isalnum(static_cast<unsigned char>(rel[i]))) return false;
  }
  const std::string name = rel.substr(0, n - 11);
  return written.count(name) > 0 || CheckpointStepsOf(name).has_value();
}

json FileEntries(const std::vector<std::pair<std::string, attest::FileDigests>>& files) {
  json out = json::array();
  for (const auto& [rel, d] : files) {
    out.push_back({{"path", rel}, {"size", d.size}, {"merkle_root", Hex(d.merkle_root)}});
  }
  return out;
}

Result<json> ManifestJson(const BundleStatics& s, const FinalState& fin, const json& files) {
  const driver::CompileResult& c = *s.compiled;
  const frontend::ResolvedData& rd = *c.config->resolved;
  json data_files = json::array();
  for (const auto& [written, digest] : c.dataset->file_sha256) {
    data_files.push_back({{"path", written}, {"sha256", digest}});
  }
  json checkpoints = json::array();
  for (const json& f : files) {
    if (!f.is_object() || !f.contains("path") || !f["path"].is_string()) continue;
    if (std::optional<int64_t> done = CheckpointStepsOf(f["path"].get<std::string>())) {
      checkpoints.push_back({{"path", f["path"]}, {"steps_done", *done}});
    }
  }
  json manifest = {
      {"format", kManifestFormat},
      {"format_version", kFormatVersion},
      {"status", fin.stopped ? "stopped" : "complete"},
      {"program",
       {{"path", std::string(kProgramDir) + "/" + BaseName(s.program)},
        {"sha256", c.stages.Find(driver::kStageProgram)->sha256}}},
      {"run", RunJson(*s.schedule, s.embed_data, s.backend)},
      {"config", frontend::RunConfigJson(*c.config)},
      {"stages", driver::StageChainJson(c.stages)},
      {"data",
       {{"record", kDataRecord},
        {"rows", rd.rows},
        {"train_rows", s.data->split().train.size()},
        {"validation_rows", s.data->split().validation.size()},
        {"files", data_files}}},
      {"steps",
       {{"path", kSteps},
        {"count", fin.steps_done},
        {"genesis", Hex(fin.genesis)},
        {"state_digest", DigestPolicyName(s.schedule->policy)}}},
      {"lineage", kLineage},
      {"final",
       {{"steps_done", fin.steps_done},
        {"step_hash", Hex(fin.step_hash)},
        {"params_root", Hex(fin.params_root)},
        {"optimizer_root", Hex(fin.optimizer_root)},
        {"weights", kFinalWeights}}},
      {"checkpoints", checkpoints},
      {"files", files},
  };
  if (fin.stopped) manifest["stop"] = {{"reason", fin.stop_reason}};
  // The CUDA executable is recorded apart from the chain the steps commit to (stage_table.h).
  json cuda = driver::BackendStagesJson(c.stages, driver::kBackendCuda);
  if (!cuda.empty()) manifest["executables"] = {{driver::kBackendCuda, cuda}};
  return manifest;
}

Result<std::string> FinishBundle(const std::string& dir, const BundleStatics& s,
                                 const FinalState& fin, const runtime::TrainState& state) {
  DETRAIN_RETURN_IF_ERROR(RemoveFile(JoinPath(dir, kProgress)));
  DETRAIN_ASSIGN_OR_RETURN(std::vector<std::string> names, ListFiles(dir));
  DETRAIN_ASSIGN_OR_RETURN(std::set<std::string> written, WrittenNames(s));
  ThreadPool pool(2);
  std::vector<std::pair<std::string, attest::FileDigests>> digests;
  for (const std::string& rel : names) {
    if (rel == kManifest || rel == kFinalWeights || rel == kProgress) continue;
    if (IsRunTemporary(rel, written)) {  // left by a crash before a resume
      DETRAIN_RETURN_IF_ERROR(RemoveFile(JoinPath(dir, rel)));
      continue;
    }
    DETRAIN_ASSIGN_OR_RETURN(attest::FileDigests d, attest::DigestFile(JoinPath(dir, rel), pool));
    digests.emplace_back(rel, d);
  }
  DETRAIN_ASSIGN_OR_RETURN(json manifest, ManifestJson(s, fin, FileEntries(digests)));
  DETRAIN_ASSIGN_OR_RETURN(std::string root, ManifestRootDigest(manifest));
  manifest["root_digest"] = root;
  DETRAIN_RETURN_IF_ERROR(MakeDirs(JoinPath(dir, "final")));
  // FinalWeightsBytes' bytes, streamed from the state (the verifier rebuilds them with it).
  DETRAIN_RETURN_IF_ERROR(WriteSafetensorsFile(JoinPath(dir, kFinalWeights),
                                               FinalWeightsMetadata(fin, root),
                                               runtime::StateRefs(state, /*params_only=*/true)));
  DETRAIN_ASSIGN_OR_RETURN(std::string text, CanonicalLine(manifest));
  DETRAIN_RETURN_IF_ERROR(WriteFileAtomic(JoinPath(dir, kManifest), text));
  return root;
}

}  // namespace detrain::bundle
