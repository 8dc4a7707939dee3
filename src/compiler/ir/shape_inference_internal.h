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

// The size of a windowed dimension: (padded input - dilated window) / stride + 1, or 0.
int64_t WindowedSize(int64_t input, const WindowDim& w);

}  // namespace detrain::ir::shape_internal

#endif  // DETRAIN_COMPILER_IR_SHAPE_INFERENCE_INTERNAL_H_
