// What each parameter of an entry computation is, for the executable plan (schemas/plan.md): the
// runtime binds arguments by role, and the mesh splits the batch roles into the program's S
// canonical shards (DESIGN.md §2, "Canonical shards"). The roles are declared once, in
// param_roles.def; the Protobuf mapping is schema.h's.
//
// Thread safety: plain data. Determinism: roles and the shard count are part of stage 4's bytes.
#ifndef DETRAIN_COMPILER_PLAN_ENTRY_SIGNATURE_H_
#define DETRAIN_COMPILER_PLAN_ENTRY_SIGNATURE_H_

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

namespace detrain::plan {

enum class ParamRole : uint8_t {
#define ROLE(e, name, proto, state, sharded, run_spec) e,
#include "compiler/plan/param_roles.def"
#undef ROLE
};

// Every role, in declaration order.
inline constexpr ParamRole kParamRoles[] = {
#define ROLE(e, name, proto, state, sharded, run_spec) ParamRole::e,
#include "compiler/plan/param_roles.def"
#undef ROLE
};
inline constexpr int kParamRoleCount = static_cast<int>(sizeof(kParamRoles) / sizeof(ParamRole));

// "input", "parameter", "optimizer-state", ...
constexpr std::string_view ParamRoleName(ParamRole role) {
  switch (role) {
#define ROLE(e, name, proto, state, sharded, run_spec) \
  case ParamRole::e:                                   \
    return name;
#include "compiler/plan/param_roles.def"
#undef ROLE
  }
  return "unknown";
}

// The role named `name`, if any.
constexpr std::optional<ParamRole> ParamRoleFromName(std::string_view name) {
  for (ParamRole role : kParamRoles) {
    if (ParamRoleName(role) == name) return role;
  }
  return std::nullopt;
}

// The roles whose values the run carries from step to step (parameters, optimizer state, step).
constexpr bool IsStateRole(ParamRole role) {
  switch (role) {
#define ROLE(e, name, proto, state, sharded, run_spec) \
  case ParamRole::e:                                   \
    return state;
#include "compiler/plan/param_roles.def"
#undef ROLE
  }
  return false;
}

// The batch roles: S equal contiguous shards along dimension 0.
constexpr bool IsShardedRole(ParamRole role) {
  switch (role) {
#define ROLE(e, name, proto, state, sharded, run_spec) \
  case ParamRole::e:                                   \
    return sharded;
#include "compiler/plan/param_roles.def"
#undef ROLE
  }
  return false;
}

// The roles a run spec's entry may name (frontend/run_spec.h).
constexpr bool IsRunSpecRole(ParamRole role) {
  switch (role) {
#define ROLE(e, name, proto, state, sharded, run_spec) \
  case ParamRole::e:                                   \
    return run_spec;
#include "compiler/plan/param_roles.def"
#undef ROLE
  }
  return false;
}

struct EntrySignature {
  std::vector<ParamRole> roles;  // one per entry parameter; empty: every parameter is kInput
  int64_t shards = 1;            // S: the batch roles hold S equal contiguous shards
};

}  // namespace detrain::plan

#endif  // DETRAIN_COMPILER_PLAN_ENTRY_SIGNATURE_H_
