// Typed kernel specs: one instruction of the optimized entry computation (stage 3) turned into
// the spec of schemas/plan.proto that a backend runs without parsing HLO. Built once, here,
// for every backend: the CPU kernels run it, the CUDA code generator writes it out.
//
// Fused computations and reduction combiners become ScalarPrograms (a linear op list in
// dependency order); dot becomes its canonical [batch, m, k] x [batch, k, n] form; every other
// op carries its attributes as typed fields.
//
// Thread safety: pure functions. Determinism: the spec is a pure function of the instruction and
// the canonical names (never pointers or hash-map order).
#ifndef DETRAIN_COMPILER_PLAN_KERNEL_SPEC_H_
#define DETRAIN_COMPILER_PLAN_KERNEL_SPEC_H_

#include "base/status.h"
#include "compiler/ir/module.h"
#include "compiler/ir/printer.h"
#include "compiler/plan/schema.h"  // kMaxLoopNesting
#include "schemas/plan.pb.h"

namespace detrain::plan {

// Fills kernel->spec (the oneof) and kernel->implementation for `instr`. An instruction no
// backend can run (an unknown custom-call target, a fusion of non-elementwise ops) is an
// Unimplemented error naming it.
// Whether `instr`'s kernel is elementwise (one op, or a fusion without a reduce): each element of
// its result is computed from its operands' elements at the same index, or from a one-element
// operand — so it may write over an operand of its result's size (plan format 3's donation).
bool IsElementwiseKernel(const ir::Instruction& instr);

Status BuildKernelSpec(const ir::Instruction& instr, const ir::CanonicalNames& names,
                       plan::v2::Kernel* kernel);

// The version suffix of every implementation name; bump when a kernel's code changes in a way
// that a reader of old plans must know about (results never change: they are fixed by the spec).
inline constexpr const char* kImplementationVersion = "v1";

}  // namespace detrain::plan

#endif  // DETRAIN_COMPILER_PLAN_KERNEL_SPEC_H_
