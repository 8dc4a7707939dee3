// Internal interface between the autodiff driver (autodiff.cc) and its rule table
// (vjp_table.cc) with the rules themselves (vjp_elementwise.cc, vjp_movement.cc,
// vjp_reduce.cc, vjp_linalg.cc). Not part of the public API.
//
// A rule receives the cloned forward instruction (its operands are the cloned operands, so
// rules may reuse forward values), which operands need a cotangent, and the cotangent of the
// result; it emits IR computing each needed operand's cotangent contribution.
//
// Thread safety: rules only append to the computation being built; one thread.
#ifndef DETRAIN_FRONTEND_AUTODIFF_VJP_H_
#define DETRAIN_FRONTEND_AUTODIFF_VJP_H_

#include <optional>
#include <vector>

#include "compiler/ir/builder.h"
#include "frontend/emit.h"

namespace detrain::frontend::autodiff {

// A cotangent contribution to one operand: an array cotangent (tuple_index == -1), or the
// cotangent of element `tuple_index` of a tuple-shaped operand (get-tuple-element).
struct Contribution {
  ir::Instruction* value = nullptr;  // nullptr: no contribution (operand inactive or zero)
  int64_t tuple_index = -1;
};

struct VjpArgs {
  Emitter& e;
  ir::Instruction* fwd;              // the cloned forward instruction
  std::vector<bool> active;          // active[i]: operand i needs a cotangent
  std::vector<ir::Instruction*> ct;  // cotangent of fwd, one per tuple element (arrays: one);
                                     // nullptr where zero. A rule runs only if one is non-null.

  ir::Builder& b() { return e.b(); }
  ir::Instruction* g() const { return ct[0]; }
  ir::Instruction* x(size_t i) const { return fwd->operands[i]; }
  ir::Instruction* y() const { return fwd; }
};

using VjpResult = Result<std::vector<Contribution>>;  // one entry per operand
using VjpFn = VjpResult (*)(VjpArgs&);

enum class VjpKind : uint8_t {
  kRule,         // differentiable: `fn` computes the operands' cotangents
  kNoGradient,   // piecewise constant, integer/pred-valued or random: carries no gradient
  kUnsupported,  // differentiable in principle but not implemented: an error if reached
};

struct VjpEntry {
  VjpKind kind;
  VjpFn fn;         // kRule only
  const char* why;  // kNoGradient / kUnsupported: the reason; nullptr = op not classified
};

// The table: one entry per opcode (exhaustive switch in vjp_table.cc).
VjpEntry LookupVjp(ir::Opcode op);

// --- Helpers shared by the rules (vjp_util.cc) ---------------------------------------------
ir::Instruction* Like(VjpArgs& a, ir::Instruction* t, double value);  // Full(t->shape, value)
ir::Instruction* Bin(VjpArgs& a, ir::Opcode op, ir::Instruction* l, ir::Instruction* r);
ir::Instruction* Un(VjpArgs& a, ir::Opcode op, ir::Instruction* x);
// The op of a combiner computation of the form `ROOT op(p0, p1)` (either operand order).
std::optional<ir::Opcode> CombinerOp(const ir::Computation* c);
// The inverse of a permutation.
std::vector<int64_t> InversePermutation(const std::vector<int64_t>& perm);
// Contributions for an instruction's operands: `values[i]` for active operand i, else none.
std::vector<Contribution> PerOperand(const VjpArgs& a, std::vector<ir::Instruction*> values);

// --- The rules, by file -------------------------------------------------------------------
// vjp_elementwise.cc
VjpResult VjpAbs(VjpArgs& a);
VjpResult VjpNegate(VjpArgs& a);
VjpResult VjpExp(VjpArgs& a);
VjpResult VjpExpm1(VjpArgs& a);
VjpResult VjpLog(VjpArgs& a);
VjpResult VjpLog1p(VjpArgs& a);
VjpResult VjpTanh(VjpArgs& a);
VjpResult VjpLogistic(VjpArgs& a);
VjpResult VjpSqrt(VjpArgs& a);
VjpResult VjpRsqrt(VjpArgs& a);
VjpResult VjpErf(VjpArgs& a);
VjpResult VjpSin(VjpArgs& a);
VjpResult VjpCos(VjpArgs& a);
VjpResult VjpAdd(VjpArgs& a);
VjpResult VjpSubtract(VjpArgs& a);
VjpResult VjpMultiply(VjpArgs& a);
VjpResult VjpDivide(VjpArgs& a);
VjpResult VjpRemainder(VjpArgs& a);
VjpResult VjpMaximum(VjpArgs& a);
VjpResult VjpMinimum(VjpArgs& a);
VjpResult VjpPower(VjpArgs& a);
VjpResult VjpSelect(VjpArgs& a);
VjpResult VjpClamp(VjpArgs& a);
VjpResult VjpConvert(VjpArgs& a);
// vjp_movement.cc
VjpResult VjpBroadcast(VjpArgs& a);
VjpResult VjpReshape(VjpArgs& a);
VjpResult VjpTranspose(VjpArgs& a);
VjpResult VjpSlice(VjpArgs& a);
VjpResult VjpConcatenate(VjpArgs& a);
VjpResult VjpPad(VjpArgs& a);
VjpResult VjpReverse(VjpArgs& a);
VjpResult VjpDynamicSlice(VjpArgs& a);
VjpResult VjpDynamicUpdateSlice(VjpArgs& a);
VjpResult VjpGather(VjpArgs& a);
VjpResult VjpTuple(VjpArgs& a);
VjpResult VjpGetTupleElement(VjpArgs& a);
// vjp_reduce.cc
VjpResult VjpReduce(VjpArgs& a);
VjpResult VjpReduceWindow(VjpArgs& a);
// vjp_linalg.cc
VjpResult VjpDot(VjpArgs& a);
VjpResult VjpConvolution(VjpArgs& a);

}  // namespace detrain::frontend::autodiff

#endif  // DETRAIN_FRONTEND_AUTODIFF_VJP_H_
