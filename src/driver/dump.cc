// See dump.h.
#include "driver/dump.h"

#include <sys/stat.h>

#include <cerrno>

#include "base/file_io.h"
#include "compiler/codegen/cuda/cuda_program.h"
#include "compiler/plan/builder.h"

namespace detrain::driver {
namespace {

Status MakeDir(const std::string& dir) {
  if (::mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) return IoError(ErrnoMessage(dir, errno));
  return Status::Ok();
}

}  // namespace

Status WriteStageFiles(const std::string& dir, const CompileResult& result) {
  DETRAIN_RETURN_IF_ERROR(MakeDir(dir));
  DETRAIN_RETURN_IF_ERROR(MakeDir(dir + "/" + kPassDumpDir));
  for (const StageRecord& s : result.stages.records()) {
    DETRAIN_RETURN_IF_ERROR(WriteFileAtomic(dir + "/" + s.file_name, s.bytes));
  }
  for (const auto& [name, text] : result.pass_dumps) {
    DETRAIN_RETURN_IF_ERROR(WriteFileAtomic(dir + "/" + kPassDumpDir + "/" + name, text));
  }
  return Status::Ok();
}

// The device headers the CUDA source includes, under dir/cuda-include/, so that the dumped source
// compiles with `nvcc -I DIR/cuda-include` (docs/cuda.md).
Status WriteDeviceHeaders(const std::string& dir) {
  for (const codegen::cuda::DeviceHeader& h : codegen::cuda::DeviceHeaders()) {
    std::string path = dir + "/" + kCudaIncludeDir + "/" + std::string(h.path);
    for (size_t slash = dir.size() + 1; (slash = path.find('/', slash)) != std::string::npos;
         ++slash) {
      DETRAIN_RETURN_IF_ERROR(MakeDir(path.substr(0, slash)));
    }
    DETRAIN_RETURN_IF_ERROR(WriteFileAtomic(path, std::string(h.bytes)));
  }
  return Status::Ok();
}

Status WriteDumpDir(const std::string& dir, const CompileResult& result, const std::string& file) {
  DETRAIN_RETURN_IF_ERROR(WriteStageFiles(dir, result));
  if (result.stages.Find(kStageCuda) != nullptr) DETRAIN_RETURN_IF_ERROR(WriteDeviceHeaders(dir));
  if (const StageRecord* plan = result.stages.Find(kStagePlan)) {
    DETRAIN_ASSIGN_OR_RETURN(std::string text, plan::PlanToText(plan->bytes));
    DETRAIN_RETURN_IF_ERROR(WriteFileAtomic(dir + "/" + kPlanTextFile, text));
  }
  return WriteFileAtomic(
      dir + "/summary.json",
      CompileSummary(result, file).dump(2, ' ', false, nlohmann::json::error_handler_t::replace) +
          "\n");
}

nlohmann::json CompileSummary(const CompileResult& result, const std::string& file) {
  nlohmann::json stages = nlohmann::json::array();
  for (const StageRecord& s : result.stages.records()) {
    stages.push_back({{"stage", s.name}, {"sha256", s.sha256}, {"file", s.file_name}});
  }
  nlohmann::json j = {{"file", file}, {"stages", stages}};
  if (const StageRecord* opt = result.stages.Find(kStageOptHlo)) {
    j["pipeline"] = opt->transform.pipeline;
    j["passes"] = PassRecordsJson(opt->transform.passes);
    j["buffers"] = {{"peak_bytes", result.peak_bytes}, {"total_bytes", result.total_bytes}};
  }
  return j;
}

}  // namespace detrain::driver
