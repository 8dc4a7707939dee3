// The plan builder (stage 4): the optimized module lowered to an executable plan — one kernel per
// scheduled instruction (fusions included) with its typed spec (kernel_spec.h) and canonical HLO
// line, the buffer slices of the arena from buffer assignment (buffer_assignment.h, run once
// here), the entry signature with each parameter's role, and each kernel's shard range — as a
// detrain.plan.v2.Plan Protobuf message (schemas/plan.proto, schemas/plan.md). Both backends
// run this plan: the CPU kernels directly, the CUDA code generator (codegen/cuda) from it.
//
// Reading a plan back is reader.h's job; executing it is the runtime's (src/runtime/).
//
// Thread safety: pure functions. Determinism: BuildPlan's bytes are a pure function of the
// module's canonical text and the signature: every field comes from the canonical order and
// names, and the message is written with deterministic serialization (the schema has no maps).
#ifndef DETRAIN_COMPILER_PLAN_BUILDER_H_
#define DETRAIN_COMPILER_PLAN_BUILDER_H_

#include <cstdint>
#include <string>
#include <string_view>

#include "base/status.h"
#include "compiler/ir/module.h"
#include "compiler/plan/entry_signature.h"
#include "compiler/plan/schema.h"  // kPlanFormatVersion

namespace detrain::plan {

struct BuiltPlan {
  std::string bytes;  // the serialized detrain.plan.v2.Plan
  // The entry's buffer assignment (the compile summary's "buffers"): its peak, the arena its
  // values need (the plan's arena_bytes adds its loops' region), and the sum of every buffer's
  // aligned size (the plan's total_buffer_bytes).
  int64_t peak_bytes = 0, total_bytes = 0;
};

struct PlanOptions {
  // kOldestPlanFormatVersion..kPlanFormatVersion: format 3 is format 4 without updates in place,
  // format 2 is format 3 without donation (a verifier rebuilds a bundle's plan in the format it
  // was recorded in).
  uint32_t format_version = kPlanFormatVersion;
};

// `optimized` must pass ir::VerifyModule (normally the output of passes::RunPipeline).
// `signature.roles` is empty (every parameter kInput) or has one role per entry parameter.
// `canonical_text`, when given, must be ir::PrintModule(optimized) of a verified module (the
// pipeline's last dump): the builder then neither verifies nor prints the module again.
// Format 3 donates the entry's state parameters (roles parameter, optimizer-state and step), in
// entry order, to its first results: the train step returns its new state first, in that order
// (schemas/plan.md "Donation"). Format 4 also lets a dynamic-update-slice or scatter write over
// the operand it reads last, in every plan (plan.md "Updates in place").
Result<BuiltPlan> BuildPlan(const ir::Module& optimized, const EntrySignature& signature = {},
                            std::string_view canonical_text = {}, const PlanOptions& options = {});

// Protobuf text format of a serialized plan, for `detrain compile --emit plan`.
Result<std::string> PlanToText(std::string_view plan_bytes);

}  // namespace detrain::plan

#endif  // DETRAIN_COMPILER_PLAN_BUILDER_H_
