// The rules of the simplify pass (simplify.cc holds the table and the order). Each rule looks
// at one instruction whose operands are already simplified and returns its replacement — an
// existing instruction or one it adds to ctx.computation — or nullptr when it does not apply.
// Every rule is exact for all inputs (simplify.cc states the policy).
//
// Thread safety: a rule edits only ctx.computation.
#ifndef DETRAIN_COMPILER_PASSES_SIMPLIFY_RULES_H_
#define DETRAIN_COMPILER_PASSES_SIMPLIFY_RULES_H_

#include "compiler/ir/module.h"

namespace detrain::passes::simplify {

struct Ctx {
  ir::Computation* computation;
};
using RuleFn = ir::Instruction* (*)(Ctx&, ir::Instruction*);

// True when x can never hold a signaling NaN: x is not f32, or x is produced by an IEEE
// operation (add, subtract, multiply, divide, sqrt, dot, convolution), whose NaN results are
// always quiet. Rules that are identities only for non-signaling inputs require it.
bool IsQuiet(const ir::Instruction& x);

ir::Instruction* MulOne(Ctx& ctx, ir::Instruction* instr);
ir::Instruction* AddZero(Ctx& ctx, ir::Instruction* instr);
ir::Instruction* SubZero(Ctx& ctx, ir::Instruction* instr);
ir::Instruction* DivOne(Ctx& ctx, ir::Instruction* instr);
ir::Instruction* NegNeg(Ctx& ctx, ir::Instruction* instr);
ir::Instruction* SelectConst(Ctx& ctx, ir::Instruction* instr);
ir::Instruction* SelectSame(Ctx& ctx, ir::Instruction* instr);
ir::Instruction* ConvertSame(Ctx& ctx, ir::Instruction* instr);
ir::Instruction* TransposeId(Ctx& ctx, ir::Instruction* instr);
ir::Instruction* TransposeTranspose(Ctx& ctx, ir::Instruction* instr);
ir::Instruction* MoveSplat(Ctx& ctx, ir::Instruction* instr);
ir::Instruction* ReshapeSame(Ctx& ctx, ir::Instruction* instr);
ir::Instruction* ReshapeReshape(Ctx& ctx, ir::Instruction* instr);
ir::Instruction* BroadcastId(Ctx& ctx, ir::Instruction* instr);
ir::Instruction* BroadcastBroadcast(Ctx& ctx, ir::Instruction* instr);
ir::Instruction* SliceFull(Ctx& ctx, ir::Instruction* instr);
ir::Instruction* PadNone(Ctx& ctx, ir::Instruction* instr);
ir::Instruction* ReverseTrivial(Ctx& ctx, ir::Instruction* instr);
ir::Instruction* ConcatOne(Ctx& ctx, ir::Instruction* instr);
ir::Instruction* GteTuple(Ctx& ctx, ir::Instruction* instr);
ir::Instruction* SplatConstant(Ctx& ctx, ir::Instruction* instr);

}  // namespace detrain::passes::simplify

#endif  // DETRAIN_COMPILER_PASSES_SIMPLIFY_RULES_H_
