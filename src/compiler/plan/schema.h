// The plan's schema as C++ sees it (schemas/plan.proto, schemas/plan.md): the format version this
// detrain writes and reads, and the Protobuf enums' C++ twins — element types (ir::ElementType)
// and parameter roles (param_roles.def). The role mapping is generated from the .def table, and
// schema.cc checks at compile time that every proto value is the table's.
//
// Thread safety: pure functions. Determinism: fixed tables.
#ifndef DETRAIN_COMPILER_PLAN_SCHEMA_H_
#define DETRAIN_COMPILER_PLAN_SCHEMA_H_

#include <cstdint>

#include "base/status.h"
#include "compiler/ir/element_type.h"
#include "compiler/plan/entry_signature.h"
#include "schemas/plan.pb.h"

namespace detrain::plan {

// Plan.format_version (schemas/plan.md "Versioning"): the version this detrain writes by default,
// and the oldest it still writes and reads. Format 4 also lets a dynamic-update-slice or a scatter
// write over its operand where it reads it last (plan.md "Updates in place"); format 3 is format 4
// without those, and donates the training state's buffers to the step's new state (plan.md
// "Donation"); format 2 is format 3 without donation.
inline constexpr uint32_t kPlanFormatVersion = 4;
inline constexpr uint32_t kOldestPlanFormatVersion = 2;
constexpr bool IsKnownPlanFormat(int64_t version) {
  return version >= kOldestPlanFormatVersion && version <= kPlanFormatVersion;
}

// Loops nested deeper than this in a plan are refused (schemas/plan.md "Loops"): each level
// is a plan inside a while kernel of the plan above it, and the builder and the reader
// (reader.h) recurse through them.
inline constexpr int kMaxLoopNesting = 16;

v2::ElementType ToPlanType(ir::ElementType type);
// An unknown or unspecified value is an InvalidArgument (a plan is a file and can lie).
Result<ir::ElementType> FromPlanType(v2::ElementType type);

v2::ParamRole ToPlanRole(ParamRole role);
// A value the table does not know (a plan from a later detrain) reads as kInput: no training
// meaning, which is what an unknown role can be given.
ParamRole FromPlanRole(v2::ParamRole role);

}  // namespace detrain::plan

#endif  // DETRAIN_COMPILER_PLAN_SCHEMA_H_
