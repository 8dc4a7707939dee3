// A run spec (schemas/run-spec.md): the JSON file that makes an exported train step — HLO text
// from jax.jit(step).lower(...), written by tools/export_jax.py — a detrain program. It names
// the step's HLO file and its initial state (safetensors), says what each entry parameter of
// the step is (a parameter, an optimizer-state tensor, the update counter, the batch, the labels,
// the step key), and gives the data source and the train settings in the members a .dt
// program's configuration has (run_config.h).
//
// The step's contract: its entry parameters are the spec's `entry` list, in order; its result
// is a tuple of the new value of every state entry (parameter, optimizer-state, step), in entry
// order, then the loss, f32[]. The driver (driver/run_spec_import.cc) checks the HLO, the
// initial state and the data against the spec.
//
// ParseRunSpec treats the file as hostile: every member is checked against what its object may
// hold (an unknown member is an error, so a misspelled setting is never silently ignored), every
// file path must be relative and stay inside the spec's directory, names are unique, and errors
// name the member: "run spec: entry[3].name: ...". JSON syntax errors give the line and column.
//
// Thread safety: pure functions. Determinism: the spec's bytes are stage 0; nothing here reads
// the environment.
#ifndef DETRAIN_FRONTEND_RUN_SPEC_H_
#define DETRAIN_FRONTEND_RUN_SPEC_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "compiler/plan/entry_signature.h"
#include "frontend/run_config.h"

namespace detrain::frontend {

inline constexpr char kRunSpecFormat[] = "detrain.run-spec";
inline constexpr int64_t kRunSpecFormatVersion = 1;
// The most entry parameters a spec may list (a flattened Flax model with its optimizer state
// has a few hundred).
inline constexpr size_t kMaxRunSpecEntries = 1 << 16;

struct RunSpecEntry {
  plan::ParamRole role = plan::ParamRole::kParameter;
  // State entries (parameter, optimizer-state, step): the tensor's name in the initial state, in
  // checkpoints and in the final weights; empty for batch, labels and key.
  std::string name;
};

struct RunSpec {
  std::string train_step;     // the HLO text file, in the spec's directory
  std::string initial_state;  // the safetensors file, in the spec's directory
  std::vector<RunSpecEntry> entry;
  DataConfig data;
  TrainConfig train;
};

// Parses and checks a run spec's text; `path` prefixes the messages.
Result<RunSpec> ParseRunSpec(std::string_view text, const std::string& path);

// A file a run spec may name: a plain name (no '/', '\\' or NUL, not "." or "..", at most 255
// bytes) — in the spec's directory, as in a bundle's program/ beside the spec.
bool IsPlainFileName(std::string_view name);

}  // namespace detrain::frontend

#endif  // DETRAIN_FRONTEND_RUN_SPEC_H_
