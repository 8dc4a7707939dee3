// Builder: constructs computations in C++ (used by the frontend and by tests).
//
// Every method creates one instruction, infers its shape with the same rules the verifier
// uses, and returns it. Like XLA's XlaBuilder, the first error is recorded (naming the op and
// the rule) and returned by Build(); later calls still return usable placeholder instructions
// so that call sites need no error handling per op.
//
// Thread safety: one Builder per thread; it mutates its module.
#ifndef DETRAIN_COMPILER_IR_BUILDER_H_
#define DETRAIN_COMPILER_IR_BUILDER_H_

#include <optional>
#include <string>
#include <vector>

#include "compiler/ir/module.h"

namespace detrain::ir {

struct DotDims {
  std::vector<int64_t> lhs_batch, rhs_batch, lhs_contracting, rhs_contracting;
};

struct GatherDims {
  std::vector<int64_t> offset_dims, collapsed_slice_dims, start_index_map, slice_sizes;
  int64_t index_vector_dim = 0;
};

struct ScatterDims {
  std::vector<int64_t> update_window_dims, inserted_window_dims, scatter_dims_to_operand_dims;
  int64_t index_vector_dim = 0;
};

class Builder {
 public:
  // Adds a new computation named `name` to `module`.
  Builder(Module* module, std::string name);

  // The generic form: any op with explicit attributes. `shape` is required for ops whose result
  // shape is a free choice (parameter, iota, broadcast, reshape, convert, bitcast-convert).
  Instruction* Emit(Opcode op, std::vector<Instruction*> operands, AttrMap attrs = {},
                    std::optional<Shape> shape = std::nullopt);

  Instruction* Parameter(int64_t number, const Shape& shape, std::string name = "");
  Instruction* Constant(Literal value);
  Instruction* ConstantF32(float value);
  Instruction* Iota(const Shape& shape, int64_t dimension);
  Instruction* Unary(Opcode op, Instruction* x) { return Emit(op, {x}); }
  Instruction* Binary(Opcode op, Instruction* a, Instruction* b) { return Emit(op, {a, b}); }
  Instruction* Add(Instruction* a, Instruction* b) { return Binary(Opcode::kAdd, a, b); }
  Instruction* Multiply(Instruction* a, Instruction* b) { return Binary(Opcode::kMultiply, a, b); }
  Instruction* Compare(Instruction* a, Instruction* b, Direction direction);
  Instruction* Select(Instruction* pred, Instruction* on_true, Instruction* on_false);
  Instruction* Clamp(Instruction* lo, Instruction* x, Instruction* hi);
  Instruction* Convert(Instruction* x, ElementType type);
  Instruction* BitcastConvert(Instruction* x, ElementType type);

  Instruction* Broadcast(Instruction* x, const Shape& shape, std::vector<int64_t> dimensions);
  Instruction* Reshape(Instruction* x, std::vector<int64_t> dims);
  Instruction* Transpose(Instruction* x, std::vector<int64_t> permutation);
  Instruction* Slice(Instruction* x, std::vector<SliceDim> slice);
  Instruction* Concatenate(std::vector<Instruction*> xs, int64_t dimension);
  Instruction* Pad(Instruction* x, Instruction* value, std::vector<PadDim> padding);
  Instruction* Reverse(Instruction* x, std::vector<int64_t> dimensions);
  Instruction* DynamicSlice(Instruction* x, std::vector<Instruction*> starts,
                            std::vector<int64_t> sizes);
  Instruction* DynamicUpdateSlice(Instruction* x, Instruction* update,
                                  std::vector<Instruction*> starts);
  Instruction* Gather(Instruction* x, Instruction* indices, const GatherDims& dims);
  Instruction* Scatter(Instruction* x, Instruction* indices, Instruction* updates,
                       const ScatterDims& dims, const Computation* combiner);

  Instruction* Reduce(Instruction* x, Instruction* init, std::vector<int64_t> dimensions,
                      const Computation* combiner);
  Instruction* ReduceWindow(Instruction* x, Instruction* init, std::vector<WindowDim> window,
                            const Computation* combiner);
  Instruction* Dot(Instruction* a, Instruction* b, const DotDims& dims);
  Instruction* Convolution(Instruction* x, Instruction* kernel, std::string dim_labels,
                           std::vector<WindowDim> window);
  Instruction* AllReduce(Instruction* x, const Computation* combiner,
                         std::vector<std::vector<int64_t>> replica_groups = {});

  Instruction* Tuple(std::vector<Instruction*> xs);
  Instruction* GetTupleElement(Instruction* t, int64_t index);
  Instruction* Call(const Computation* computation, std::vector<Instruction*> args);
  Instruction* While(Instruction* init, const Computation* condition, const Computation* body);
  // custom-call "detrain.threefry2x32": (k0, k1, x0, x1) u32 of one shape -> (y0, y1).
  Instruction* Threefry2x32(Instruction* k0, Instruction* k1, Instruction* x0, Instruction* x1);

  // Sets the root and returns the computation, or the first error recorded.
  Result<Computation*> Build(Instruction* root);

  // A computation `(T[] a, T[] b) -> op(a, b)`: the usual combiner of reduce and friends.
  static Computation* ScalarCombiner(Module* module, std::string name, Opcode op, ElementType type);

 private:
  Computation* computation_;
  Status status_;
};

}  // namespace detrain::ir

#endif  // DETRAIN_COMPILER_IR_BUILDER_H_
