// Helpers for interpreter tests: run HLO text on literals, build and read literals. Test-only.
#ifndef DETRAIN_TESTS_COMPILER_INTERP_INTERP_TEST_UTIL_H_
#define DETRAIN_TESTS_COMPILER_INTERP_INTERP_TEST_UTIL_H_

#include <gtest/gtest.h>

#include <bit>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "compiler/interp/interpreter.h"
#include "compiler/ir/verifier.h"

namespace detrain::testing {

using ir::ElementType;
using ir::Literal;

inline Literal F32(std::vector<int64_t> dims, const std::vector<float>& v) {
  return Literal::FromVector<float>(ElementType::kF32, std::move(dims), v);
}
inline Literal S32(std::vector<int64_t> dims, const std::vector<int32_t>& v) {
  return Literal::FromVector<int32_t>(ElementType::kS32, std::move(dims), v);
}
inline Literal U32(std::vector<int64_t> dims, const std::vector<uint32_t>& v) {
  return Literal::FromVector<uint32_t>(ElementType::kU32, std::move(dims), v);
}

template <typename T>
std::vector<T> Values(const Literal& lit) {
  std::vector<T> v;
  for (int64_t i = 0; i < lit.element_count(); ++i) v.push_back(lit.Get<T>(i));
  return v;
}
inline std::vector<uint32_t> Bits(const Literal& lit) {
  std::vector<uint32_t> v;
  for (int64_t i = 0; i < lit.element_count(); ++i)
    v.push_back(std::bit_cast<uint32_t>(lit.Get<float>(i)));
  return v;
}
inline uint32_t BitsOf(float f) { return std::bit_cast<uint32_t>(f); }

// A parser and verifier of module text: ir::ParseAndVerify, or the XLA importer's
// (tests/compiler/xla_import/xla_test_util.h).
using ParseFn = Result<std::unique_ptr<ir::Module>> (*)(std::string_view);

// Parses and verifies `entry_body` (the instructions of ENTRY main) with `parse`, and evaluates
// it with `args`. `extra` holds computations placed before ENTRY. Fails the test on any error.
inline Literal RunText(ParseFn parse, const std::string& entry_body, std::vector<Literal> args,
                       const std::string& extra) {
  std::string text = "HloModule test\n\n" + extra + "\nENTRY main {\n" + entry_body + "}\n";
  auto module = parse(text);
  EXPECT_TRUE(module.ok()) << module.status().message() << "\n" << text;
  if (!module.ok()) return Literal();
  auto result = interp::Evaluate(**module, args);
  EXPECT_TRUE(result.ok()) << result.status().message();
  return result.ok() ? *result : Literal();
}

// RunText with the IR's own parser.
inline Literal RunHlo(const std::string& entry_body, std::vector<Literal> args,
                      const std::string& extra = "") {
  return RunText(&ir::ParseAndVerify, entry_body, std::move(args), extra);
}

inline const std::string kAddF32 =
    "add {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  ROOT s = f32[] add(a, b)\n}\n";
inline const std::string kMaxF32 =
    "max {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  ROOT m = f32[] maximum(a, "
    "b)\n}\n";

}  // namespace detrain::testing

#endif  // DETRAIN_TESTS_COMPILER_INTERP_INTERP_TEST_UTIL_H_
