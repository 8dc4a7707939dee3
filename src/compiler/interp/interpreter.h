// The reference interpreter: the semantic oracle for passes and backends (STYLE.md point 6).
//
// Naive and exact: every op is evaluated element by element following the canonical semantics
// of docs/ir.md — `dot` and `convolution` as one fmaf chain per output element, `reduce` and
// `reduce-window` with 64-element leaves and a pairwise tree, `scatter` in update order,
// `all-reduce` as a pairwise tree over replica index, transcendental functions from the
// correctly rounded detrain::crmath, threefry from detrain::prng. No vectorization, no
// threads, nothing that could change a bit.
//
// Replicas: EvaluateReplicated runs the entry computation on R replicas in lockstep (one
// argument list per replica); all-reduce combines across them. Evaluate is the R = 1 case.
//
// Thread safety: pure functions of their arguments; safe to call concurrently.
#ifndef DETRAIN_COMPILER_INTERP_INTERPRETER_H_
#define DETRAIN_COMPILER_INTERP_INTERPRETER_H_

#include <vector>

#include "base/status.h"
#include "compiler/ir/module.h"

namespace detrain::interp {

// An evaluation stops with an error when a loop (`while`) and the loops nested in it have run
// this many iterations in all: hostile input must not hang it. The backends' while kernel keeps
// the same budget, so a loop fails at the same iteration everywhere.
inline constexpr int64_t kMaxWhileIterations = int64_t{1} << 18;

// `module` must have passed ir::VerifyModule. Arguments must match the entry's parameter
// shapes (checked; an error names the parameter).
Result<ir::Literal> Evaluate(const ir::Module& module, const std::vector<ir::Literal>& args);

Result<std::vector<ir::Literal>> EvaluateReplicated(
    const ir::Module& module, const std::vector<std::vector<ir::Literal>>& args_per_replica);

}  // namespace detrain::interp

#endif  // DETRAIN_COMPILER_INTERP_INTERPRETER_H_
