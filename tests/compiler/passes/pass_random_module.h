// Random modules aimed at the passes: besides ordinary ops they contain what each pass looks
// for — identity constants (1, -0.0, and the non-identity +0.0), transpose/reshape/broadcast
// chains, repeated subexpressions, constant subgraphs, calls, elementwise chains, reductions
// of elementwise producers and all-reduces. Deterministic: the same seed builds the same
// module. Test-only.
#ifndef DETRAIN_TESTS_COMPILER_PASSES_PASS_RANDOM_MODULE_H_
#define DETRAIN_TESTS_COMPILER_PASSES_PASS_RANDOM_MODULE_H_

#include <cstdint>
#include <memory>

#include "compiler/ir/module.h"

namespace detrain::testing {

// `all_reduce`: whether the module may contain all-reduce (evaluate it replicated then).
std::unique_ptr<ir::Module> RandomPassModule(uint64_t seed, bool all_reduce);

}  // namespace detrain::testing

#endif  // DETRAIN_TESTS_COMPILER_PASSES_PASS_RANDOM_MODULE_H_
