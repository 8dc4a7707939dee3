// Helpers shared by the passes: copying a module, walking a computation in canonical order with
// mutable instructions, creating instructions, and recognizing splat values.
//
// Every pass is `const Module& -> Module`: it clones its input (CloneModule) and edits the
// clone. Replacing an instruction never deletes it: the old one stays in its computation's
// instruction list, unreachable from the root, so the printer and the interpreter ignore it,
// and the next CloneModule drops it.
//
// Thread safety: functions of their arguments; a module being edited belongs to one thread.
// Determinism: orders come from Computation::PostOrder and Module::ComputationPostOrder only;
// hash maps here are keyed by pointer for lookup and never iterated.
#ifndef DETRAIN_COMPILER_PASSES_REWRITE_H_
#define DETRAIN_COMPILER_PASSES_REWRITE_H_

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <unordered_set>
#include <vector>

#include "base/status.h"
#include "compiler/ir/module.h"

namespace detrain::passes {

// A deep copy holding the computations reachable from ENTRY (in ComputationPostOrder) and, in
// each, the parameters plus the instructions the root depends on, listed in canonical
// post-order. Dead code and unreachable computations are dropped.
Result<std::unique_ptr<ir::Module>> CloneModule(const ir::Module& module);

// Computation::PostOrder with mutable pointers (the caller owns the computation).
Result<std::vector<ir::Instruction*>> MutablePostOrder(ir::Computation& computation);

// Module::ComputationPostOrder with mutable pointers.
Result<std::vector<ir::Computation*>> MutableComputations(ir::Module& module);

// Rewrites `computation` in one sweep over its canonical order: each instruction's operands
// are first redirected to the replacements chosen so far, then `rule` may return a
// replacement for it (an existing instruction or one it added), or nullptr to keep it. The
// root follows its replacement.
using RewriteRule = std::function<Result<ir::Instruction*>(ir::Instruction*)>;
Status RewriteComputation(ir::Computation& computation, const RewriteRule& rule);

// Whether `x` depends on any instruction of `members` (x itself included), through operands.
bool DependsOn(const ir::Instruction* x, const std::unordered_set<const ir::Instruction*>& members);

// Adds an instruction to `computation` (shape given; not inferred).
ir::Instruction* AddInstruction(ir::Computation& computation, ir::Opcode op, ir::Shape shape,
                                std::vector<ir::Instruction*> operands, ir::AttrMap attrs = {});

// The bits of every element if `instr` is an array constant whose elements are all bitwise
// equal, or a broadcast of a scalar constant; the bytes of one element. Otherwise nullopt.
std::optional<std::string> SplatBits(const ir::Instruction& instr);

// The bit pattern of an f32 as the 4 little-endian bytes SplatBits returns.
std::string F32Bits(float value);

// The little-endian bytes of integer `value` in element type `type` (pred: 0/1).
std::string IntBits(ir::ElementType type, int64_t value);

}  // namespace detrain::passes

#endif  // DETRAIN_COMPILER_PASSES_REWRITE_H_
