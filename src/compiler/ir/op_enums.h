// The op enums that scalar semantics switch over — UnaryOp, BinaryOp (generated from ops.def)
// and the comparison Direction — in a header with no dependencies beyond base/host_device.h, so
// that compiler/semantics/ and CUDA device code (nvcc or NVRTC) can include them. opcode.h and
// attributes.h re-export them; everything else in the IR lives there.
//
// Thread safety and determinism: types and constants only.
#ifndef DETRAIN_COMPILER_IR_OP_ENUMS_H_
#define DETRAIN_COMPILER_IR_OP_ENUMS_H_

#include "base/host_device.h"

namespace detrain::ir {

// The elementwise unary and binary ops as their own enums, so that their evaluators can switch
// exhaustively over exactly those ops.
enum class UnaryOp : uint8_t {
#define OP(e, s, n, c, o, x, a, t)
#define UNARY(e, s, x, t) e,
#include "compiler/ir/ops.def"
#undef OP
};
enum class BinaryOp : uint8_t {
#define OP(e, s, n, c, o, x, a, t)
#define BINARY(e, s, x, t) e,
#include "compiler/ir/ops.def"
#undef OP
};

// compare's `direction` attribute: X(enum, HLO spelling).
#define DETRAIN_DIRECTIONS(X) \
  X(kEq, "EQ")                \
  X(kNe, "NE")                \
  X(kLt, "LT")                \
  X(kLe, "LE")                \
  X(kGt, "GT")                \
  X(kGe, "GE")

enum class Direction : uint8_t {
#define DETRAIN_X(e, s) e,
  DETRAIN_DIRECTIONS(DETRAIN_X)
#undef DETRAIN_X
};

}  // namespace detrain::ir

#endif  // DETRAIN_COMPILER_IR_OP_ENUMS_H_
