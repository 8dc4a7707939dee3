// A plan's ScalarProgram (schemas/plan.proto) checked and decoded once into a typed op list:
// every op's kind, result type and argument type resolved, every argument index checked to point
// at an earlier op, every type rule of the op table enforced. The plan reader decodes every
// program of a plan (reader.h), and both backends start from that: the CPU kernels evaluate it
// (scalar_eval.h, runtime/cpu/), the CUDA code generator writes it out as straight-line device
// code (codegen/cuda/).
//
// Thread safety: pure functions; a decoded program is immutable. Determinism: a function of the
// program's bytes.
#ifndef DETRAIN_COMPILER_PLAN_SCALAR_PROGRAM_H_
#define DETRAIN_COMPILER_PLAN_SCALAR_PROGRAM_H_

#include <cstdint>
#include <vector>

#include "base/status.h"
#include "compiler/ir/attributes.h"
#include "compiler/ir/element_type.h"
#include "compiler/ir/opcode.h"
#include "schemas/plan.pb.h"

namespace detrain::plan {

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

// The number of arguments an op of `kind` takes.
int OpArity(plan::v2::ScalarOp::Kind kind);

// Checks and decodes `program`. `input_types[i]` is the element type of input i; an INPUT op
// must agree with it. `allow_reduced` admits REDUCED ops (of type `reduced_type`).
Result<DecodedProgram> DecodeProgram(const plan::v2::ScalarProgram& program,
                                     const std::vector<ir::ElementType>& input_types,
                                     bool allow_reduced = false,
                                     ir::ElementType reduced_type = ir::ElementType::kF32);

// Which ops of `program` have the same value at every index of an index space in which input i
// has input_elements[i] elements (1: a scalar): constants, scalar inputs, and ops of such ops.
std::vector<uint8_t> UniformOps(const DecodedProgram& program,
                                const std::vector<int64_t>& input_elements);

}  // namespace detrain::plan

#endif  // DETRAIN_COMPILER_PLAN_SCALAR_PROGRAM_H_
