// Modules whose loops have a trip count that depends on the data (tests/runtime/testdata/loops,
// and generated nests of loops), with arguments: they stay `while` through the default pipeline
// and run as a plan's while kernel. Shared by the CPU tests (while_test.cc) and the CUDA
// emulation tests. Test-only.
#ifndef DETRAIN_TESTS_RUNTIME_LOOP_CASES_H_
#define DETRAIN_TESTS_RUNTIME_LOOP_CASES_H_

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "compiler/ir/literal.h"

namespace detrain::runtime {

struct LoopCase {
  std::string name;
  std::string text;
  std::vector<ir::Literal> args;
};

inline std::string LoopModuleText(const std::string& file) {
  std::ifstream in(std::string(DETRAIN_SOURCE_DIR) + "/tests/runtime/testdata/loops/" + file);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// `depth` loops, each inside the body of the one before, each running `n` (an input) times; the
// result counts the innermost bodies run (n + n^2 + ... for the levels).
inline std::string NestedLoopsText(int depth) {
  std::string text = "HloModule nest" + std::to_string(depth) + "\n\n";
  const std::string state = "(s32[], s32[], s32[])";
  for (int k = depth - 1; k >= 0; --k) {
    const std::string l = std::to_string(k);
    text += "cond" + l + " {\n  p = " + state +
            " parameter(0)\n  i = s32[] get-tuple-element(p), index=0\n  n = s32[] "
            "get-tuple-element(p), index=1\n  ROOT lt = pred[] compare(i, n), direction=LT\n}\n\n";
    text += "body" + l + " {\n  p = " + state +
            " parameter(0)\n  i = s32[] get-tuple-element(p), index=0\n  n = s32[] "
            "get-tuple-element(p), index=1\n  acc = s32[] get-tuple-element(p), index=2\n  one = "
            "s32[] constant(1)\n  i1 = s32[] add(i, one)\n";
    if (k + 1 < depth) {
      const std::string next = std::to_string(k + 1);
      text += "  zero = s32[] constant(0)\n  init = " + state +
              " tuple(zero, n, acc)\n  w = " + state + " while(init), condition=cond" + next +
              ", body=body" + next +
              "\n  inner = s32[] get-tuple-element(w), index=2\n  acc1 = s32[] add(inner, one)\n";
    } else {
      text += "  acc1 = s32[] add(acc, one)\n";
    }
    text += "  ROOT t = " + state + " tuple(i1, n, acc1)\n}\n\n";
  }
  text += "ENTRY main {\n  n = s32[] parameter(0)\n  zero = s32[] constant(0)\n  init = " + state +
          " tuple(zero, n, zero)\n  w = " + state +
          " while(init), condition=cond0, body=body0\n  ROOT r = s32[] get-tuple-element(w), "
          "index=2\n}\n";
  return text;
}

inline std::vector<LoopCase> LoopCases() {
  using ir::ElementType;
  using ir::Literal;
  std::vector<LoopCase> cases;
  const Literal x3 = Literal::FromVector<float>(ElementType::kF32, {3}, {0.5f, -1.25f, 2.0f});
  for (int32_t n : {0, 1, 7, 40}) {
    cases.push_back({"input_bound n=" + std::to_string(n),
                     LoopModuleText("input_bound.hlo"),
                     {x3, Literal::Scalar<int32_t>(ElementType::kS32, n)}});
  }
  cases.push_back(
      {"newton",
       LoopModuleText("newton.hlo"),
       {Literal::FromVector<float>(ElementType::kF32, {4}, {2.0f, 10.0f, 0.25f, 12345.0f})}});
  const Literal m =
      Literal::FromVector<float>(ElementType::kF32, {2, 2}, {0.5f, -0.25f, 0.75f, 1.5f});
  const Literal s = Literal::Scalar<float>(ElementType::kF32, 0.3f);
  cases.push_back({"nested",
                   LoopModuleText("nested.hlo"),
                   {m, Literal::Scalar<int32_t>(ElementType::kS32, 5), s}});
  // The outer loop's trip count is a constant (3), but its body holds a loop that stays one: the
  // outer loop stays one too.
  std::string fixed = LoopModuleText("nested.hlo");
  const std::string params = "  n = s32[] parameter(1)\n  s = f32[] parameter(2)\n";
  fixed.replace(fixed.find(params), params.size(),
                "  n = s32[] constant(3)\n  s = f32[] parameter(1)\n");
  cases.push_back({"constant outer, data-dependent inner", fixed, {m, s}});
  cases.push_back(
      {"16 nested loops", NestedLoopsText(16), {Literal::Scalar<int32_t>(ElementType::kS32, 1)}});
  cases.push_back(
      {"4 nested loops", NestedLoopsText(4), {Literal::Scalar<int32_t>(ElementType::kS32, 3)}});
  return cases;
}

}  // namespace detrain::runtime

#endif  // DETRAIN_TESTS_RUNTIME_LOOP_CASES_H_
