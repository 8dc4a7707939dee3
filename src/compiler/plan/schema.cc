// See schema.h.
#include "compiler/plan/schema.h"

#include <string>

namespace detrain::plan {

namespace pb = v2;

// The table's order is the proto's: enumerator i is proto value i.
#define ROLE(e, name, proto, state, sharded, run_spec)                         \
  static_assert(static_cast<int>(ParamRole::e) == static_cast<int>(pb::proto), \
                "param_roles.def: " #e " is not schemas/plan.proto's " #proto);
#include "compiler/plan/param_roles.def"
#undef ROLE
static_assert(kParamRoleCount == pb::ParamRole_ARRAYSIZE,
              "param_roles.def and schemas/plan.proto list different roles");

pb::ElementType ToPlanType(ir::ElementType type) {
  switch (type) {
    case ir::ElementType::kPred:
      return pb::PRED;
    case ir::ElementType::kS32:
      return pb::S32;
    case ir::ElementType::kU32:
      return pb::U32;
    case ir::ElementType::kS64:
      return pb::S64;
    case ir::ElementType::kU64:
      return pb::U64;
    case ir::ElementType::kF32:
      return pb::F32;
  }
  return pb::ELEMENT_TYPE_UNSPECIFIED;
}

Result<ir::ElementType> FromPlanType(pb::ElementType type) {
  switch (type) {
    case pb::PRED:
      return ir::ElementType::kPred;
    case pb::S32:
      return ir::ElementType::kS32;
    case pb::U32:
      return ir::ElementType::kU32;
    case pb::S64:
      return ir::ElementType::kS64;
    case pb::U64:
      return ir::ElementType::kU64;
    case pb::F32:
      return ir::ElementType::kF32;
    default:
      break;
  }
  return InvalidArgument("plan: unknown element type " + std::to_string(static_cast<int>(type)));
}

pb::ParamRole ToPlanRole(ParamRole role) {
  switch (role) {
#define ROLE(e, name, proto, state, sharded, run_spec) \
  case ParamRole::e:                                   \
    return pb::proto;
#include "compiler/plan/param_roles.def"
#undef ROLE
  }
  return pb::INPUT;
}

ParamRole FromPlanRole(pb::ParamRole role) {
  switch (role) {
#define ROLE(e, name, proto, state, sharded, run_spec) \
  case pb::proto:                                      \
    return ParamRole::e;
#include "compiler/plan/param_roles.def"
#undef ROLE
    default:
      break;
  }
  return ParamRole::kInput;
}

}  // namespace detrain::plan
