// Internal helpers shared by the shape inference files. Not part of the IR's API.
#ifndef DETRAIN_COMPILER_IR_SHAPE_INFERENCE_INTERNAL_H_
#define DETRAIN_COMPILER_IR_SHAPE_INFERENCE_INTERNAL_H_

#include <string>
#include <vector>

#include "compiler/ir/module.h"

namespace detrain::ir::shape_internal {

inline Status Fail(const std::string& message) { return InvalidArgument(message); }

// Operand i's shape; an error if it is a tuple.
Result<Shape> ArrayOperand(const Instruction& instr, size_t i);

// Every value in `dims` is in [0, rank) and appears once.
Status CheckDimList(const std::vector<int64_t>& dims, int64_t rank, std::string_view what);

// `c` takes two T[] parameters and returns T[] (a reduction combiner).
Status CheckCombiner(const Computation* c, ElementType type, std::string_view op);

Result<Shape> InferGather(const Instruction& instr);
Result<Shape> InferScatter(const Instruction& instr);
Result<Shape> InferReduce(const Instruction& instr);
Result<Shape> InferReduceWindow(const Instruction& instr);
Result<Shape> InferDot(const Instruction& instr);
Result<Shape> InferConvolution(const Instruction& instr);
Result<Shape> InferAllReduce(const Instruction& instr);

// The size of a windowed dimension: (padded input - dilated window) / stride + 1, or 0; `w` has
// size, stride and dilations >= 1. An error when an intermediate size overflows int64.
Result<int64_t> WindowedSize(int64_t input, const WindowDim& w);

// a + b, a * b: an error naming `what` on int64 overflow (base/checked.h).
Result<int64_t> Add(int64_t a, int64_t b, std::string_view what);
Result<int64_t> Mul(int64_t a, int64_t b, std::string_view what);

// "{1,2,3}" for messages: at most 16 values, then "... (N values)".
std::string ShortIntList(const std::vector<int64_t>& values);

}  // namespace detrain::ir::shape_internal

#endif  // DETRAIN_COMPILER_IR_SHAPE_INFERENCE_INTERNAL_H_
