// Writing a compile's stages to a directory, and its summary: the layout of `detrain compile
// --dump-dir` (docs/passes.md §Dumps), in the manner of XLA's --xla_dump_to but canonical. The
// stage files and passes/ are the layout a bundle's stages/ uses too (issue 12).
//
//   DIR/00.program.dt ... 04.plan.pb   every stage, named by StageFileName (stage_table.h)
//   DIR/passes/NN.pass-name.hlo        every pass's output (with the backend stages)
//   DIR/04.plan.txt                    the plan as protobuf text, for people (dump only)
//   DIR/cuda-include/...               with the CUDA stages: the device headers 04.cuda.cu
//                                      includes, so `nvcc -I DIR/cuda-include` compiles it
//   DIR/summary.json                   CompileSummary, two-space indented
//
// Thread safety: writes only under the given directory. Determinism: the files are the stage
// bytes; the summary names the input file as given (it is a dump for people, never hashed).
#ifndef DETRAIN_DRIVER_DUMP_H_
#define DETRAIN_DRIVER_DUMP_H_

#include <nlohmann/json.hpp>
#include <string>

#include "base/status.h"
#include "driver/compile.h"

namespace detrain::driver {

// Every stage's file and passes/ under `dir` (created if missing), each written atomically.
Status WriteStageFiles(const std::string& dir, const CompileResult& result);

inline constexpr char kCudaIncludeDir[] = "cuda-include";

// WriteStageFiles, the plan's text, the CUDA device headers (when there are CUDA stages) and
// summary.json; `file` is the input path as given.
Status WriteDumpDir(const std::string& dir, const CompileResult& result, const std::string& file);

// {"file", "stages": [{"stage", "sha256", "file"}], and with the backend stages "pipeline",
// "passes" (PassRecordsJson) and "buffers": {"peak_bytes", "total_bytes"}}.
nlohmann::json CompileSummary(const CompileResult& result, const std::string& file);

}  // namespace detrain::driver

#endif  // DETRAIN_DRIVER_DUMP_H_
