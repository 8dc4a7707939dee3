// Internal to the compile driver (compile.cc, program.cc, hlo_import.cc): the steps of Compile.
// Each appends its stages to `out->stages` and fills what it knows of the result.
// Thread safety and determinism: as Compile (compile.h).
#ifndef DETRAIN_DRIVER_COMPILE_INTERNAL_H_
#define DETRAIN_DRIVER_COMPILE_INTERNAL_H_

#include <string>

#include "driver/compile.h"

namespace detrain::driver {

// program.cc: stages 0, 1, 2, init and eval of a .dt program; the config and signature.
Status CompileDtProgram(const std::string& path, const CompileOptions& options, CompileResult* out);

// hlo_import.cc: stages 0 and 2 of HLO text; every parameter kInput, S = 1.
Status ImportHlo(const std::string& path, CompileResult* out);

// run_spec_import.cc: stages 0, 1, 2 and init of a run spec; the config, signature, initial
// state and the program's other files.
Status CompileRunSpec(const std::string& path, const CompileOptions& options, CompileResult* out);

// program.cc: the data of a configuration, from `base_dir` or where `data_files` says.
Result<frontend::Dataset> LoadData(const frontend::DataConfig& data, const std::string& base_dir,
                                   frontend::LabelType labels,
                                   const std::map<std::string, std::string>& data_files);
std::string DirOf(const std::string& path);

// compile.cc: stages 3 and 4 from stage 2's bytes.
Status AppendBackendStages(const CompileOptions& options, CompileResult* out);

}  // namespace detrain::driver

#endif  // DETRAIN_DRIVER_COMPILE_INTERNAL_H_
