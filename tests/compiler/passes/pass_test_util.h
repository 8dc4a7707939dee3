// Shared helpers of the pass tests. Test-only.
#ifndef DETRAIN_TESTS_COMPILER_PASSES_PASS_TEST_UTIL_H_
#define DETRAIN_TESTS_COMPILER_PASSES_PASS_TEST_UTIL_H_

#include <memory>
#include <string>
#include <vector>

#include "compiler/ir/module.h"

namespace detrain::testing {

// Evaluates `module` on `replicas` replicas, each with its own random arguments derived from
// `seed`. Returns the results, or an empty vector with `error` set.
std::vector<ir::Literal> EvaluateRandom(const ir::Module& module, uint64_t seed, int replicas,
                                        std::string* error);

// The stage-2 train step of examples/<name>/train.dt, or nullptr with `skip` set to why not
// (the example does not exist yet) or `error` set (it exists and fails).
std::unique_ptr<ir::Module> LowerExample(const std::string& name, std::string* skip,
                                         std::string* error);

}  // namespace detrain::testing

#endif  // DETRAIN_TESTS_COMPILER_PASSES_PASS_TEST_UTIL_H_
