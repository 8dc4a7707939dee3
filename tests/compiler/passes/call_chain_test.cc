// The passes on the deepest call chain the verifier admits (kMaxCallDepth, docs/ir.md §3): the
// inliner, cse, fuse and the whole default pipeline must finish, keep the value bit for bit,
// and never recurse once per nested call on the native stack.
#include <gtest/gtest.h>

#include <bit>
#include <cstring>
#include <fstream>
#include <limits>
#include <sstream>

#include "compiler/interp/interpreter.h"
#include "compiler/ir/printer.h"
#include "compiler/ir/verifier.h"
#include "compiler/passes/passes.h"
#include "compiler/passes/pipeline.h"
#include "compiler/xla_import/import.h"

namespace detrain::passes {
namespace {

// ENTRY calls c0; c{i} computes p * 1.5 + call c{i+1}(p * 1.5); the last returns p + p.
std::string CallChain(int n) {
  std::string text = "HloModule chain\n\n";
  for (int i = n - 1; i >= 0; --i) {
    text += "c" + std::to_string(i) + " {\n  p = f32[] parameter(0)\n";
    if (i == n - 1) {
      text += "  ROOT a = f32[] add(p, p)\n}\n\n";
      continue;
    }
    text += "  k = f32[] constant(1.5)\n  m = f32[] multiply(p, k)\n";
    text += "  r = f32[] call(m), to_apply=c" + std::to_string(i + 1) + "\n";
    text += "  ROOT a = f32[] add(r, m)\n}\n\n";
  }
  text += "ENTRY main {\n  x = f32[] parameter(0)\n  ROOT y = f32[] call(x), to_apply=c0\n}\n";
  return text;
}

uint32_t Bits(const ir::Module& module) {
  auto out =
      interp::Evaluate(module, {ir::Literal::Scalar<float>(ir::ElementType::kF32, 1.0e-30f)});
  EXPECT_TRUE(out.ok()) << out.status().message();
  return out.ok() ? std::bit_cast<uint32_t>(out->Get<float>(0)) : 0;
}

TEST(CallChain, PassesHandleTheDeepestAdmittedChain) {
  auto module = ir::ParseAndVerify(CallChain(static_cast<int>(ir::kMaxCallDepth) - 1));
  ASSERT_TRUE(module.ok()) << module.status().message();
  uint32_t want = Bits(**module);
  auto inlined = InlineCalls(**module);
  ASSERT_TRUE(inlined.ok()) << inlined.status().message();
  ASSERT_TRUE(ir::VerifyModule(**inlined).ok());
  EXPECT_EQ(Bits(**inlined), want);
  for (auto pass : {EliminateCommonSubexpressions, Fuse, Simplify, FoldConstants}) {
    auto out = pass(**module);
    ASSERT_TRUE(out.ok()) << out.status().message();
    EXPECT_EQ(Bits(**out), want);
  }
  auto result = RunPipeline(**module, kDefaultPipeline, {});
  ASSERT_TRUE(result.ok()) << result.status().message();
  EXPECT_EQ(Bits(*result->module), want);
  EXPECT_TRUE(ir::ModuleFingerprint(*result->module).ok());
}

}  // namespace
}  // namespace detrain::passes

namespace detrain::passes {
namespace {

// An optimized module from XLA CPU (tools/export_jax_corpus.py: an MLP's forward pass after
// .compile(), with the debug tables, bitcasts and kCustom fusions holding dots): the inliner
// takes every fusion out, and the pipeline, which regroups the ops by detrain's own rules,
// keeps the value bit for bit.
TEST(XlaFusions, AreInlinedAndRegroupedWithTheSameBits) {
  const std::string text = [] {
    std::ifstream in(std::string(DETRAIN_SOURCE_DIR) +
                     "/tests/compiler/ir/testdata/jax_debug/mlp_forward/compiled.hlo");
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  }();
  ASSERT_NE(text.find("kind=kCustom"), std::string::npos);
  auto module = xla_import::ParseAndVerifyHloText(text);
  ASSERT_TRUE(module.ok()) << module.status().message();
  std::vector<ir::Literal> args;
  for (const ir::Instruction* p : (*module)->entry()->Parameters()) {
    ir::Literal lit(p->shape);
    auto* f = reinterpret_cast<float*>(lit.mutable_bytes().data());
    for (int64_t i = 0; i < p->shape.ElementCount(); ++i)
      f[i] = 0.01f * static_cast<float>(i % 97) - 0.3f;
    args.push_back(std::move(lit));
  }
  auto want = interp::Evaluate(**module, args);
  ASSERT_TRUE(want.ok()) << want.status().message();
  auto inlined = InlineCalls(**module);
  ASSERT_TRUE(inlined.ok()) << inlined.status().message();
  for (const auto& c : (*inlined)->computations()) {
    for (const auto& i : c->instructions()) EXPECT_NE(i->opcode, ir::Opcode::kFusion);
  }
  auto result = RunPipeline(**module, kDefaultPipeline, {});
  ASSERT_TRUE(result.ok()) << result.status().message();
  auto got = interp::Evaluate(*result->module, args);
  ASSERT_TRUE(got.ok()) << got.status().message();
  EXPECT_EQ(got->bytes(), want->bytes());
}

}  // namespace
}  // namespace detrain::passes

namespace detrain::passes {
namespace {

// is-finite (jax.nn.logsumexp, optax) is read as compare(x - x, 0, EQ): the same pred for every
// kind of float, on the interpreter and after the pipeline.
TEST(XlaOps, IsFiniteIsExact) {
  auto module = xla_import::ParseAndVerifyHloText(
      "HloModule f\nENTRY main {\n  x = f32[9]{0} parameter(0)\n"
      "  ROOT y = pred[9]{0} is-finite(x)\n}\n");
  ASSERT_TRUE(module.ok()) << module.status().message();
  const float inf = std::numeric_limits<float>::infinity();
  const float values[9] = {0.0f,
                           -0.0f,
                           1.0f,
                           -3.4e38f,
                           1e-45f,
                           inf,
                           -inf,
                           std::numeric_limits<float>::quiet_NaN(),
                           std::bit_cast<float>(0xffc00001u)};
  ir::Literal x(ir::Shape(ir::ElementType::kF32, {9}));
  std::memcpy(x.mutable_bytes().data(), values, sizeof(values));
  const std::string want = {1, 1, 1, 1, 1, 0, 0, 0, 0};
  auto got = interp::Evaluate(**module, {x});
  ASSERT_TRUE(got.ok()) << got.status().message();
  EXPECT_EQ(got->bytes(), want);
  auto result = RunPipeline(**module, kDefaultPipeline, {});
  ASSERT_TRUE(result.ok()) << result.status().message();
  auto piped = interp::Evaluate(*result->module, {x});
  ASSERT_TRUE(piped.ok()) << piped.status().message();
  EXPECT_EQ(piped->bytes(), want);
}

}  // namespace
}  // namespace detrain::passes
