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
#include <vector>

#include "base/status.h"
#include "compiler/ir/module.h"

namespace detrain::passes {

// A deep copy holding the computations reachable from ENTRY (in ComputationPostOrder) and, in
// each, the parameters plus the instructions the root depends on, listed in canonical
// post-order. Dead code and unreachable computations are dropped.
Result<std::unique_ptr<ir::Module>> CloneModule(const ir::Module& module);

// What CloneModule gives, in place and without copying an instruction: the module keeps the
// computations reachable from ENTRY, in ComputationPostOrder, and each of them its parameters
// and live instructions, in PostOrder, with ids renumbered; the rest is destroyed.
Status Compact(ir::Module& module);

// A pass that edits the module it is given (the pipeline's form, which copies nothing), and
// its form for callers that keep their input: `edit` applied to a copy.
using ModuleEdit = Status (*)(ir::Module& module);
Result<std::unique_ptr<ir::Module>> OnCopy(const ir::Module& module, ModuleEdit edit);

// Computation::PostOrder with mutable pointers (the caller owns the computation).
Result<std::vector<ir::Instruction*>> MutablePostOrder(ir::Computation& computation);

// Module::ComputationPostOrder with mutable pointers.
Result<std::vector<ir::Computation*>> MutableComputations(ir::Module& module);

// Module::CanonicalOrder with mutable pointers: the computations and each one's PostOrder, from
// one walk. An order stays valid while its computation's own instructions are not rewritten
// (rewriting a callee first, as the passes do, leaves its callers' orders valid).
struct MutableOrder {
  std::vector<ir::Computation*> computations;
  std::vector<std::vector<ir::Instruction*>> instructions;  // parallel to computations
};
Result<MutableOrder> MutableCanonicalOrder(ir::Module& module);

// Rewrites `computation` in one sweep over its canonical order: each instruction's operands
// are first redirected to the replacements chosen so far, then `rule` may return a
// replacement for it (an existing instruction or one it added), or nullptr to keep it. The
// root follows its replacement.
using RewriteRule = std::function<Result<ir::Instruction*>(ir::Instruction*)>;
Status RewriteComputation(ir::Computation& computation, const RewriteRule& rule);
// The same with the computation's current PostOrder, computed by the caller.
Status RewriteComputation(ir::Computation& computation, const RewriteRule& rule,
                          const std::vector<ir::Instruction*>& order);

// Per-instruction marks for DependsOn, indexed by instruction id and reset in O(1) (a
// generation stamp), so that repeated searches allocate nothing.
class DependenceScratch {
 public:
  static constexpr uint32_t kNone = 0, kSeen = 1, kMember = 2;
  void Reset();
  void Mark(const ir::Instruction* x, uint32_t mark);
  uint32_t MarkOf(const ir::Instruction* x) const;
  std::vector<const ir::Instruction*> stack;

 private:
  std::vector<uint32_t> stamp_, mark_;
  uint32_t generation_ = 0;
};

// Whether `x` depends on any instruction of `members` (x itself included), through operands:
// a search of x's operands, O(the instructions x depends on). Passes that ask this for many
// instructions keep a summary instead (merge-dots, combine-all-reduce); this is their exact
// fallback for graphs their summary does not cover.
bool DependsOn(const ir::Instruction* x, const std::vector<const ir::Instruction*>& members,
               DependenceScratch* scratch);

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
