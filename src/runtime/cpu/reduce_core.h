// The canonical reduce (pairwise-64, semantics/orders.h) over arrays in an arena, shared by the
// reduce kernel and by reduction fusions: a description (from a spec the plan reader checked)
// of which operand elements map to each output, and the combiner applied with its fast path for
// `op(p0, p1)` combiners.
//
// Determinism: each output is one CanonicalReduce in row-major order of the reduced dims, from
// init; threads split only the outputs. Thread safety: Run is const.
#ifndef DETRAIN_RUNTIME_CPU_REDUCE_CORE_H_
#define DETRAIN_RUNTIME_CPU_REDUCE_CORE_H_

#include <cstdint>
#include <vector>

#include "base/status.h"
#include "compiler/ir/element_type.h"
#include "compiler/semantics/semantics.h"
#include "runtime/cpu/kernels.h"
#include "runtime/cpu/program.h"
#include "schemas/plan.pb.h"

namespace detrain::runtime::cpu {

// Runs body(combine) with `combine` the combiner, its common ops (add, maximum, minimum,
// multiply of (accumulator, element)) fixed at compile time so that reduce loops inline them.
template <typename T, typename Body>
void WithCombiner(const DecodedProgram& c, Body&& body) {
  using ir::BinaryOp;
  if (c.direct && !c.swapped) {
    switch (c.direct_op) {
      case BinaryOp::kAdd:
        return body([](T a, T b) { return semantics::ApplyBinary<T>(BinaryOp::kAdd, a, b); });
      case BinaryOp::kMaximum:
        return body([](T a, T b) { return semantics::ApplyBinary<T>(BinaryOp::kMaximum, a, b); });
      case BinaryOp::kMinimum:
        return body([](T a, T b) { return semantics::ApplyBinary<T>(BinaryOp::kMinimum, a, b); });
      case BinaryOp::kMultiply:
        return body([](T a, T b) { return semantics::ApplyBinary<T>(BinaryOp::kMultiply, a, b); });
      default:
        break;
    }
  }
  return body([&c](T a, T b) { return Combine<T>(c, a, b); });
}

class ReduceCore {
 public:
  // `spec` as in the validated plan; `type` the element type of operand, init and result;
  // `combiner` the spec's, decoded.
  static ReduceCore Make(const plan::v2::ReduceSpec& spec, ir::ElementType type,
                         DecodedProgram combiner);

  int64_t operand_elements() const { return operand_elements_; }
  int64_t output_elements() const { return output_elements_; }

  // out[o] = reduce of in's elements mapping to o, from init (one element, `type` bits).
  void Run(const uint8_t* in, uint64_t init_bits, uint8_t* out, const ExecContext& ctx) const;

 private:
  ir::ElementType type_ = ir::ElementType::kF32;
  DecodedProgram combiner_;
  int64_t operand_elements_ = 0, output_elements_ = 0, per_output_ = 0;
  std::vector<int64_t> kept_dims_, kept_strides_;  // output index -> operand base offset
  std::vector<int64_t> reduced_offsets_;           // empty when the reduced elements are contiguous
  int lanes_op_ = -1;  // isa_kernels.h ReduceLanesOp for an f32 add/maximum/minimum, else -1
};

}  // namespace detrain::runtime::cpu

#endif  // DETRAIN_RUNTIME_CPU_REDUCE_CORE_H_
