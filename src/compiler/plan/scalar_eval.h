// A decoded scalar program (scalar_program.h) evaluated on scalars, on the host: a reduction
// combiner applied to two values, a fused reduction's initial value, the uniform ops of an
// elementwise program. The CPU kernels evaluate their programs with it (their vectorized
// chunks live in runtime/cpu/), and the executor's all-reduce combines replicas' values with
// it. Every op's meaning comes from src/compiler/semantics/.
//
// Thread safety: pure functions. Determinism: the result is a function of the program and the
// inputs' bits.
#ifndef DETRAIN_COMPILER_PLAN_SCALAR_EVAL_H_
#define DETRAIN_COMPILER_PLAN_SCALAR_EVAL_H_

#include <cstdint>
#include <cstring>
#include <vector>

#include "base/status.h"
#include "compiler/ir/element_type.h"
#include "compiler/plan/scalar_program.h"
#include "compiler/semantics/semantics.h"

namespace detrain::plan {

// Evaluates a program on scalar inputs (bits zero-extended to 64); returns the result's bits.
uint64_t EvalScalar(const DecodedProgram& program, const uint64_t* inputs);

// Evaluates the ops with uniform[i] set (their arguments are uniform too) on scalar inputs:
// values[i] gets op i's bits. Other entries of `values` are left as they are.
void EvalUniform(const DecodedProgram& program, const std::vector<uint8_t>& uniform,
                 const uint64_t* inputs, uint64_t* values);

// A reduction combiner (a program of inputs 0 = accumulator, 1 = element) applied to typed
// scalars: the op itself when the program is one binary op of its two inputs, else EvalScalar.
template <typename T>
T Combine(const DecodedProgram& combiner, T acc, T x) {
  if (combiner.direct) {
    return combiner.swapped ? semantics::ApplyBinary<T>(combiner.direct_op, x, acc)
                            : semantics::ApplyBinary<T>(combiner.direct_op, acc, x);
  }
  uint64_t in[2] = {0, 0};
  std::memcpy(&in[0], &acc, sizeof(T));
  std::memcpy(&in[1], &x, sizeof(T));
  uint64_t r = EvalScalar(combiner, in);
  T v;
  std::memcpy(&v, &r, sizeof(T));
  return v;
}

}  // namespace detrain::plan

#endif  // DETRAIN_COMPILER_PLAN_SCALAR_EVAL_H_
