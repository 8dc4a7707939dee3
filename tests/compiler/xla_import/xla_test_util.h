// Helpers for the importer's tests: interp_test_util.h's helpers, and RunXla (RunXlaF: its f32
// result as floats), which runs XLA-style HLO text through the importer
// (xla_import::ParseAndVerifyHloText). Test-only.
#ifndef DETRAIN_TESTS_COMPILER_XLA_IMPORT_XLA_TEST_UTIL_H_
#define DETRAIN_TESTS_COMPILER_XLA_IMPORT_XLA_TEST_UTIL_H_

#include <string>
#include <vector>

#include "../interp/interp_test_util.h"
#include "compiler/xla_import/import.h"

namespace detrain::testing {

// RunHlo through the importer: `entry_body` may hold XLA's constructs (bf16, sort, bitcast...).
inline Literal RunXla(const std::string& entry_body, std::vector<Literal> args,
                      const std::string& extra = "") {
  return RunText(&xla_import::ParseAndVerifyHloText, entry_body, std::move(args), extra);
}

// RunXla's f32 result as floats.
inline std::vector<float> RunXlaF(const std::string& entry_body, std::vector<Literal> args) {
  return Values<float>(RunXla(entry_body, std::move(args)));
}

}  // namespace detrain::testing

#endif  // DETRAIN_TESTS_COMPILER_XLA_IMPORT_XLA_TEST_UTIL_H_
