// The CPU executable (stage 4): the optimized module lowered to an executable plan — one kernel
// per scheduled instruction (fusions included) with its typed spec (codegen/common/kernel_spec.h)
// and canonical HLO line, the buffer slices of the arena from buffer assignment, the entry
// signature with each parameter's role, and each kernel's shard range — as a
// detrain.plan.v2.Plan Protobuf message (schemas/cpu_plan.proto, schemas/cpu-plan.md).
//
// Executing a plan is the runtime's job (src/runtime/), not this library's.
//
// Thread safety: pure functions. Determinism: BuildPlan's bytes are a pure function of the
// module's canonical text and the signature: every field comes from the canonical order and
// names, and the message is written with deterministic serialization (the schema has no maps).
#ifndef DETRAIN_COMPILER_CODEGEN_CPU_PLAN_H_
#define DETRAIN_COMPILER_CODEGEN_CPU_PLAN_H_

#include <string>
#include <string_view>

#include "base/status.h"
#include "compiler/codegen/common/entry_signature.h"
#include "compiler/ir/module.h"

namespace detrain::codegen::cpu {

inline constexpr uint32_t kPlanFormatVersion = 2;

// `optimized` must pass ir::VerifyModule (normally the output of passes::RunPipeline).
// `signature.roles` is empty (every parameter kInput) or has one role per entry parameter.
// `canonical_text`, when given, must be ir::PrintModule(optimized) of a verified module (the
// pipeline's last dump): the builder then neither verifies nor prints the module again.
// Returns the serialized detrain.plan.v2.Plan.
Result<std::string> BuildPlan(const ir::Module& optimized, const EntrySignature& signature = {},
                              std::string_view canonical_text = {});

// Protobuf text format of a serialized plan, for `detrain compile --emit plan`.
Result<std::string> PlanToText(std::string_view plan_bytes);

}  // namespace detrain::codegen::cpu

#endif  // DETRAIN_COMPILER_CODEGEN_CPU_PLAN_H_
