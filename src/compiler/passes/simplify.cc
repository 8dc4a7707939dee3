// simplify — algebraic rewrites from a rule table (STYLE.md point 4).
//
// What it does: visits every instruction in canonical order (operands first) and applies the
// first rule of kRules, in table order, whose opcode matches and whose condition holds; sweeps
// repeat until no rule fires (at most kMaxSweeps). Every rule is exact: it gives the same bits
// for every input, including NaN payloads, infinities and signed zeros.
//   * `x + 0.0 -> x` is NOT a rule: -0.0 + +0.0 = +0.0. Only `x + (-0.0) -> x` holds.
//   * f32 arithmetic quiets a signaling NaN, so `x * 1 -> x`, `x + (-0.0) -> x`,
//     `x - 0.0 -> x` and `x / 1 -> x` apply to f32 only when x is produced by an op whose NaN
//     results are always quiet (IsQuiet: IEEE add/subtract/multiply/divide/sqrt, dot,
//     convolution); to integers always.
// What it does not do: reassociate, distribute, replace x/c by x*(1/c), fold x*0, or anything
// else whose result can differ in some bit for some input; fold constants (fold-constants).
// Pre: a verified module. Post: a verified module; interpreter results unchanged bit for bit.
#include <numeric>

#include "compiler/passes/passes.h"
#include "compiler/passes/rewrite.h"
#include "compiler/passes/simplify_rules.h"

namespace detrain::passes {
namespace {

using ir::Instruction;
using ir::Opcode;
using simplify::Ctx;
using simplify::RuleFn;

constexpr int kMaxSweeps = 8;

struct Rule {
  Opcode op;
  RuleFn apply;
};

// The rule table, applied in this order; the first rule that fires wins.
const Rule kRules[] = {
    {Opcode::kMultiply, simplify::MulOne},   // x * 1 -> x ; 1 * x -> x
    {Opcode::kAdd, simplify::AddZero},       // x + (-0.0) -> x ; (-0.0) + x -> x ; int: x + 0 -> x
    {Opcode::kSubtract, simplify::SubZero},  // x - (+0.0) -> x ; int: x - 0 -> x
    {Opcode::kDivide, simplify::DivOne},     // x / 1 -> x
    {Opcode::kNegate, simplify::NegNeg},     // -(-x) -> x  (sign bit flipped twice)
    {Opcode::kSelect, simplify::SelectConst},  // select(true, a, b) -> a ; select(false, a, b) -> b
    {Opcode::kSelect, simplify::SelectSame},   // select(p, a, a) -> a
    {Opcode::kConvert, simplify::ConvertSame},    // convert<T>(x: T) -> x
    {Opcode::kTranspose, simplify::TransposeId},  // transpose(x, identity) -> x
    {Opcode::kTranspose,
     simplify::TransposeTranspose},  // transpose(transpose(x, p), q) -> transpose(x, p o q)
    {Opcode::kTranspose, simplify::MoveSplat},     // transpose(splat c) -> broadcast(c)
    {Opcode::kReshape, simplify::ReshapeSame},     // reshape(x: S) to S -> x
    {Opcode::kReshape, simplify::ReshapeReshape},  // reshape(reshape(x)) -> reshape(x)
    {Opcode::kReshape, simplify::MoveSplat},       // reshape(splat c) -> broadcast(c)
    {Opcode::kBroadcast, simplify::BroadcastId},   // broadcast(x: S) to S, dims identity -> x
    {Opcode::kBroadcast,
     simplify::BroadcastBroadcast},  // broadcast(broadcast(x, d1), d2) -> broadcast(x, d2[d1])
    {Opcode::kSlice, simplify::SliceFull},           // slice(x, [0:n] every dim) -> x
    {Opcode::kPad, simplify::PadNone},               // pad(x, v, 0_0 every dim) -> x
    {Opcode::kReverse, simplify::ReverseTrivial},    // reverse(x, dims of size <= 1 only) -> x
    {Opcode::kConcatenate, simplify::ConcatOne},     // concatenate(x) -> x
    {Opcode::kGetTupleElement, simplify::GteTuple},  // get-tuple-element(tuple(a0..an), i) -> ai
    {Opcode::kConstant,
     simplify::SplatConstant},  // constant({c, c, ..., c}) -> broadcast(constant(c))
};

Result<bool> Sweep(ir::Computation& c) {
  bool changed = false;
  Ctx ctx{&c};
  DETRAIN_RETURN_IF_ERROR(RewriteComputation(c, [&](Instruction* instr) -> Result<Instruction*> {
    for (const Rule& rule : kRules) {
      if (rule.op != instr->opcode) continue;
      if (Instruction* replacement = rule.apply(ctx, instr)) {
        changed = true;
        return replacement;
      }
    }
    return nullptr;
  }));
  return changed;
}

}  // namespace

Status SimplifyInPlace(ir::Module& module) {
  DETRAIN_ASSIGN_OR_RETURN(auto comps, MutableComputations(module));
  for (ir::Computation* c : comps) {
    for (int sweep = 0; sweep < kMaxSweeps; ++sweep) {
      DETRAIN_ASSIGN_OR_RETURN(bool changed, Sweep(*c));
      if (!changed) break;
    }
  }
  return Compact(module);
}

PassOutput Simplify(const ir::Module& module) { return OnCopy(module, SimplifyInPlace); }

}  // namespace detrain::passes
