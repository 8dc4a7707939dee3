// The training state — the train step's carried tensors in entry order (driver::StateSpec):
// the parameters, the optimizer slots and the update counter — and what every reader of it
// needs: its layout from the compile result, its views for digests (DESIGN.md §4), its SHA-256
// roots, and its safetensors form (checkpoints and final weights, schemas/bundle.md §4).
//
// Thread safety: pure functions (the pool is borrowed). Determinism: every result is a function
// of the tensors' names, roles, shapes and bytes.
#ifndef DETRAIN_RUNTIME_TRAIN_TRAIN_STATE_H_
#define DETRAIN_RUNTIME_TRAIN_TRAIN_STATE_H_

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "attest/sha256.h"
#include "attest/tensor_digest.h"
#include "base/safetensors.h"
#include "base/status.h"
#include "base/thread_pool.h"
#include "driver/compile.h"

namespace detrain::runtime {

using StateTensor = driver::StateTensor;
using TrainState = std::vector<StateTensor>;

// The final weights a run writes, with or without a bundle (schemas/bundle.md "Final weights"):
// the parameters after the last step, at this path under the output directory.
inline constexpr char kFinalWeights[] = "final/weights.safetensors";
inline constexpr char kWeightsFormat[] = "detrain.weights.v1";

// An empty state of the compile result's names, roles and shapes (zero bytes).
TrainState StateLayout(const std::vector<driver::StateSpec>& specs);

// Whether any tensor's values are older than the devices' (StateTensor::stale, Trainer::Step).
bool IsStale(const TrainState& state);

// Views of the state for digests: all of it, the parameters only, the rest (the optimizer
// state: slots and counter).
std::vector<attest::TensorView> StateViews(const TrainState& state);
std::vector<attest::TensorView> ParamViews(const TrainState& state);
std::vector<attest::TensorView> OptimizerViews(const TrainState& state);

// The SHA-256 roots of a state: parameters, then optimizer state.
Result<std::pair<attest::Digest256, attest::Digest256>> StateRoots(const TrainState& state,
                                                                   ThreadPool* pool);

// The state's tensors as safetensors, and back: names, dtypes and shapes must match the
// layout's, and every tensor of the layout must be in the file and no other. StateRefs borrows
// the tensors (to write a file without a copy of the state; valid while `state` is unchanged),
// all of them or the parameters only; StateFile copies them.
std::vector<SafeTensorRef> StateRefs(const TrainState& state, bool params_only = false);
SafetensorsFile StateFile(const TrainState& state, std::map<std::string, std::string> metadata,
                          bool params_only = false);
Status LoadState(const SafetensorsFile& file, TrainState* layout);

}  // namespace detrain::runtime

#endif  // DETRAIN_RUNTIME_TRAIN_TRAIN_STATE_H_
