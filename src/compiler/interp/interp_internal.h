// Internal to the interpreter: per-op evaluators and the helpers they share. Not an API. Scalar
// rules and evaluation orders are compiler/semantics/'s; only their host-side plumbing is here.
#ifndef DETRAIN_COMPILER_INTERP_INTERP_INTERNAL_H_
#define DETRAIN_COMPILER_INTERP_INTERP_INTERNAL_H_

#include <cstring>
#include <functional>
#include <optional>
#include <vector>

#include "compiler/ir/module.h"
#include "compiler/semantics/semantics.h"

namespace detrain::interp::internal {

using ir::Instruction;
using ir::Literal;
using ir::Shape;

// Evaluates a computation on one replica (used for call bodies and general combiners).
using ComputationFn = std::function<Result<Literal>(const ir::Computation&, std::vector<Literal>)>;

// The operand values of one instruction on one replica.
using Operands = std::vector<const Literal*>;

// Multi-dimensional index helpers (row-major).
std::vector<int64_t> Unravel(int64_t linear, const std::vector<int64_t>& dims);
int64_t Ravel(const std::vector<int64_t>& index, const std::vector<int64_t>& strides);

// Reads an integer element of any integer type as int64 (u64 beyond int64 saturates).
int64_t ReadIndex(const Literal& lit, int64_t i);

// Copies element `from_i` of `from` into element `to_i` of `to` (same element type).
inline void CopyElement(const Literal& from, int64_t from_i, Literal& to, int64_t to_i) {
  int size = ir::ElementTypeByteSize(from.shape().type());
  std::memcpy(to.mutable_bytes().data() + to_i * size, from.bytes().data() + from_i * size,
              static_cast<size_t>(size));
}

// Scalar semantics of the elementwise ops, for every storage type T.
using semantics::ApplyBinary;
using semantics::ApplyUnary;

// A reduction combiner: `to_apply` applied to two scalars. Computations of the form
// `ROOT op(p0, p1)` with an elementwise binary op are applied directly; anything else is
// evaluated by the interpreter. The first error is kept in status().
class Combiner {
 public:
  Combiner(const ir::Computation* computation, ComputationFn eval);

  template <typename T>
  T Apply(T a, T b);

  const Status& status() const { return status_; }

 private:
  const ir::Computation* computation_;
  ComputationFn eval_;
  std::optional<ir::BinaryOp> direct_;
  bool lhs_is_p0_ = true;
  Status status_;
};

// The canonical reduction of `values` (semantics::CanonicalReduce). No values: `init`.
template <typename T>
T CanonicalReduce(const std::vector<T>& values, T init, Combiner& combine);
// The pairwise tree alone (semantics::PairwiseTreeInPlace): all-reduce over replicas.
// `values` non-empty.
template <typename T>
T PairwiseTree(std::vector<T> values, Combiner& combine);

// Evaluators by group; each returns the result for one replica.
Result<Literal> EvalElementwise(const Instruction& instr, const Operands& ops);  // unary..clamp
Result<Literal> EvalConvert(const Instruction& instr, const Operands& ops);
Result<Literal> EvalIota(const Instruction& instr);
Result<Literal> EvalThreefry(const Instruction& instr, const Operands& ops);
Result<Literal> EvalBroadcast(const Instruction& instr, const Operands& ops);
Result<Literal> EvalReshape(const Instruction& instr, const Operands& ops);
Result<Literal> EvalTranspose(const Instruction& instr, const Operands& ops);
Result<Literal> EvalSlice(const Instruction& instr, const Operands& ops);
Result<Literal> EvalConcatenate(const Instruction& instr, const Operands& ops);
Result<Literal> EvalPad(const Instruction& instr, const Operands& ops);
Result<Literal> EvalReverse(const Instruction& instr, const Operands& ops);
Result<Literal> EvalDynamicSlice(const Instruction& instr, const Operands& ops);
Result<Literal> EvalDynamicUpdateSlice(const Instruction& instr, const Operands& ops);
Result<Literal> EvalGather(const Instruction& instr, const Operands& ops);
Result<Literal> EvalScatter(const Instruction& instr, const Operands& ops,
                            const ComputationFn& eval);
Result<Literal> EvalReduce(const Instruction& instr, const Operands& ops,
                           const ComputationFn& eval);
Result<Literal> EvalReduceWindow(const Instruction& instr, const Operands& ops,
                                 const ComputationFn& eval);
Result<Literal> EvalDot(const Instruction& instr, const Operands& ops);
Result<Literal> EvalConvolution(const Instruction& instr, const Operands& ops);
// All-reduce over replicas: values[r] is replica r's operand; returns one result per replica.
Result<std::vector<Literal>> EvalAllReduce(const Instruction& instr,
                                           const std::vector<const Literal*>& values,
                                           const ComputationFn& eval);

// ---- template definitions ----------------------------------------------------------------

template <typename T>
T Combiner::Apply(T a, T b) {
  if (direct_) return lhs_is_p0_ ? ApplyBinary<T>(*direct_, a, b) : ApplyBinary<T>(*direct_, b, a);
  ir::ElementType type = computation_->root()->shape.type();
  std::vector<Literal> args = {Literal::Scalar<T>(type, a), Literal::Scalar<T>(type, b)};
  auto result = eval_(*computation_, std::move(args));
  if (!result.ok()) {
    if (status_.ok()) status_ = result.status();
    return a;
  }
  return result->template Get<T>(0);
}

template <typename T>
T PairwiseTree(std::vector<T> values, Combiner& combine) {
  auto apply = [&combine](T a, T b) { return combine.Apply(a, b); };
  return semantics::PairwiseTreeInPlace(values.data(), static_cast<int64_t>(values.size()), apply);
}

template <typename T>
T CanonicalReduce(const std::vector<T>& values, T init, Combiner& combine) {
  int64_t n = static_cast<int64_t>(values.size());
  std::vector<T> scratch(static_cast<size_t>(semantics::ReduceLeafCount(n)));
  auto load = [&values](int64_t i) { return values[static_cast<size_t>(i)]; };
  auto apply = [&combine](T a, T b) { return combine.Apply(a, b); };
  return semantics::CanonicalReduce(n, init, load, apply, scratch.data());
}

}  // namespace detrain::interp::internal

#endif  // DETRAIN_COMPILER_INTERP_INTERP_INTERNAL_H_
