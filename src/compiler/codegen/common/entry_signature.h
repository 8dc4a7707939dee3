// What each parameter of an entry computation is, for the executable plan (schemas/cpu-plan.md):
// the runtime binds arguments by role, and the mesh splits the batch roles into the program's
// S canonical shards (DESIGN.md §2, "Canonical shards").
//
// Thread safety: plain data. Determinism: roles and the shard count are part of stage 4's bytes.
#ifndef DETRAIN_COMPILER_CODEGEN_COMMON_ENTRY_SIGNATURE_H_
#define DETRAIN_COMPILER_CODEGEN_COMMON_ENTRY_SIGNATURE_H_

#include <cstdint>
#include <string_view>
#include <vector>

namespace detrain::codegen {

enum class ParamRole : uint8_t {
  kInput,           // an argument of an imported module: no training meaning
  kParameter,       // a model parameter
  kOptimizerState,  // an optimizer slot of a parameter
  kStep,            // the update counter
  kLearningRate,    // this update's learning rate
  kBatch,           // a batch input (features), split into shards along dimension 0
  kLabels,          // a batch input (labels), split into shards along dimension 0
  kKey,             // the step's threefry key
};

inline std::string_view ParamRoleName(ParamRole role) {
  switch (role) {
    case ParamRole::kInput:
      return "input";
    case ParamRole::kParameter:
      return "parameter";
    case ParamRole::kOptimizerState:
      return "optimizer-state";
    case ParamRole::kStep:
      return "step";
    case ParamRole::kLearningRate:
      return "learning-rate";
    case ParamRole::kBatch:
      return "batch";
    case ParamRole::kLabels:
      return "labels";
    case ParamRole::kKey:
      return "key";
  }
  return "unknown";
}

inline bool IsShardedRole(ParamRole role) {
  return role == ParamRole::kBatch || role == ParamRole::kLabels;
}

struct EntrySignature {
  std::vector<ParamRole> roles;  // one per entry parameter; empty: every parameter is kInput
  int64_t shards = 1;            // S: the batch roles hold S equal contiguous shards
};

}  // namespace detrain::codegen

#endif  // DETRAIN_COMPILER_CODEGEN_COMMON_ENTRY_SIGNATURE_H_
