// Random small modules for property tests (print -> parse -> print identity, interpreter
// agreement). Deterministic: the same seed always builds the same module. Test-only.
#ifndef DETRAIN_TESTS_COMPILER_IR_RANDOM_MODULE_H_
#define DETRAIN_TESTS_COMPILER_IR_RANDOM_MODULE_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "compiler/ir/module.h"

namespace detrain::testing {

// A verified module built with ir::Builder from `seed`; its entry takes 1..3 parameters.
std::unique_ptr<ir::Module> RandomModule(uint64_t seed);

// Arguments for `module`'s entry: random bits for every element (NaNs and infinities included).
std::vector<ir::Literal> RandomArguments(const ir::Module& module, uint64_t seed);

}  // namespace detrain::testing

#endif  // DETRAIN_TESTS_COMPILER_IR_RANDOM_MODULE_H_
