// Generated loops (compiler/codegen/cpu/fused_loop.h, runtime/cpu/fused_loops.h): which programs
// the generator writes, that its text is a function of the spec, that one function serves every
// request of the same text, that a compiled loop gives the semantics' bits on special values (its
// flagged blocks and tail through the rule), and that a missing compiler is an error of this
// machine (kUnavailable) that leaves the kernels on the evaluator. Whole programs run with
// generated loops in kernels_test.cc (the kernel cases) and contract_test.cc (the examples).
#include "runtime/cpu/fused_loops.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <bit>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "compiler/codegen/cpu/fused_loop.h"
#include "compiler/semantics/convert.h"
#include "compiler/semantics/scalar.h"
#include "runtime/cpu/isa_kernels.h"

namespace detrain::runtime::cpu {
namespace {

namespace pb = plan::v2;

pb::ScalarOp Op(pb::ScalarOp::Kind kind, pb::ElementType type, std::vector<int> args = {},
                std::string op = "", int input = 0) {
  pb::ScalarOp o;
  o.set_kind(kind);
  o.set_type(type);
  o.set_op(op);
  o.set_input(input);
  for (int a : args) o.add_args(a);
  return o;
}

pb::ScalarOp Constant(float v) {
  pb::ScalarOp o = Op(pb::ScalarOp::CONSTANT, pb::F32);
  o.set_constant(std::string(reinterpret_cast<const char*>(&v), 4));
  return o;
}

plan::DecodedProgram Decode(const std::vector<pb::ScalarOp>& ops, int result,
                            const std::vector<ir::ElementType>& input_types) {
  pb::ScalarProgram p;
  for (const pb::ScalarOp& o : ops) *p.add_ops() = o;
  p.set_result(result);
  auto d = plan::DecodeProgram(p, input_types);
  EXPECT_TRUE(d.ok()) << d.status().message();
  return d.ok() ? *d : plan::DecodedProgram{};
}

// max(tanh(x * y + c), x) - x / y: plain ops, an array op in the middle, a maximum.
plan::DecodedProgram Mixed() {
  return Decode(
      {Op(pb::ScalarOp::INPUT, pb::F32, {}, "", 0), Op(pb::ScalarOp::INPUT, pb::F32, {}, "", 1),
       Constant(0.25f), Op(pb::ScalarOp::BINARY, pb::F32, {0, 1}, "multiply"),
       Op(pb::ScalarOp::BINARY, pb::F32, {3, 2}, "add"),
       Op(pb::ScalarOp::UNARY, pb::F32, {4}, "tanh"),
       Op(pb::ScalarOp::BINARY, pb::F32, {5, 0}, "maximum"),
       Op(pb::ScalarOp::BINARY, pb::F32, {0, 1}, "divide"),
       Op(pb::ScalarOp::BINARY, pb::F32, {6, 7}, "subtract")},
      8, {ir::ElementType::kF32, ir::ElementType::kF32});
}

// The semantics' value of Mixed() at (x, y).
float MixedRule(float x, float y) {
  namespace sem = semantics;
  const float t = sem::ApplyUnary<float>(
      sem::UnaryOp::kTanh,
      sem::ApplyBinary<float>(sem::BinaryOp::kAdd,
                              sem::ApplyBinary<float>(sem::BinaryOp::kMultiply, x, y), 0.25f));
  const float m = sem::ApplyBinary<float>(sem::BinaryOp::kMaximum, t, x);
  return sem::ApplyBinary<float>(sem::BinaryOp::kSubtract, m,
                                 sem::ApplyBinary<float>(sem::BinaryOp::kDivide, x, y));
}

TEST(FusedLoop, WritesFloatArithmeticComparesSelectsAndArrayOps) {
  EXPECT_TRUE(codegen::cpu::CanGenerate(Mixed()));
  const plan::DecodedProgram select = Decode(
      {Op(pb::ScalarOp::INPUT, pb::F32, {}, "", 0), Op(pb::ScalarOp::INPUT, pb::F32, {}, "", 1),
       [] {
         pb::ScalarOp c = Op(pb::ScalarOp::COMPARE, pb::PRED, {0, 1});
         c.set_direction("LT");
         return c;
       }(),
       Op(pb::ScalarOp::SELECT, pb::F32, {2, 0, 1})},
      3, {ir::ElementType::kF32, ir::ElementType::kF32});
  EXPECT_TRUE(codegen::cpu::CanGenerate(select));
  // 32-bit integer arithmetic that wraps, converts to f32: written; integer division, shifts,
  // converts from f32 and 64-bit types stay with the evaluator.
  auto int_op = [](const char* op, pb::ElementType t) {
    const ir::ElementType e = t == pb::S64 ? ir::ElementType::kS64 : ir::ElementType::kS32;
    return Decode({Op(pb::ScalarOp::INPUT, t, {}, "", 0), Op(pb::ScalarOp::INPUT, t, {}, "", 1),
                   Op(pb::ScalarOp::BINARY, t, {0, 1}, op)},
                  2, {e, e});
  };
  EXPECT_TRUE(codegen::cpu::CanGenerate(int_op("add", pb::S32)));
  EXPECT_TRUE(codegen::cpu::CanGenerate(int_op("xor", pb::S32)));
  EXPECT_FALSE(codegen::cpu::CanGenerate(int_op("divide", pb::S32)));
  EXPECT_FALSE(codegen::cpu::CanGenerate(int_op("shift-left", pb::S32)));
  EXPECT_FALSE(codegen::cpu::CanGenerate(int_op("add", pb::S64)));
  const plan::DecodedProgram convert =
      Decode({Op(pb::ScalarOp::INPUT, pb::S32, {}, "", 0), Op(pb::ScalarOp::CONVERT, pb::F32, {0})},
             1, {ir::ElementType::kS32});
  EXPECT_TRUE(codegen::cpu::CanGenerate(convert));
  const plan::DecodedProgram to_int =
      Decode({Op(pb::ScalarOp::INPUT, pb::F32, {}, "", 0), Op(pb::ScalarOp::CONVERT, pb::S32, {0})},
             1, {ir::ElementType::kF32});
  EXPECT_FALSE(codegen::cpu::CanGenerate(to_int));
  const plan::DecodedProgram power = Decode(
      {Op(pb::ScalarOp::INPUT, pb::F32, {}, "", 0), Op(pb::ScalarOp::INPUT, pb::F32, {}, "", 1),
       Op(pb::ScalarOp::BINARY, pb::F32, {0, 1}, "power")},
      2, {ir::ElementType::kF32, ir::ElementType::kF32});
  EXPECT_FALSE(codegen::cpu::CanGenerate(power));
}

// Every f32 unary op the generator writes is one it computes inline (negate, abs, sqrt) or one
// the loops' environment has an array form for: else a block would be left unwritten.
TEST(FusedLoop, EveryUnaryOpItWritesHasAWay) {
  const struct {
    const char* spelling;
    ir::UnaryOp op;
  } kOps[] = {
#define OP(e, s, n, c, o, x, a, t)
#define UNARY(e, s, x, t) {s, ir::UnaryOp::e},
#include "compiler/ir/ops.def"
#undef OP
  };
  int written = 0;
  for (const auto& u : kOps) {
    pb::ScalarProgram prog;
    *prog.add_ops() = Op(pb::ScalarOp::INPUT, pb::F32);
    *prog.add_ops() = Op(pb::ScalarOp::UNARY, pb::F32, {0}, u.spelling);
    auto p = plan::DecodeProgram(prog, {ir::ElementType::kF32});
    if (!p.ok() || !codegen::cpu::CanGenerate(*p)) continue;
    ++written;
    const bool inline_op =
        u.op == ir::UnaryOp::kNegate || u.op == ir::UnaryOp::kAbs || u.op == ir::UnaryOp::kSqrt;
    float x = 0.5f, y = 0.0f;
    EXPECT_TRUE(inline_op || ArrayUnaryOn(BestIsa(), u.op, &x, &y, 1)) << u.spelling;
  }
  EXPECT_GE(written, 11);  // negate, abs, sqrt and the eight array ops
}

TEST(FusedLoop, TextIsAFunctionOfTheSpec) {
  const plan::DecodedProgram p = Mixed();
  codegen::cpu::LoopSpec spec{&p, {false, false}, false};
  const std::string a = codegen::cpu::LoopFunction(spec, "f");
  EXPECT_EQ(a, codegen::cpu::LoopFunction(spec, "f"));
  codegen::cpu::LoopSpec scalar = spec;
  scalar.scalar_input = {false, true};
  EXPECT_NE(a, codegen::cpu::LoopFunction(scalar, "f")) << "a scalar input is read as in1[0]";
  codegen::cpu::LoopSpec aliased = spec;
  aliased.output_meets_input = true;
  const std::string b = codegen::cpu::LoopFunction(aliased, "f");
  EXPECT_NE(b.find("res["), std::string::npos) << "in place: a block copy, stored when unflagged";
  EXPECT_EQ(b.find("__restrict"), std::string::npos);
  EXPECT_NE(a.find("0x3e800000u"), std::string::npos) << "constants as their bits";
}

// What a kernel's rule does: the semantics at each index (ChunkProgram uses the evaluator).
struct RuleCall {
  const float* x;
  const float* y;
  float* out;
  int64_t calls = 0;
};

void Rule(void* ctx, int64_t begin, int64_t n) {
  RuleCall& r = *static_cast<RuleCall*>(ctx);
  ++r.calls;
  for (int64_t i = begin; i < begin + n; ++i) r.out[i] = MixedRule(r.x[i], r.y[i]);
}

TEST(FusedLoops, CompiledLoopGivesTheRulesBitsAndSharesFunctions) {
  const plan::DecodedProgram p = Mixed();
  codegen::cpu::LoopSpec spec{&p, {false, false}, false};
  FusedLoops loops(BestIsa());
  LoopFn a = nullptr, b = nullptr;
  loops.Request(spec, &a);
  loops.Request(spec, &b);
  EXPECT_EQ(loops.functions(), 1);
  EXPECT_EQ(loops.requests(), 2);
  Status st = loops.Build();
  ASSERT_TRUE(st.ok()) << st.message();
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a, b);
  // Ordinary values, then blocks holding NaNs with payloads, signed zeros, infinities and
  // subnormals (flagged: the rule decides them), and a partial last block.
  const int64_t n = 64 * 6 + 13;
  std::vector<float> x(n), y(n), out(n, 0.0f);
  const float specials[] = {std::bit_cast<float>(0x7fc01234u),
                            std::bit_cast<float>(0xffa00001u),
                            -0.0f,
                            0.0f,
                            std::numeric_limits<float>::infinity(),
                            -std::numeric_limits<float>::infinity(),
                            1e-40f,
                            -3.5f};
  for (int64_t i = 0; i < n; ++i) {
    x[i] = 0.5f + static_cast<float>(i % 17) * 0.125f;
    y[i] = 1.0f + static_cast<float>(i % 5) * 0.75f;
    if (i >= 128 && i < 256) x[i] = specials[i % 8], y[i] = specials[(i / 8) % 8];
  }
  RuleCall rc{x.data(), y.data(), out.data()};
  const uint8_t* in[] = {reinterpret_cast<const uint8_t*>(x.data()),
                         reinterpret_cast<const uint8_t*>(y.data())};
  DtLoopEnv env{loops.unary(), &Rule};
  a(in, reinterpret_cast<uint8_t*>(out.data()), 0, n, &env, &rc);
  for (int64_t i = 0; i < n; ++i) {
    ASSERT_EQ(std::bit_cast<uint32_t>(out[i]), std::bit_cast<uint32_t>(MixedRule(x[i], y[i])))
        << "index " << i << " x " << x[i] << " y " << y[i];
  }
  EXPECT_GE(rc.calls, 3) << "the special blocks and the tail go to the rule";
  EXPECT_LE(rc.calls, 3);
}

// The cache: a second FusedLoops with the same functions loads the first one's library (no
// compile); a cache directory others may write to is not used.
TEST(FusedLoops, CompiledLibrariesAreCachedInAPrivateDirectory) {
  char tmpl[] = "/tmp/detrain-loops-cache-XXXXXX";
  ASSERT_NE(::mkdtemp(tmpl), nullptr);
  const std::string home = tmpl;
  const char* old = std::getenv("XDG_CACHE_HOME");
  const std::string saved = old != nullptr ? old : "";
  ::setenv("XDG_CACHE_HOME", home.c_str(), 1);
  const plan::DecodedProgram p = Mixed();
  codegen::cpu::LoopSpec spec{&p, {false, true}, false};
  auto build = [&](LoopFn* fn) {
    auto loops = std::make_unique<FusedLoops>(BestIsa());
    loops->Request(spec, fn);
    Status st = loops->Build();
    EXPECT_TRUE(st.ok()) << st.message();
    return loops;
  };
  LoopFn first = nullptr, second = nullptr, third = nullptr;
  auto a = build(&first);
  EXPECT_EQ(a->compiles(), 1);
  auto b = build(&second);
  EXPECT_EQ(b->compiles(), 0) << "the second build should load the cached library";
  ASSERT_NE(second, nullptr);
  // The cached function computes as the first: the rule's bits at a few points.
  const float x[64 + 1] = {0.5f, -2.0f, 3.25f}, y[1] = {1.5f};
  float out[65] = {};
  const uint8_t* in[] = {reinterpret_cast<const uint8_t*>(x), reinterpret_cast<const uint8_t*>(y)};
  RuleCall rc{x, y, out};
  DtLoopEnv env{b->unary(), [](void*, int64_t, int64_t) {}};
  second(in, reinterpret_cast<uint8_t*>(out), 0, 64, &env, &rc);
  for (int i = 0; i < 3; ++i)
    EXPECT_EQ(std::bit_cast<uint32_t>(out[i]), std::bit_cast<uint32_t>(MixedRule(x[i], y[0])));
  ::chmod((home + "/detrain/loops").c_str(), 0777);
  auto c = build(&third);
  EXPECT_EQ(c->compiles(), 1) << "a directory others may write to is no cache";
  if (old != nullptr) {
    ::setenv("XDG_CACHE_HOME", saved.c_str(), 1);
  } else {
    ::unsetenv("XDG_CACHE_HOME");
  }
  std::filesystem::remove_all(home);
}

// Dropout's bits as charlm's plan has them: ((x ^ y) & 0x7fffff | 0x3f800000) as f32 - 1, times
// the mask (x * 3, wrapping, < y) as f32: each element's bits are the semantics', and only the
// partial block goes to the rule.
TEST(FusedLoops, IntegerProgramsGiveTheRulesBits) {
  auto u32 = [](uint32_t v) {
    pb::ScalarOp c = Op(pb::ScalarOp::CONSTANT, pb::U32);
    c.set_constant(std::string(reinterpret_cast<const char*>(&v), 4));
    return c;
  };
  pb::ScalarOp lt = Op(pb::ScalarOp::COMPARE, pb::PRED, {9, 1});
  lt.set_direction("LT");
  const plan::DecodedProgram p = Decode(
      {Op(pb::ScalarOp::INPUT, pb::U32, {}, "", 0), Op(pb::ScalarOp::INPUT, pb::U32, {}, "", 1),
       u32(0x007fffffu), u32(0x3f800000u), Op(pb::ScalarOp::BINARY, pb::U32, {0, 1}, "xor"),
       Op(pb::ScalarOp::BINARY, pb::U32, {4, 2}, "and"),
       Op(pb::ScalarOp::BINARY, pb::U32, {5, 3}, "or"), Op(pb::ScalarOp::BITCAST, pb::F32, {6}),
       u32(3), Op(pb::ScalarOp::BINARY, pb::U32, {0, 8}, "multiply"), lt,
       Op(pb::ScalarOp::CONVERT, pb::F32, {10}), Constant(1.0f),
       Op(pb::ScalarOp::BINARY, pb::F32, {7, 12}, "subtract"),
       Op(pb::ScalarOp::BINARY, pb::F32, {11, 13}, "multiply")},
      14, {ir::ElementType::kU32, ir::ElementType::kU32});
  ASSERT_TRUE(codegen::cpu::CanGenerate(p));
  FusedLoops loops(BestIsa());
  LoopFn fn = nullptr;
  loops.Request({&p, {false, false}, false}, &fn);
  Status st = loops.Build();
  ASSERT_TRUE(st.ok()) << st.message();
  const int64_t n = 64 * 3 + 5;
  std::vector<uint32_t> x(n), y(n);
  std::vector<float> out(n);
  uint32_t s = 12345;
  for (int64_t i = 0; i < n; ++i) {
    s = s * 1664525u + 1013904223u;
    x[i] = s;
    s = s * 1664525u + 1013904223u;
    y[i] = s;
  }
  const std::function<float(int64_t)> rule = [&](int64_t i) {
    namespace sem = semantics;
    using B = sem::BinaryOp;
    const uint32_t bits = sem::ApplyBinary<uint32_t>(
        B::kOr,
        sem::ApplyBinary<uint32_t>(B::kAnd, sem::ApplyBinary<uint32_t>(B::kXor, x[i], y[i]),
                                   0x007fffffu),
        0x3f800000u);
    const float f = sem::ApplyBinary<float>(B::kSubtract, std::bit_cast<float>(bits), 1.0f);
    const uint32_t m = sem::ApplyBinary<uint32_t>(B::kMultiply, x[i], 3u);
    const float mask = sem::ConvertElement<float, uint8_t>(m < y[i] ? 1 : 0);
    return sem::ApplyBinary<float>(B::kMultiply, mask, f);
  };
  struct Tail {
    std::vector<float>* out;
    const std::function<float(int64_t)>* rule;
    int64_t calls = 0;
  };
  Tail tail{&out, &rule};
  const uint8_t* in[] = {reinterpret_cast<const uint8_t*>(x.data()),
                         reinterpret_cast<const uint8_t*>(y.data())};
  DtLoopEnv env{loops.unary(), [](void* ctx, int64_t begin, int64_t count) {
                  Tail& t = *static_cast<Tail*>(ctx);
                  ++t.calls;
                  for (int64_t i = begin; i < begin + count; ++i) (*t.out)[i] = (*t.rule)(i);
                }};
  fn(in, reinterpret_cast<uint8_t*>(out.data()), 0, n, &env, &tail);
  EXPECT_EQ(tail.calls, 1) << "only the partial block is the rule's";
  for (int64_t i = 0; i < n; ++i)
    ASSERT_EQ(std::bit_cast<uint32_t>(out[i]), std::bit_cast<uint32_t>(rule(i))) << "index " << i;
}

TEST(FusedLoops, AMissingCompilerIsAnErrorOfThisMachine) {
  const plan::DecodedProgram p = Mixed();
  codegen::cpu::LoopSpec spec{&p, {false, false}, false};
  FusedLoops loops(BestIsa(), "/nonexistent/detrain-c++");
  LoopFn fn = nullptr;
  loops.Request(spec, &fn);
  Status st = loops.Build();
  EXPECT_EQ(st.code(), StatusCode::kUnavailable);
  EXPECT_NE(st.message().find("/nonexistent/detrain-c++"), std::string::npos) << st.message();
  EXPECT_EQ(fn, nullptr) << "the kernel keeps the evaluator";
}

}  // namespace
}  // namespace detrain::runtime::cpu
