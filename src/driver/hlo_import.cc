// The HLO path of the compile driver (compile.h): HLO text — exported from JAX, or a stage of
// ours — becomes stage 0 as given and stage 2 in canonical form. Such a module has no training
// meaning, so every entry parameter is kInput and there is one shard.
#include "base/file_io.h"
#include "compiler/ir/printer.h"
#include "compiler/xla_import/import.h"
#include "driver/compile_internal.h"

namespace detrain::driver {

Status ImportHlo(const std::string& path, CompileResult* out) {
  DETRAIN_ASSIGN_OR_RETURN(std::string bytes, ReadFile(path));
  // Parse errors carry "line:col: "; the file name makes them "file:line:col: ".
  Result<std::unique_ptr<ir::Module>> module = xla_import::ParseAndVerifyHloText(bytes);
  if (!module.ok()) return Status(module.status().code(), path + ":" + module.status().message());
  DETRAIN_ASSIGN_OR_RETURN(std::string canonical, ir::PrintModule(**module));
  out->program_kind = ProgramKind::kHlo;
  DETRAIN_RETURN_IF_ERROR(out->stages.Add(kStageProgram, std::move(bytes), {}, ProgramKind::kHlo));
  DETRAIN_RETURN_IF_ERROR(out->stages.Add(kStageHlo, std::move(canonical),
                                          TransformOf("canonicalize-hlo", kStageProgram),
                                          ProgramKind::kHlo));
  const size_t params = (*module)->entry()->Parameters().size();
  out->signature.roles.assign(params, plan::ParamRole::kInput);
  out->signature.shards = 1;
  return Status::Ok();
}

}  // namespace detrain::driver
