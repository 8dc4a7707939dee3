// unroll-while (passes.h): loops with a trip count known before they run become that many calls
// of the body, with the interpreter's value (which runs the loop itself) unchanged bit for bit;
// every other loop stays a loop. The corpus of real JAX loops (lax.scan, fori_loop,
// jax.random in jit) is in tests/compiler/interp/jax_test.cc.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "compiler/interp/interpreter.h"
#include "compiler/ir/printer.h"
#include "compiler/ir/verifier.h"
#include "compiler/passes/passes.h"
#include "compiler/passes/pipeline.h"

namespace detrain::passes {
namespace {

using ir::ElementType;
using ir::Literal;

// fori_loop(start, stop, v -> v * 1.5 + i): the state (i, stop, v); `start` and `stop` are
// spliced in as HLO expressions, `nested` puts a 2-trip loop inside the body.
std::string ForiLoop(const std::string& start, const std::string& stop, bool nested = false) {
  std::string text = "HloModule fori\n\n";
  if (nested) {
    text +=
        "inner_body {\n  s = (s32[], f32[3]) parameter(0)\n  j = s32[] get-tuple-element(s), "
        "index=0\n  v = f32[3] get-tuple-element(s), index=1\n  one = s32[] constant(1)\n  j1 = "
        "s32[] add(j, one)\n  w = f32[3] add(v, v)\n  ROOT r = (s32[], f32[3]) tuple(j1, w)\n}\n\n"
        "inner_cond {\n  s = (s32[], f32[3]) parameter(0)\n  j = s32[] get-tuple-element(s), "
        "index=0\n  two = s32[] constant(2)\n  ROOT lt = pred[] compare(j, two), "
        "direction=LT\n}\n\n";
  }
  text +=
      "body {\n  s = (s32[], s32[], f32[3]) parameter(0)\n  i = s32[] get-tuple-element(s), "
      "index=0\n  n = s32[] get-tuple-element(s), index=1\n  v = f32[3] get-tuple-element(s), "
      "index=2\n  k = f32[] constant(1.5)\n  kb = f32[3] broadcast(k), dimensions={}\n  m = f32[3] "
      "multiply(v, kb)\n  fi = f32[] convert(i)\n  fb = f32[3] broadcast(fi), dimensions={}\n  a = "
      "f32[3] add(m, fb)\n";
  if (nested) {
    text +=
        "  z = s32[] constant(0)\n  t = (s32[], f32[3]) tuple(z, a)\n  l = (s32[], f32[3]) "
        "while(t), condition=inner_cond, body=inner_body\n  a2 = f32[3] get-tuple-element(l), "
        "index=1\n";
  } else {
    text += "  a2 = f32[3] add(a, a)\n";
  }
  text +=
      "  one = s32[] constant(1)\n  i1 = s32[] add(i, one)\n  ROOT r = (s32[], s32[], f32[3]) "
      "tuple(i1, n, a2)\n}\n\n"
      "cond {\n  s = (s32[], s32[], f32[3]) parameter(0)\n  i = s32[] get-tuple-element(s), "
      "index=0\n  n = s32[] get-tuple-element(s), index=1\n  ROOT lt = pred[] compare(i, n), "
      "direction=LT\n}\n\n"
      "ENTRY main {\n  x = f32[3] parameter(0)\n  b = s32[] parameter(1)\n  start = s32[] " +
      start + "\n  stop = s32[] " + stop +
      "\n  init = (s32[], s32[], f32[3]) tuple(start, stop, x)\n  w = (s32[], s32[], f32[3]) "
      "while(init), condition=cond, body=body\n  ROOT out = f32[3] get-tuple-element(w), "
      "index=2\n}\n";
  return text;
}

const std::vector<Literal> kArgs = {
    Literal::FromVector<float>(ElementType::kF32, {3}, {1.0f, -2.5f, 1e-3f}),
    Literal::Scalar<int32_t>(ElementType::kS32, 4)};

std::string Bytes(const ir::Module& m) {
  auto out = interp::Evaluate(m, kArgs);
  EXPECT_TRUE(out.ok()) << out.status().message();
  return out.ok() ? out->bytes() : "";
}

bool HasWhile(const ir::Module& m) {
  auto text = ir::PrintModule(m);
  return text.ok() && text->find(" while(") != std::string::npos;
}

struct Case {
  std::string start, stop;
  bool nested;
  int calls;  // of the body, after unrolling
};

TEST(UnrollWhile, ConstantTripCountsUnrollToTheLoopsValue) {
  for (const Case& c :
       {Case{"constant(0)", "constant(5)", false, 5}, Case{"constant(3)", "constant(3)", false, 0},
        Case{"constant(7)", "constant(2)", false, 0},
        // A constant expression is a constant: 10 - 4 = 6 trips.
        Case{"subtract(ten, four)", "constant(9)", false, 3},
        Case{"constant(0)", "constant(3)", true, 3}}) {
    std::string text = ForiLoop(c.start, c.stop, c.nested);
    if (c.start.rfind("subtract", 0) == 0) {
      text.replace(text.find("  start ="), 0,
                   "  ten = s32[] constant(10)\n  four = s32[] constant(4)\n");
    }
    SCOPED_TRACE(text);
    auto module = ir::ParseAndVerify(text);
    ASSERT_TRUE(module.ok()) << module.status().message();
    auto out = UnrollLoops(**module);
    ASSERT_TRUE(out.ok()) << out.status().message();
    ASSERT_TRUE(ir::VerifyModule(**out).ok());
    EXPECT_FALSE(HasWhile(**out));
    auto printed = ir::PrintModule(**out);
    ASSERT_TRUE(printed.ok());
    size_t calls = 0;
    for (size_t at = printed->find(" call("); at != std::string::npos;
         at = printed->find(" call(", at + 1)) {
      ++calls;
    }
    // A nested loop's body calls are in the outer body, so they count once.
    EXPECT_EQ(calls, static_cast<size_t>(c.calls) + (c.nested ? 2 : 0));
    EXPECT_EQ(Bytes(**out), Bytes(**module));
    // And through the whole default pipeline, which leaves no call either.
    auto piped = RunPipeline(**module, kDefaultPipeline, {});
    ASSERT_TRUE(piped.ok()) << piped.status().message();
    EXPECT_EQ(Bytes(*piped->module), Bytes(**module));
  }
}

// `text`'s loops stay loops (`loops` of them; the backends run them: tests/runtime/while_test.cc)
// through the pass and the default pipeline, with the interpreter's value (or error) unchanged.
void ExpectKept(const std::string& text, int loops = 1, bool evaluate = true) {
  SCOPED_TRACE(text);
  auto module = ir::ParseAndVerify(text);
  ASSERT_TRUE(module.ok()) << module.status().message();
  auto out = UnrollLoops(**module);
  ASSERT_TRUE(out.ok()) << out.status().message();
  auto printed = ir::PrintModule(**out);
  ASSERT_TRUE(printed.ok());
  int whiles = 0;
  for (size_t at = printed->find(" while("); at != std::string::npos;
       at = printed->find(" while(", at + 1)) {
    ++whiles;
  }
  EXPECT_EQ(whiles, loops);
  auto piped = RunPipeline(**module, kDefaultPipeline, {});
  ASSERT_TRUE(piped.ok()) << piped.status().message();
  if (!evaluate) return;
  const std::vector<Literal>& args = kArgs;
  auto want = interp::Evaluate(**module, args);
  auto got = interp::Evaluate(**out, args);
  ASSERT_EQ(want.ok(), got.ok());
  if (want.ok()) EXPECT_EQ(want->bytes(), got->bytes());
  auto piped_value = interp::Evaluate(*piped->module, args);
  ASSERT_EQ(want.ok(), piped_value.ok());
  if (want.ok()) EXPECT_EQ(want->bytes(), piped_value->bytes());
}

TEST(UnrollWhile, LoopsWhoseTripCountDependsOnDataStayLoops) {
  // The bound is an input.
  ExpectKept(ForiLoop("constant(0)", "add(b, b)"));
  // The counter is advanced by a value computed from the state's data.
  std::string text = ForiLoop("constant(0)", "constant(5)");
  text.replace(text.find("i1 = s32[] add(i, one)"), std::string("i1 = s32[] add(i, one)").size(),
               "am = f32[3] abs(m)\n  c = s32[3] convert(am)\n  i1 = s32[] reduce(c, i), "
               "dimensions={0}, to_apply=addi");
  text.replace(text.find("body {"), 0,
               "addi {\n  a = s32[] parameter(0)\n  b = s32[] parameter(1)\n  ROOT s = s32[] "
               "add(a, b)\n}\n\n");
  ExpectKept(text);
  // A loop with a known trip count around one that stays a loop stays a loop too; a loop with a
  // known trip count inside one that stays is unrolled.
  std::string outer = ForiLoop("constant(0)", "constant(3)", /*nested=*/true);
  const std::string inner_root = "ROOT lt = pred[] compare(j, two), direction=LT";
  outer.replace(outer.find(inner_root), inner_root.size(),
                "jl = pred[] compare(j, two), direction=LT\n  v0 = f32[3] get-tuple-element(s), "
                "index=1\n  vs = f32[1] slice(v0), slice={[0:1]}\n  v1 = f32[] reshape(vs)\n  "
                "big = f32[] constant(1000)\n  vl = pred[] compare(v1, big), direction=LT\n  "
                "ROOT lt = pred[] and(jl, vl)");
  ExpectKept(outer, 2);
  ExpectKept(ForiLoop("constant(0)", "add(b, b)", /*nested=*/true), 1);
}

// The trip count is found by running the loop's control alone: the body's other work and its
// state's other elements are never evaluated. Here they are 4 GiB matrices and a dot of them
// (what an LSTM's scan carries, grown): the whole body run with those elements zero, as the pass
// once ran it, does not finish (measured: past 30 s for the first iteration's dot, which is
// 1.4e14 flops); the control takes microseconds.
TEST(UnrollWhile, TheTripCountCostsTheControlsWorkNotTheBodys) {
  const std::string text = R"(HloModule big_state

body {
  s = (s32[], f32[65536,16384]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  one = s32[] constant(1)
  i1 = s32[] add(i, one)
  m = f32[65536,16384] get-tuple-element(s), index=1
  mt = f32[16384,65536] transpose(m), dimensions={1,0}
  d = f32[65536,65536] dot(m, mt), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  ds = f32[65536,16384] slice(d), slice={[0:65536], [0:16384]}
  ROOT r = (s32[], f32[65536,16384]) tuple(i1, ds)
}

cond {
  s = (s32[], f32[65536,16384]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  n = s32[] constant(100)
  ROOT lt = pred[] compare(i, n), direction=LT
}

ENTRY main {
  x = f32[65536,16384] parameter(0)
  zero = s32[] constant(0)
  init = (s32[], f32[65536,16384]) tuple(zero, x)
  w = (s32[], f32[65536,16384]) while(init), condition=cond, body=body
  ROOT out = f32[65536,16384] get-tuple-element(w), index=1
}
)";
  auto module = ir::ParseAndVerify(text);
  ASSERT_TRUE(module.ok()) << module.status().message();
  auto out = UnrollLoops(**module);
  ASSERT_TRUE(out.ok()) << out.status().message();
  EXPECT_FALSE(HasWhile(**out));
}

TEST(UnrollWhile, LoopsThatWouldUnrollTooFarStayLoops) {
  ExpectKept(ForiLoop("constant(0)", "constant(5000)"));
  // Nested: 2 inner copies per outer iteration, so at most 1365 outer iterations (3 x 1365): the
  // outer loop stays, the inner one is unrolled.
  ExpectKept(ForiLoop("constant(0)", "constant(1400)", /*nested=*/true), 1);
}

TEST(UnrollWhile, TheInterpreterStopsARunawayLoop) {
  // i < stop never becomes false when the body does not advance i: the interpreter gives up
  // after kMaxWhileIterations; unroll-while leaves the loop (the backends stop it there too).
  std::string text = ForiLoop("constant(0)", "constant(1)");
  text.replace(text.find("i1 = s32[] add(i, one)"), std::string("i1 = s32[] add(i, one)").size(),
               "i1 = s32[] multiply(i, one)");
  auto module = ir::ParseAndVerify(text);
  ASSERT_TRUE(module.ok()) << module.status().message();
  auto value = interp::Evaluate(**module, kArgs);
  ASSERT_FALSE(value.ok());
  EXPECT_NE(value.status().message().find("the loops run more than " +
                                          std::to_string(interp::kMaxWhileIterations)),
            std::string::npos)
      << value.status().message();
  ExpectKept(text, 1, /*evaluate=*/false);
}

}  // namespace
}  // namespace detrain::passes

namespace detrain::passes {
namespace {

// Real JAX loops (tests/compiler/interp/testdata/jax): the default pipeline unrolls them, and
// the interpreter gives the same bits on the unrolled module as its own loop on the input.
TEST(UnrollWhile, JaxLoopsUnrollToTheSameBits) {
  const std::filesystem::path jax =
      std::filesystem::path(DETRAIN_SOURCE_DIR) / "tests/compiler/interp/testdata/jax";
  for (const char* name : {"rnn_scan_forward", "dropout_random"}) {
    SCOPED_TRACE(name);
    std::ifstream in(jax / name / "module.hlo");
    std::stringstream text;
    text << in.rdbuf();
    auto module = ir::ParseAndVerify(text.str());
    ASSERT_TRUE(module.ok()) << module.status().message();
    ASSERT_TRUE(HasWhile(**module));
    std::vector<Literal> args;
    for (const ir::Instruction* p : (*module)->entry()->Parameters()) {
      Literal arg(p->shape);  // deterministic nonzero bits: element i = i * 0.01 (or i)
      for (int64_t i = 0; i < arg.element_count(); ++i) {
        if (p->shape.type() == ElementType::kF32) {
          arg.Set<float>(i, static_cast<float>(i) * 0.01f - 0.3f);
        } else if (p->shape.type() == ElementType::kU32) {
          arg.Set<uint32_t>(i, static_cast<uint32_t>(i * 2654435761u));
        } else if (p->shape.type() == ElementType::kS32) {
          arg.Set<int32_t>(i, static_cast<int32_t>(i % 5));
        }
      }
      args.push_back(std::move(arg));
    }
    auto want = interp::Evaluate(**module, args);
    ASSERT_TRUE(want.ok()) << want.status().message();
    auto piped = RunPipeline(**module, kDefaultPipeline, {});
    ASSERT_TRUE(piped.ok()) << piped.status().message();
    EXPECT_FALSE(HasWhile(*piped->module));
    auto got = interp::Evaluate(*piped->module, args);
    ASSERT_TRUE(got.ok()) << got.status().message();
    EXPECT_TRUE(got->BitwiseEqual(*want));
  }
}

}  // namespace
}  // namespace detrain::passes
