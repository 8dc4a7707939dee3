// A plan's ScalarProgram decoded once, at load, into a compact op list the CPU kernels evaluate:
// vectorized over chunks of an index space (elementwise kernels) or on scalars (combiners, a
// fused reduction's initial value). Every op's meaning comes from src/compiler/semantics/.
//
// Thread safety: a decoded program is immutable; evaluation functions are pure.
#ifndef DETRAIN_RUNTIME_CPU_PROGRAM_H_
#define DETRAIN_RUNTIME_CPU_PROGRAM_H_

#include <cstdint>
#include <cstring>
#include <vector>

#include "base/status.h"
#include "compiler/ir/attributes.h"
#include "compiler/ir/element_type.h"
#include "compiler/ir/opcode.h"
#include "compiler/semantics/semantics.h"
#include "schemas/cpu_plan.pb.h"

namespace detrain::runtime::cpu {

struct DecodedOp {
  plan::v2::ScalarOp::Kind kind = plan::v2::ScalarOp::KIND_UNSPECIFIED;
  ir::ElementType type = ir::ElementType::kF32;  // result type
  ir::ElementType arg_type =
      ir::ElementType::kF32;  // type of args[0] (compare, convert) or args[1] (select)
  ir::UnaryOp unary{};
  ir::BinaryOp binary{};
  ir::Direction direction = ir::Direction::kEq;
  int32_t args[3] = {0, 0, 0};
  int32_t input = 0;
  uint64_t constant = 0;  // the constant's bits, zero-extended
};

struct DecodedProgram {
  std::vector<DecodedOp> ops;
  int32_t result = 0;
  int32_t num_inputs = 0;  // 1 + the largest INPUT index (0 if none)
  // Set when the program is exactly binary(input 0, input 1) or binary(input 1, input 0): the
  // combiner fast path.
  bool direct = false;
  bool swapped = false;
  ir::BinaryOp direct_op{};
};

// Checks and decodes `program`. `input_types[i]` is the element type of input i; an INPUT op
// must agree with it. `allow_reduced` admits REDUCED ops (of type `reduced_type`).
Result<DecodedProgram> DecodeProgram(const plan::v2::ScalarProgram& program,
                                     const std::vector<ir::ElementType>& input_types,
                                     bool allow_reduced = false,
                                     ir::ElementType reduced_type = ir::ElementType::kF32);

// Evaluates a program on scalar inputs (bits zero-extended to 64); returns the result's bits.
uint64_t EvalScalar(const DecodedProgram& program, const uint64_t* inputs);

// Which ops of `program` have the same value at every index of an index space in which input i
// has input_elements[i] elements (1: a scalar): constants, scalar inputs, and ops of such ops.
std::vector<uint8_t> UniformOps(const DecodedProgram& program,
                                const std::vector<int64_t>& input_elements);

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

}  // namespace detrain::runtime::cpu

#endif  // DETRAIN_RUNTIME_CPU_PROGRAM_H_
