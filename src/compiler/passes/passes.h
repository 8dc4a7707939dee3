// Every pass of the pipeline, each a pure function `const Module& -> Module` defined in its own
// file (one file per pass, whose header comment states what it does, what it does not, and its
// pre- and postconditions; docs/passes.md collects them). The names in comments are the stable
// kebab-case names the pipeline spec uses. Every pass ends with Compact (rewrite.h), which keeps
// only live code in canonical order: there is no separate dce or schedule pass.
//
// Common contract: the input has passed ir::VerifyModule; the output passes it too and, for
// every argument list and on every replica, the reference interpreter gives the same bits
// on the output as on the input (tested per pass on random modules). A pass never mutates its
// input. Thread safety: pure functions; concurrent calls are safe.
#ifndef DETRAIN_COMPILER_PASSES_PASSES_H_
#define DETRAIN_COMPILER_PASSES_PASSES_H_

#include <cstdint>
#include <memory>

#include "base/status.h"
#include "compiler/ir/module.h"

namespace detrain::passes {

using PassOutput = Result<std::unique_ptr<ir::Module>>;

PassOutput UnrollLoops(const ir::Module& module);                    // unroll-while
PassOutput InlineCalls(const ir::Module& module);                    // inline
PassOutput EliminateCommonSubexpressions(const ir::Module& module);  // cse
PassOutput FoldConstants(const ir::Module& module);                  // fold-constants
PassOutput Simplify(const ir::Module& module);                       // simplify
PassOutput Fuse(const ir::Module& module);                           // fuse
PassOutput CombineAllReduces(const ir::Module& module);              // combine-all-reduce
PassOutput MergeDots(const ir::Module& module);                      // merge-dots
PassOutput MergeRows(const ir::Module& module);                      // merge-rows

// The same passes editing the module they are given (each form above is its edit applied to a
// copy, rewrite.h OnCopy). The pipeline runs these: it owns its module, so no pass copies one.
// Pre: `module` verified. Post: verified (or an error, leaving `module` unspecified) and
// compact (rewrite.h Compact), the text the copying form would give.
Status UnrollLoopsInPlace(ir::Module& module);
Status InlineCallsInPlace(ir::Module& module);
Status EliminateCommonSubexpressionsInPlace(ir::Module& module);
Status FoldConstantsInPlace(ir::Module& module);
Status SimplifyInPlace(ir::Module& module);
Status FuseInPlace(ir::Module& module);
Status CombineAllReducesInPlace(ir::Module& module);
Status MergeDotsInPlace(ir::Module& module);
Status MergeRowsInPlace(ir::Module& module);

// merge-dots deciding every dependence by a search of the graph: the reference the tests hold
// MergeDots to (same output text), quadratic in the module; not a pipeline pass.
PassOutput MergeDotsBySearch(const ir::Module& module);
// merge-dots with its bit rows bounded by `max_reach_words` words (the pass's bound is 2^24):
// past the bound it decides by search. For tests of that path.
PassOutput MergeDotsWithRowLimit(const ir::Module& module, uint64_t max_reach_words);

}  // namespace detrain::passes

#endif  // DETRAIN_COMPILER_PASSES_PASSES_H_
