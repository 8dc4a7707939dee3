// The stage chain of DESIGN.md §1 as data: one record per stage with its name, its number, its
// file name (the same in `compile --dump-dir` and a bundle's stages/), its canonical bytes and
// their SHA-256, and the transform that produced it — the transform's name, its options as
// canonical JSON, and the name and digest of the stage it read — so the records form a hash
// chain from the program's bytes to the executable. Stage 3's record also holds the pipeline
// spec and every pass's record; stage 4's the plan format version.
//
//   #  name     file                       transform            input
//   0  program  00.program.dt | .hlo       (the user's file)    -
//   1  source   01.source.hlo              lower-source-graph   program
//   2  hlo      02.hlo.hlo                 lower-train-step     source    (.dt)
//                                          canonicalize-hlo     program   (.hlo)
//   2  init     02.init.json               init-plan            source
//   2  eval     02.eval.hlo                lower-eval           program   (needs predict)
//   3  opt-hlo  03.opt-hlo.hlo             pass-pipeline        hlo
//   4  plan     04.plan.pb                 cpu-plan             opt-hlo
//   4  cuda         04.cuda.cu             cuda-codegen         plan      (--backend cuda)
//   4  ptx          04.ptx.ptx             nvrtc                cuda
//   4  cubin-sm_80  04.cubin-sm_80.cubin   nvjitlink            ptx
//   4  cubin-sm_90  04.cubin-sm_90.cubin   nvjitlink            ptx
//
// The CUDA stages (and eval-cuda, eval-ptx, eval-cubin-* from eval-plan) are the executable of
// one backend: a record says so (`backend`), and they stay out of the stage chain the contract
// covers (StageChainJson), so that a run on either backend commits to the same chain and gives
// the same step hashes; BackendStagesJson lists them apart (docs/cuda.md).
//
// Stage 2 is lowered from the checked program, not parsed from stage 1, but stage 1 holds all it
// reads (the loss at B/S and the configuration); naming stage 1 keeps the chain linear. init
// reads only stage 1's configuration. eval also reads the predict function, which stage 1 does
// not hold, so it names the program.
//
// Thread safety: a table is plain data; build it on one thread. Determinism: records hold only
// bytes and digests — no paths, times or host facts.
#ifndef DETRAIN_DRIVER_STAGE_TABLE_H_
#define DETRAIN_DRIVER_STAGE_TABLE_H_

#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/status.h"
#include "compiler/passes/pipeline.h"

namespace detrain::driver {

inline constexpr char kStageProgram[] = "program";
inline constexpr char kStageSource[] = "source";
inline constexpr char kStageHlo[] = "hlo";
inline constexpr char kStageInit[] = "init";
inline constexpr char kStageEval[] = "eval";
inline constexpr char kStageOptHlo[] = "opt-hlo";
inline constexpr char kStagePlan[] = "plan";
inline constexpr char kStageEvalPlan[] = "eval-plan";  // the eval program, optimized and planned
// The CUDA executable of the plan, and of the eval plan (prefix "eval-").
inline constexpr char kStageCuda[] = "cuda";
inline constexpr char kStagePtx[] = "ptx";
inline constexpr char kStageCubinPrefix[] = "cubin-";  // + the architecture, e.g. cubin-sm_90
inline constexpr char kEvalPrefix[] = "eval-";
inline constexpr char kBackendCuda[] = "cuda";

// The folder of per-pass dumps next to the stage files, and the plan's protobuf text (for
// people; not a stage, never hashed).
inline constexpr char kPassDumpDir[] = "passes";
inline constexpr char kPlanTextFile[] = "04.plan.txt";

struct Transform {
  std::string name;          // kebab-case, e.g. "lower-train-step"; empty for stage 0
  std::string options;       // canonical JSON of the transform's options; "{}" when it has none
  std::string input_stage;   // the stage it read; empty for stage 0
  std::string input_sha256;  // that stage's digest (hex)
  std::string pipeline;      // opt-hlo: the pass pipeline spec
  std::vector<passes::PassRecord> passes;  // opt-hlo: one record per pass, in order
  uint32_t plan_format_version = 0;        // plan: the plan schema's version
};

// A transform reading `input_stage`, with canonical JSON `options`.
Transform TransformOf(std::string name, std::string input_stage, std::string options = "{}");

struct StageRecord {
  std::string name;
  int number = 0;         // the stage's place in DESIGN.md §1 (0..4)
  std::string file_name;  // e.g. "02.hlo.hlo"
  std::string bytes;      // the canonical serialization
  std::string sha256;     // of `bytes`, hex
  Transform transform;
  std::string backend;  // "" for the contract's chain; "cuda" for the CUDA executable's stages
};

// What stage 0 is: a .dt program, HLO text, or a run spec (frontend/run_spec.h); it names stage
// 0's file (00.program.dt, 00.program.hlo, 00.program.json).
enum class ProgramKind { kDt, kHlo, kRunSpec };

class StageTable {
 public:
  // Appends a stage; computes its digest and fills `transform.input_sha256` from the stage named
  // `transform.input_stage`, which must already be in the table (an internal error otherwise).
  // `kind` picks stage 0's file name.
  Status Add(std::string_view name, std::string bytes, Transform transform, ProgramKind kind);

  const StageRecord* Find(std::string_view name) const;
  const std::vector<StageRecord>& records() const { return records_; }

  // Called with each record as Add appends it; its error is Add's (the record stays). Compile
  // sets it for the time of one compile (CompileOptions::on_stage): a table it returns has none.
  void set_on_add(std::function<Status(const StageRecord&)> on_add) { on_add_ = std::move(on_add); }

 private:
  std::vector<StageRecord> records_;  // in chain order
  std::function<Status(const StageRecord&)> on_add_;
};

// Every stage name the table knows, in chain order (`compile --emit` offers them), and whether a
// name is one of a backend's executable (the CUDA stages).
std::vector<std::string_view> StageNames();
bool IsBackendStage(std::string_view name);

// The stage's number and file name; an unknown name is an internal error.
Result<int> StageNumber(std::string_view name);
Result<std::string> StageFileName(std::string_view name, ProgramKind kind);

// The canonical JSON of a transform's options object.
Result<std::string> OptionsJson(const nlohmann::json& options);

// [{"pass", "options_sha256", "input_sha256", "output_sha256"}, ...]
nlohmann::json PassRecordsJson(const std::vector<passes::PassRecord>& records);

// One record for a manifest's stage chain: {"stage", "number", "file", "size", "sha256",
// "transform": {"name", "options" (the object), "input_stage", "input_sha256", and "pipeline"
// with "passes" (stage 3) or "plan_format_version" (stage 4)}}; stage 0 has no "transform".
nlohmann::json StageRecordJson(const StageRecord& record);

// The contract's chain: one StageRecordJson per stage of no backend, in chain order.
nlohmann::json StageChainJson(const StageTable& table);

// The stages of `backend`, one StageRecordJson each, in chain order.
nlohmann::json BackendStagesJson(const StageTable& table, std::string_view backend);

}  // namespace detrain::driver

#endif  // DETRAIN_DRIVER_STAGE_TABLE_H_
