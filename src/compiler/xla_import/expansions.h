// Internal to the importer: the expansions of XLA's constructs into ops of the IR, which the
// hooks (hooks.h) run once the parser has read them, and the pieces they share. Each works on
// one instruction whose operands are resolved and adds the new instructions beside it, at its
// source position, named after it. Not part of the importer's API (import.h).
//
// Thread safety: functions of their arguments. Deterministic: what they add depends only on the
// instruction and its computations, in a fixed order.
#ifndef DETRAIN_COMPILER_XLA_IMPORT_EXPANSIONS_H_
#define DETRAIN_COMPILER_XLA_IMPORT_EXPANSIONS_H_

#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "base/status.h"
#include "compiler/ir/lexer.h"
#include "compiler/ir/module.h"

namespace detrain::xla_import {

using ir::Attr;
using ir::Computation;
using ir::Cursor;
using ir::Direction;
using ir::ElementType;
using ir::Instruction;
using ir::Literal;
using ir::Module;
using ir::OpCategory;
using ir::Opcode;
using ir::PadDim;
using ir::Quoted;
using ir::Shape;
using ir::SliceDim;
using ir::SourceLoc;
using ir::WindowDim;

// The 16-bit float formats of HLO text, held as f32 (half_types.cc).
enum class HalfFormat : uint8_t { kNone, kBf16, kF16 };

// half_types.cc: every array instruction in `half` (parsed with a bf16 or f16 shape, now f32)
// that can produce a value outside its format gets a round-to-bf16 / round-to-f16 after it,
// which its users then read — except in `accumulators` (the computations that reduce, scatter
// and all-reduce apply), which run in f32, their result rounded once. Elementwise ops and data
// movements must take operands of their result's format; bitcast-convert to bf16/f16 is refused.
// Errors are positioned at the instruction.
Status WidenHalfTypes(Module& module, const std::map<const Instruction*, HalfFormat>& half,
                      const std::set<const Computation*>& accumulators);

// A new instruction of `comp` that a rewrite of `like` needs: its position, its name with
// `suffix`.
inline Instruction* AddBeside(Computation& comp, const Instruction& like, Opcode opcode,
                              Shape result, std::vector<Instruction*> operands,
                              const std::string& suffix) {
  auto i = std::make_unique<Instruction>();
  i->loc = like.loc;
  i->name = like.name + suffix;
  i->opcode = opcode;
  i->shape = std::move(result);
  i->operands = std::move(operands);
  return comp.AddInstruction(std::move(i));
}

// A computation of scalars that an expansion applies elementwise to whole arrays (a variadic
// reduce's combiner, a sort's comparator): parameters, constants and elementwise ops, the root
// a tuple of results or one result (scalar_body.cc).
class ScalarBody {
 public:
  // Checks `f` (at most `max_instructions`); errors start with `what`.
  Status Init(const Computation& f, size_t max_instructions, const std::string& what);
  const std::vector<Instruction*>& params() const { return params_; }  // in parameter order
  const std::vector<const Instruction*>& outputs() const { return outputs_; }
  // f's body applied elementwise to `args` (one per parameter, in order; all with the
  // dimensions of args[0]), added to `comp` beside `like`, named like.name + suffix + serial.
  std::vector<Instruction*> Apply(Computation& comp, const Instruction& like,
                                  const std::vector<Instruction*>& args, const std::string& suffix,
                                  int* serial) const;

 private:
  const Computation* f_ = nullptr;
  std::vector<Instruction*> params_;
  std::vector<const Instruction*> outputs_;
  std::vector<const Instruction*> body_;  // post order, a tuple root left out
};

// layouts.cc: bitcast `instr` (its operand resolved, parsed as a reshape) between an operand
// of layout `operand_m2m` and a result of layout `result_m2m` (minor to major; empty for one
// that is not a plain permutation) rewritten into the transposes and reshape that read the
// operand's memory order in the result's. Errors start with a space, for the caller's prefix.
Status ExpandBitcast(Computation& comp, Instruction& instr, std::vector<int64_t> operand_m2m,
                     std::vector<int64_t> result_m2m);

// select_and_scatter.cc: XLA's select-and-scatter `instr` (parsed with opcode kReduceWindow,
// operands resolved, its window attribute set) rewritten into slices, compares, selects, pads
// and adds beside it in `comp`; `instr` becomes the last add. Errors say what is unsupported,
// for the caller to position.
Status ExpandSelectAndScatter(Computation& comp, Instruction& instr, const Computation& select,
                              const Computation& scatter);

// variadic_reduce.cc: XLA's reduce of several inputs together `instr` (operands resolved, its
// dimensions attribute set), whose to_apply is `combiner`, rewritten beside it in `comp` into
// f's body applied elementwise in reduce's canonical order (kPairwise64); `instr` becomes the
// tuple of the results. Errors say what is unsupported, for the caller to position.
Status ExpandVariadicReduce(Computation& comp, Instruction& instr, const Computation& combiner);

// sort.cc: compare type=TOTALORDER (`instr`, operands resolved) rewritten to compare f32
// operands by their total-order keys; XLA's sort (parsed with opcode kReduce, its dimensions
// set) as a stable bitonic network of `comparator`, `instr` becoming the sorted tuple (or
// array); topk (parsed as kTuple) as the stable sort by value, descending for `largest`, and
// its first k with their indices.
Status ExpandTotalOrderCompare(Computation& comp, Instruction& instr);
Status ExpandSort(Computation& comp, Instruction& instr, const Computation& comparator);
// With a `comparator` (XLA's TopK custom call), it orders (value, index) pairs instead.
Status ExpandTopK(Computation& comp, Instruction& instr, int64_t k, bool largest,
                  const Computation* comparator = nullptr);

// unbatch_indexing.cc: a gather or scatter `instr` (operands resolved) with batching dimensions
// (StableHLO's operand_batching_dims and start_indices_batching_dims; input_batching_dims and
// scatter_indices_batching_dims) rewritten into the unbatched op that moves the same elements.
// Errors are positioned at `loc`, its op name.
Status UnbatchIndexing(Computation& comp, Instruction& instr, SourceLoc loc);

// is-finite(x) (`instr`, parsed as a compare, its operand resolved) as compare(subtract(x, x),
// broadcast(0), direction=EQ). Errors are positioned at `loc`, its op name (legalize.cc).
Status ExpandIsFinite(Computation& comp, Instruction& instr, SourceLoc loc);

}  // namespace detrain::xla_import

#endif  // DETRAIN_COMPILER_XLA_IMPORT_EXPANSIONS_H_
