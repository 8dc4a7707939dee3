// See stage_table.h. The stage list (name, number, file name) is one table, kStages.
#include "driver/stage_table.h"

#include "attest/canonical_json.h"
#include "attest/sha256.h"

namespace detrain::driver {
namespace {

struct StageInfo {
  const char* name;
  int number;
  const char* file_name;  // stage 0: the .dt spelling (StageFileName picks the others)
  const char* backend = "";
};

constexpr StageInfo kStages[] = {
    {kStageProgram, 0, "00.program.dt"},
    {kStageSource, 1, "01.source.hlo"},
    {kStageHlo, 2, "02.hlo.hlo"},
    {kStageInit, 2, "02.init.json"},
    {kStageEval, 2, "02.eval.hlo"},
    {kStageOptHlo, 3, "03.opt-hlo.hlo"},
    {kStagePlan, 4, "04.plan.pb"},
    {kStageEvalPlan, 4, "04.eval-plan.pb"},
    {kStageCuda, 4, "04.cuda.cu", kBackendCuda},
    {kStagePtx, 4, "04.ptx.ptx", kBackendCuda},
    {"cubin-sm_80", 4, "04.cubin-sm_80.cubin", kBackendCuda},
    {"cubin-sm_90", 4, "04.cubin-sm_90.cubin", kBackendCuda},
    {"eval-cuda", 4, "04.eval-cuda.cu", kBackendCuda},
    {"eval-ptx", 4, "04.eval-ptx.ptx", kBackendCuda},
    {"eval-cubin-sm_80", 4, "04.eval-cubin-sm_80.cubin", kBackendCuda},
    {"eval-cubin-sm_90", 4, "04.eval-cubin-sm_90.cubin", kBackendCuda},
};
constexpr char kHloProgramFile[] = "00.program.hlo";
constexpr char kRunSpecProgramFile[] = "00.program.json";

Result<const StageInfo*> Info(std::string_view name) {
  for (const StageInfo& s : kStages) {
    if (name == s.name) return &s;
  }
  return Internal("unknown stage '" + std::string(name) + "'");
}

}  // namespace

std::vector<std::string_view> StageNames() {
  std::vector<std::string_view> names;
  for (const StageInfo& s : kStages) names.push_back(s.name);
  return names;
}

bool IsBackendStage(std::string_view name) {
  Result<const StageInfo*> info = Info(name);
  return info.ok() && *(*info)->backend != '\0';
}

Result<int> StageNumber(std::string_view name) {
  DETRAIN_ASSIGN_OR_RETURN(const StageInfo* info, Info(name));
  return info->number;
}

Result<std::string> StageFileName(std::string_view name, ProgramKind kind) {
  DETRAIN_ASSIGN_OR_RETURN(const StageInfo* info, Info(name));
  if (info->number == 0 && kind == ProgramKind::kHlo) return std::string(kHloProgramFile);
  if (info->number == 0 && kind == ProgramKind::kRunSpec) return std::string(kRunSpecProgramFile);
  return std::string(info->file_name);
}

Transform TransformOf(std::string name, std::string input_stage, std::string options) {
  Transform t;
  t.name = std::move(name);
  t.options = std::move(options);
  t.input_stage = std::move(input_stage);
  return t;
}

Status StageTable::Add(std::string_view name, std::string bytes, Transform transform,
                       ProgramKind kind) {
  if (Find(name) != nullptr) return Internal("stage '" + std::string(name) + "' added twice");
  StageRecord r;
  r.name = std::string(name);
  DETRAIN_ASSIGN_OR_RETURN(r.number, StageNumber(name));
  DETRAIN_ASSIGN_OR_RETURN(r.file_name, StageFileName(name, kind));
  DETRAIN_ASSIGN_OR_RETURN(const StageInfo* info, Info(name));
  r.backend = info->backend;
  if (!transform.input_stage.empty()) {
    const StageRecord* input = Find(transform.input_stage);
    if (input == nullptr) {
      return Internal("stage '" + r.name + "' reads stage '" + transform.input_stage +
                      "', which is not in the table yet");
    }
    transform.input_sha256 = input->sha256;
  }
  r.sha256 = attest::Sha256Hex(bytes);
  r.bytes = std::move(bytes);
  r.transform = std::move(transform);
  records_.push_back(std::move(r));
  return on_add_ ? on_add_(records_.back()) : Status::Ok();
}

const StageRecord* StageTable::Find(std::string_view name) const {
  for (const StageRecord& r : records_) {
    if (r.name == name) return &r;
  }
  return nullptr;
}

Result<std::string> OptionsJson(const nlohmann::json& options) {
  return attest::CanonicalJson(options);
}

nlohmann::json PassRecordsJson(const std::vector<passes::PassRecord>& records) {
  nlohmann::json j = nlohmann::json::array();
  for (const passes::PassRecord& r : records) {
    j.push_back({{"pass", r.pass},
                 {"options_sha256", r.options_sha256},
                 {"input_sha256", r.input_sha256},
                 {"output_sha256", r.output_sha256}});
  }
  return j;
}

nlohmann::json StageRecordJson(const StageRecord& r) {
  nlohmann::json j = {{"stage", r.name},
                      {"number", r.number},
                      {"file", r.file_name},
                      {"size", r.bytes.size()},
                      {"sha256", r.sha256}};
  const Transform& t = r.transform;
  if (t.name.empty()) return j;
  // The options were written by OptionsJson, so they parse; a failure would be a bug upstream.
  Result<nlohmann::json> options = attest::ParseJson(t.options);
  nlohmann::json tj = {{"name", t.name},
                       {"options", options.ok() ? *options : nlohmann::json(t.options)},
                       {"input_stage", t.input_stage},
                       {"input_sha256", t.input_sha256}};
  if (!t.pipeline.empty()) {
    tj["pipeline"] = t.pipeline;
    tj["passes"] = PassRecordsJson(t.passes);
  }
  if (t.plan_format_version != 0) tj["plan_format_version"] = t.plan_format_version;
  j["transform"] = tj;
  return j;
}

nlohmann::json StageChainJson(const StageTable& table) { return BackendStagesJson(table, ""); }

nlohmann::json BackendStagesJson(const StageTable& table, std::string_view backend) {
  nlohmann::json chain = nlohmann::json::array();
  for (const StageRecord& r : table.records()) {
    if (r.backend == backend) chain.push_back(StageRecordJson(r));
  }
  return chain;
}

}  // namespace detrain::driver
