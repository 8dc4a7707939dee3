// The compile driver (DESIGN.md §9, layer 4): a .dt program or an .hlo file through the stage
// chain, as a StageTable (stage_table.h) that `detrain compile` prints and dumps and the bundle
// writer stores. For a .dt program it also keeps the typed run configuration of stage 1's header
// and the train step's entry signature (the role of every parameter, and S); for HLO input every
// parameter is kInput and S = 1.
//
// A .dt program: stage 0 is the file; the checker resolves the configuration; the data source is
// read (its example shapes must be what the loss takes, its size resolves the split and
// `epochs`, its files' SHA-256 go into stage 1's header, so the chain commits to the data too);
// then stage 1 (source graph), 2 (train step), init (the parameter initialization plan: each
// parameter's initializer and key, canonical JSON; the runtime draws the values with
// src/attest/prng) and eval (when there is a validation split). HLO text: stage 0 is the file,
// stage 2 its canonical form. With options.backend, stages 3 (the pass pipeline) and 4 (the CPU
// plan; with options.cuda also the CUDA source, PTX and cubins) follow from stage 2's bytes: the
// module is parsed back from them, so stage 3 is a
// function of stage 2's digest alone, as a verifier recompiling it needs.
//
// Errors are user-facing: "file:line:col: error: ..." for program errors, "file:line: ..." for
// data errors, "file:line:col: ..." for HLO text.
// Thread safety: pure function of the files; concurrent calls are safe. Determinism: every stage
// is a pure function of the program's and the data's bytes and the pipeline spec — never of the
// path spelling, options.threads or the machine (tests/driver/compile_test.cc).
#ifndef DETRAIN_DRIVER_COMPILE_H_
#define DETRAIN_DRIVER_COMPILE_H_

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "base/status.h"
#include "compiler/codegen/cuda/cuda_program.h"
#include "compiler/codegen/cuda/toolchain.h"
#include "compiler/ir/literal.h"
#include "compiler/plan/entry_signature.h"
#include "compiler/plan/schema.h"
#include "driver/stage_table.h"
#include "frontend/data.h"
#include "frontend/run_config.h"

namespace detrain::driver {

struct CompileOptions {
  bool backend = true;   // build stages 3 and 4
  std::string pipeline;  // empty: passes::kDefaultPipeline
  // The plan format of stage 4 (plan/schema.h IsKnownPlanFormat): a verifier rebuilds a bundle's
  // plans in the format it records; it is hashed (the stage's transform names it).
  uint32_t plan_format_version = plan::kPlanFormatVersion;
  int threads = 1;  // compiler threads; no stage depends on them
  // With backend: also the CUDA executable of the plan and the eval plan (stage_table.h),
  // through NVRTC and nvJitLink (an error where this detrain was built without them).
  bool cuda = false;
  // With cuda: the PTX and cubin stages taken as recorded instead of running NVRTC and
  // nvJitLink, by stage name ("ptx", "cubin-sm_90", "eval-ptx", ...) — their bytes and their
  // transform options (canonical JSON). The CUDA source is generated either way; every stage
  // this detrain builds must be given. For a verifier whose toolchain is not the one a bundle
  // names (schemas/bundle.md §6.1): the chain is rebuilt around the recorded stages, which only
  // their digests then vouch for.
  struct RecordedStage {
    std::string bytes;
    std::string options;
  };
  std::optional<std::map<std::string, RecordedStage>> recorded_toolchain_stages;
  // Where to read each data file, by the path as the program writes it (a verifier pointing at
  // data received separately, or at a bundle's embedded copy). Unlisted paths are read as the
  // program writes them, relative to its directory. Never changes a stage: digests are recorded
  // under the program's own spelling.
  std::map<std::string, std::string> data_files;
  // Called with each stage's record as soon as the stage is made, in chain order; an error stops
  // the compile and is its error. A verifier compares each stage with the one a bundle records,
  // so that a program that differs stops at the first stage that differs.
  std::function<Status(const StageRecord&)> on_stage;
  // The front end's checks of declared sizes against the memory budget (base/budget.h: the
  // parameters, the batch, every instruction's result) wait until its stages (0 to 2, init,
  // eval) are made and passed to on_stage; the first excess is then the compile's error, before
  // the backend starts. The front end allocates nothing of a declared size, so a program that
  // differs from a record is found to differ under any budget.
  bool stages_before_budget = false;
};

// A plan stage's CUDA executable, as the compile made it (CompileOptions::cuda): the generated
// program — stage "cuda"'s source with its launch plan — and its compiled images (the stages
// "ptx" and "cubin-*"). The CUDA backend runs these rather than generating them again.
struct CudaExecutable {
  std::shared_ptr<const codegen::cuda::CudaProgram> program;
  std::shared_ptr<const codegen::cuda::CudaImages> images;
};

// One tensor of the state a train step carries from step to step — the parameters, the
// optimizer slots and the update counter —, in the step's entry order: what the runtime
// allocates, initializes, checkpoints and digests. Typed here once, from the step the driver
// lowered or imported, so that no later layer decodes text (a type string, a slot's name) to find
// it.
struct StateSpec {
  std::string name;  // the entry parameter's: a .dt parameter, NAME_s0.. its slots, `count`
  plan::ParamRole role = plan::ParamRole::kParameter;  // kParameter, kOptimizerState, kStep
  ir::Shape shape;
  // A .dt program's optimizer slot: the index in the state of the parameter it belongs to. -1
  // for every other entry (a run spec's optimizer state is its optimizer's own tree of arrays).
  int64_t owner = -1;
};

// A state tensor with its value: a run spec's initial state, and the runtime's training state
// (runtime/train/train_state.h).
struct StateTensor {
  std::string name;
  plan::ParamRole role = plan::ParamRole::kParameter;
  ir::Literal value;
  // Nonzero while `value` is, bit for bit, the train step's result that the trainer left in the
  // executor's arena (runtime/train/trainer.h, resident state); whatever writes `value` other
  // than the trainer sets it to 0.
  uint64_t resident = 0;
  // True while `value` is older than the train step's result that the trainer left on its
  // devices without reading it out (Trainer::Step with read_state false): Trainer::Sync reads it.
  bool stale = false;
};

struct CompileResult {
  ProgramKind program_kind = ProgramKind::kDt;
  bool is_hlo_input() const { return program_kind == ProgramKind::kHlo; }
  bool is_run_spec() const { return program_kind == ProgramKind::kRunSpec; }
  StageTable stages;
  std::optional<frontend::RunConfig> config;  // .dt only: stage 1's configuration
  plan::EntrySignature signature;             // of stage 2's entry (and so of stages 3 and 4)
  // Every pass's output, ("NN.pass-name.hlo", canonical text), for passes/ (with backend).
  std::vector<std::pair<std::string, std::string>> pass_dumps;
  int64_t peak_bytes = 0, total_bytes = 0;  // plan::BuiltPlan's (with backend)
  // With options.cuda: each plan stage's CUDA executable, by its stage prefix ("" for the plan,
  // kEvalPrefix for the eval plan).
  std::map<std::string, CudaExecutable> cuda;
  // .dt only: the parsed data as read (before the split and standardization), for the runtime.
  std::shared_ptr<const frontend::Dataset> dataset;
  // A run spec only: the files stage 0 names besides the data — the train step's HLO text and the
  // initial state — as (path relative to stage 0's directory, bytes). A bundle keeps them in
  // program/ beside stage 0, so that the bundle alone recompiles.
  std::vector<std::pair<std::string, std::string>> program_files;
  // A program that trains (.dt or run spec): the state its train step carries, in entry order.
  std::vector<StateSpec> state;
  // A run spec only: the initial state (in `state` order), which the trainer starts from instead
  // of drawing it.
  std::shared_ptr<const std::vector<StateTensor>> initial_state;
};

// True when `path` names HLO text (ends in .hlo); Compile reads anything else as a .dt program.
bool IsHloInput(const std::string& path);
// True when `path` ends in .dt.
bool IsDtProgram(const std::string& path);
// True when `path` ends in .json: a run spec (frontend/run_spec.h).
bool IsRunSpec(const std::string& path);

// A .dt program, an .hlo file or a run spec through every stage the options ask for. What the
// run allocates is accounted against the memory budget (base/budget.h) before a later step could
// allocate it: each declared tensor (the front end), the training state (after the front end:
// the parameters, optimizer slots and step counter together), and the plans' buffers at their
// peak (when they are built). Folding constants never materializes a tensor of a declared size.
Result<CompileResult> Compile(const std::string& path, const CompileOptions& options);

// What one trainer of `c` holds at once, as Compile accounted it: the training state and the
// plan's buffers at their peak (the state alone without a plan). A replay that runs several
// trainers at once runs no more than the memory budget holds.
int64_t TrainerBytes(const CompileResult& c);

}  // namespace detrain::driver

#endif  // DETRAIN_DRIVER_COMPILE_H_
