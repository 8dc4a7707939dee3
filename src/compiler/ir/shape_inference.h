// Shape inference: the result shape an instruction's operands and attributes determine, with
// every typing rule of every op (docs/ir.md lists them). Used by the builder (to compute
// shapes) and the verifier (to check declared shapes).
//
// Ops whose result shape is a free choice (parameter, constant, iota, broadcast, reshape,
// convert, bitcast-convert) read it from instr.shape and check it against the rules.
// Messages state the rule broken ("operands of add must have the same shape, got f32[2] and
// f32[3]"); the verifier adds the instruction's name and location.
//
// Thread safety: pure functions.
#ifndef DETRAIN_COMPILER_IR_SHAPE_INFERENCE_H_
#define DETRAIN_COMPILER_IR_SHAPE_INFERENCE_H_

#include "base/status.h"
#include "compiler/ir/module.h"

namespace detrain::ir {

Result<Shape> InferShape(const Instruction& instr);

// The custom-call target of the threefry op (docs/ir.md "Random numbers").
inline constexpr std::string_view kThreefryTarget = "detrain.threefry2x32";

}  // namespace detrain::ir

#endif  // DETRAIN_COMPILER_IR_SHAPE_INFERENCE_H_
