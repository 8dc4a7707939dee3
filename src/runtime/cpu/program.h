// The validated plan's pieces as the CPU kernels name them: a checked buffer (plan::Array, here
// ArrayRef) and decoded scalar programs with their host evaluation (compiler/plan/). The CPU
// kernels evaluate programs vectorized over chunks of an index space (isa_kernels.h) or, for
// combiners and a fused reduction's initial value, on scalars (plan::EvalScalar, plan::Combine).
//
// Thread safety: the types are immutable once made; the functions are pure.
#ifndef DETRAIN_RUNTIME_CPU_PROGRAM_H_
#define DETRAIN_RUNTIME_CPU_PROGRAM_H_

#include "compiler/plan/reader.h"
#include "compiler/plan/scalar_eval.h"
#include "compiler/plan/scalar_program.h"

namespace detrain::runtime::cpu {

using ArrayRef = plan::Array;  // a buffer of the validated plan
using plan::Combine;
using plan::DecodedOp;
using plan::DecodedProgram;
using plan::EvalScalar;
using plan::EvalUniform;
using plan::UniformOps;

}  // namespace detrain::runtime::cpu

#endif  // DETRAIN_RUNTIME_CPU_PROGRAM_H_
