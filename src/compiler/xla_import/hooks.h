// Internal to the importer: XLA's dialect of HLO text as hooks of the IR's parser
// (ir/parser_hooks.h). It names the constructs the parser reads as placeholders, collects what
// the text said about them, and expands them into ops of the IR: per computation once its
// operands are resolved (legalize.cc), and bf16/f16 once the module is complete (hooks.cc).
//
//   text                          parsed as       legalized into (expansions.h)
//   bf16[...], f16[...]           f32[...]        a rounding after each op (half_types.cc)
//   copy, bitcast                 reshape         itself, bitcast-convert, transposes (layouts)
//   is-finite                     compare         compare(x - x, 0, EQ)
//   select-and-scatter            reduce-window   slices, selects, pads, adds
//   sort                          reduce          a bitonic network (sort.cc)
//   topk, custom-call "TopK"      tuple           a sort and its first k (sort.cc)
//   compare type=TOTALORDER       compare         compares of total-order keys (sort.cc)
//   reduce(-window) of several    itself          f's body in reduce's order (variadic_reduce)
//   gather/scatter with batching  itself          the unbatched op (unbatch_indexing.cc)
//
// Thread safety: one XlaHooks serves one parse (it holds that module's state).
#ifndef DETRAIN_COMPILER_XLA_IMPORT_HOOKS_H_
#define DETRAIN_COMPILER_XLA_IMPORT_HOOKS_H_

#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "compiler/ir/parser_hooks.h"
#include "compiler/xla_import/expansions.h"

namespace detrain::xla_import {

class XlaHooks : public ir::ParserHooks {
 public:
  std::optional<ElementType> ForeignElementType(std::string_view name) const override;
  std::vector<std::string_view> ForeignElementTypeNames() const override;
  std::optional<Opcode> ForeignOp(std::string_view name) const override;
  Result<bool> ForeignAttribute(Instruction& instr, const std::string& name, SourceLoc loc,
                                Cursor& cur) override;
  Status OnInstruction(Computation& comp, Instruction& instr,
                       const ir::InstructionText& text) override;
  Status OnComputation(Computation& comp, ir::ComputationRefs& refs) override;  // legalize.cc
  Status OnModule(Module& module) override;

 private:
  // An instruction to legalize once its computation's operands are resolved: its op as written
  // (`topk` for the TopK custom call) and where.
  struct Pending {
    Instruction* instr;
    std::string name;
    SourceLoc loc;
  };
  struct TopKArgs {
    int64_t k = -1;
    bool largest = true;
  };

  // legalize.cc
  Status Legalize(Computation& comp, const Pending& op, ir::ComputationRefs& refs);
  Status ExpandMany(Computation& comp, const Pending& op, ir::ComputationRefs& refs);
  Status ExpandTopKOp(Computation& comp, const Pending& op, ir::ComputationRefs& refs);
  Status ExpandSelectScatter(Computation& comp, const Pending& op, ir::ComputationRefs& refs);
  Status ExpandReduceOfMany(Computation& comp, const Pending& op, ir::ComputationRefs& refs);
  Status ExpandLayoutOp(Computation& comp, const Pending& op);
  std::vector<int64_t> LayoutOf(const Instruction& instr) const;

  // The instructions of the computation being read that need legalizing, in text order.
  std::vector<Pending> pending_;
  // The instructions the expansions of ExpandMany added to the module so far: each expansion is
  // bounded (a window of 4096, a combiner of 256 instructions), and so is their sum, so that a
  // file of many cannot grow the graph without limit.
  static constexpr size_t kMaxExpandedInstructions = size_t{1} << 18;
  size_t expanded_ = 0;
  std::set<const Instruction*> total_order_;          // compare type=TOTALORDER
  std::map<const Instruction*, TopKArgs> topk_args_;  // k=, largest=
  std::map<const Instruction*, std::pair<std::string, SourceLoc>> called_;  // TopK comparators
  std::map<const Instruction*, HalfFormat> half_;  // instructions parsed with bf16/f16 shapes
  // Instructions whose shape has a layout other than row-major: its minor-to-major order, or
  // empty where it is not a plain permutation (tiles...). Only bitcast reads them.
  std::map<const Instruction*, std::vector<int64_t>> other_layout_;
};

}  // namespace detrain::xla_import

#endif  // DETRAIN_COMPILER_XLA_IMPORT_HOOKS_H_
