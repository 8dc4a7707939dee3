// Typed kernel specs: one instruction of the optimized entry computation (stage 3) turned into
// the spec of schemas/cpu_plan.proto that a backend runs without parsing HLO. Built once, here,
// for every backend (the CPU plan now, CUDA codegen later).
//
// Fused computations and reduction combiners become ScalarPrograms (a linear op list in
// dependency order); dot becomes its canonical [batch, m, k] x [batch, k, n] form; every other
// op carries its attributes as typed fields.
//
// Thread safety: pure functions. Determinism: the spec is a pure function of the instruction and
// the canonical names (never pointers or hash-map order).
#ifndef DETRAIN_COMPILER_CODEGEN_COMMON_KERNEL_SPEC_H_
#define DETRAIN_COMPILER_CODEGEN_COMMON_KERNEL_SPEC_H_

#include "base/status.h"
#include "compiler/ir/module.h"
#include "compiler/ir/printer.h"
#include "schemas/cpu_plan.pb.h"

namespace detrain::codegen {

plan::v2::ElementType ToPlanType(ir::ElementType type);
Result<ir::ElementType> FromPlanType(plan::v2::ElementType type);

// Fills kernel->spec (the oneof) and kernel->implementation for `instr`. An instruction no
// backend can run (an unknown custom-call target, a fusion of non-elementwise ops) is an
// Unimplemented error naming it.
Status BuildKernelSpec(const ir::Instruction& instr, const ir::CanonicalNames& names,
                       plan::v2::Kernel* kernel);

// The version suffix of every implementation name; bump when a kernel's code changes in a way
// that a reader of old plans must know about (results never change: they are fixed by the spec).
inline constexpr const char* kImplementationVersion = "v1";

// Loops nested deeper than this in a plan are refused (schemas/cpu-plan.md "Loops"): each level
// is a plan inside a while kernel of the plan above it, and the builder and every reader (CPU
// kernels, CUDA generator) recurse through them.
inline constexpr int kMaxLoopNesting = 16;

}  // namespace detrain::codegen

#endif  // DETRAIN_COMPILER_CODEGEN_COMMON_KERNEL_SPEC_H_
