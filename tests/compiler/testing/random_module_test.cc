// The random module generator's own contract (random_module.h): it covers every op family and
// element type it promises, honours the options that exclude families and types, is a pure
// function of its seed, and its arguments contain the edge bit patterns.
#include "compiler/testing/random_module.h"

#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <set>

#include "attest/sha256.h"
#include "compiler/interp/interpreter.h"
#include "compiler/ir/opcode.h"
#include "compiler/ir/printer.h"
#include "compiler/ir/verifier.h"

namespace detrain::testing {
namespace {

using ir::ElementType;
using ir::Opcode;

struct Census {
  std::map<Opcode, int> ops;
  std::set<ElementType> types;
};

void Count(const ir::Module& module, Census* census) {
  auto computations = module.ComputationPostOrder();
  ASSERT_TRUE(computations.ok());
  for (const ir::Computation* c : *computations) {
    auto order = c->PostOrder();
    ASSERT_TRUE(order.ok());
    for (const ir::Instruction* instr : *order) {
      ++census->ops[instr->opcode];
      if (!instr->shape.is_tuple()) census->types.insert(instr->shape.type());
    }
  }
}

Census CensusOf(const RandomModuleOptions& options, uint64_t seeds) {
  Census census;
  for (uint64_t seed = 1; seed <= seeds; ++seed) {
    auto module = RandomModule(seed, options);
    EXPECT_NE(module, nullptr) << "seed " << seed;
    if (module == nullptr) continue;
    EXPECT_TRUE(ir::VerifyModule(*module).ok()) << "seed " << seed;
    Count(*module, &census);
  }
  return census;
}

TEST(RandomModule, EveryFamilyAndTypeAppears) {
  Census census = CensusOf(RandomModuleOptions::Replicated(), 300);
  const Opcode kExpected[] = {
      Opcode::kConstant,     Opcode::kIota,         Opcode::kAbs,
      Opcode::kExp,          Opcode::kNot,          Opcode::kAdd,
      Opcode::kPower,        Opcode::kCompare,      Opcode::kSelect,
      Opcode::kClamp,        Opcode::kConvert,      Opcode::kBitcastConvert,
      Opcode::kBroadcast,    Opcode::kReshape,      Opcode::kTranspose,
      Opcode::kSlice,        Opcode::kConcatenate,  Opcode::kPad,
      Opcode::kReverse,      Opcode::kDynamicSlice, Opcode::kDynamicUpdateSlice,
      Opcode::kGather,       Opcode::kScatter,      Opcode::kReduce,
      Opcode::kReduceWindow, Opcode::kDot,          Opcode::kConvolution,
      Opcode::kAllReduce,    Opcode::kTuple,        Opcode::kGetTupleElement,
      Opcode::kCall,         Opcode::kCustomCall};
  // Live instructions only (what an engine executes), over 300 modules.
  for (Opcode op : kExpected) {
    EXPECT_GE(census.ops[op], 8) << ir::OpcodeName(op);
  }
  EXPECT_GE(census.ops[Opcode::kShiftLeft] + census.ops[Opcode::kShiftRightLogical] +
                census.ops[Opcode::kShiftRightArithmetic],
            8);
  for (ElementType t : RandomModuleOptions().types) {
    EXPECT_TRUE(census.types.count(t)) << ir::ElementTypeName(t);
  }
}

TEST(RandomModule, OptionsExcludeFamiliesAndTypes) {
  RandomModuleOptions options;
  options.families = op_family::kElementwise | op_family::kMovement;
  options.types = {ElementType::kF32, ElementType::kS32};
  Census census = CensusOf(options, 200);
  for (Opcode op :
       {Opcode::kDot, Opcode::kConvolution, Opcode::kGather, Opcode::kScatter, Opcode::kReduce,
        Opcode::kReduceWindow, Opcode::kAllReduce, Opcode::kCall, Opcode::kCustomCall}) {
    EXPECT_EQ(census.ops[op], 0) << ir::OpcodeName(op);
  }
  // pred appears only as the result of compare (select's predicate); nothing else is created.
  for (ElementType t : census.types) {
    EXPECT_TRUE(t == ElementType::kF32 || t == ElementType::kS32 || t == ElementType::kPred)
        << ir::ElementTypeName(t);
  }
}

TEST(RandomModule, ExcludedOpsNeverReachTheProgram) {
  RandomModuleOptions options = RandomModuleOptions::Replicated();
  options.exclude_ops = {Opcode::kMultiply, Opcode::kPower, Opcode::kGather, Opcode::kAllReduce,
                         Opcode::kExp};
  Census census = CensusOf(options, 200);
  for (Opcode op : options.exclude_ops) EXPECT_EQ(census.ops[op], 0) << ir::OpcodeName(op);
  EXPECT_GT(census.ops[Opcode::kAdd], 50);  // the rest is still generated
  EXPECT_GT(census.ops[Opcode::kScatter], 5);
}

TEST(RandomModule, ReplicatedModulesEvaluateOnSeveralReplicas) {
  int with_all_reduce = 0;
  for (uint64_t seed = 1; seed <= 100; ++seed) {
    auto module = RandomModule(seed, RandomModuleOptions::Replicated());
    ASSERT_NE(module, nullptr);
    std::vector<std::vector<ir::Literal>> args = {RandomArguments(*module, seed),
                                                  RandomArguments(*module, seed + 1000)};
    auto results = interp::EvaluateReplicated(*module, args);
    ASSERT_TRUE(results.ok()) << "seed " << seed << ": " << results.status().message();
    with_all_reduce += ir::PrintModule(*module)->find("all-reduce(") != std::string::npos;
  }
  EXPECT_GT(with_all_reduce, 20);
}

TEST(RandomModule, IsAPureFunctionOfSeedAndOptions) {
  for (uint64_t seed : {1u, 7u, 99u}) {
    for (const RandomModuleOptions& o :
         {RandomModuleOptions::Everything(), RandomModuleOptions::PassTargeted(true)}) {
      auto a = RandomModule(seed, o);
      auto b = RandomModule(seed, o);
      EXPECT_EQ(*ir::PrintModule(*a), *ir::PrintModule(*b));
      auto x = RandomArguments(*a, seed);
      auto y = RandomArguments(*b, seed);
      ASSERT_EQ(x.size(), y.size());
      for (size_t i = 0; i < x.size(); ++i) EXPECT_TRUE(x[i].BitwiseEqual(y[i]));
    }
    EXPECT_NE(*ir::PrintModule(*RandomModule(seed)), *ir::PrintModule(*RandomModule(seed + 1)));
  }
}

// The modules are a function of the seed alone, not of the compiler that built the generator:
// C++ leaves the order of a call's arguments unspecified (GCC evaluates them right to left,
// clang left to right), so an argument list with two draws from the generator made other modules
// under clang (the sanitizer build) than under GCC, and tests tuned on one set failed on the
// other. The digest of the printed modules of every option set is pinned here.
TEST(RandomModule, TheModulesDoNotDependOnTheCompiler) {
  std::string text;
  for (uint64_t seed = 1; seed <= 60; ++seed) {
    for (const RandomModuleOptions& o :
         {RandomModuleOptions(), RandomModuleOptions::Replicated(),
          RandomModuleOptions::WithLoops(), RandomModuleOptions::PassTargeted(true)}) {
      auto module = RandomModule(seed, o);
      ASSERT_NE(module, nullptr);
      Result<std::string> printed = ir::PrintModule(*module);
      ASSERT_TRUE(printed.ok());
      text += *printed;
    }
  }
  EXPECT_EQ(attest::Sha256Hex(text),
            "b6b53a538fa08423571a207c3b3e2228e8c69584960dddcba2cd23e87707a6aa");
}

TEST(RandomModule, ArgumentsHoldTheEdgeBitPatterns) {
  ir::Literal lit = RandomLiteral(ir::Shape(ElementType::kF32, {4096}), 5);
  std::set<std::string> seen;
  for (int64_t k = 0; k < lit.element_count(); ++k) {
    uint32_t bits;
    std::memcpy(&bits, lit.bytes().data() + 4 * k, 4);
    uint32_t exponent = (bits >> 23) & 0xff, mantissa = bits & 0x7fffff;
    if (bits == 0x80000000u) seen.insert("-0");
    if (exponent == 0xff && mantissa == 0) seen.insert(bits >> 31 ? "-inf" : "+inf");
    if (exponent == 0xff && mantissa != 0) seen.insert(mantissa >> 22 ? "qnan" : "snan");
    if (exponent == 0xff && mantissa != 0 && (bits >> 31)) seen.insert("negative nan");
    if (exponent == 0 && mantissa != 0) seen.insert("subnormal");
  }
  for (const char* kind : {"-0", "-inf", "+inf", "qnan", "snan", "negative nan", "subnormal"}) {
    EXPECT_TRUE(seen.count(kind)) << kind;
  }
  ir::Literal ints = RandomLiteral(ir::Shape(ElementType::kS32, {512}), 6);
  std::set<int32_t> values;
  for (int64_t k = 0; k < ints.element_count(); ++k) values.insert(ints.Get<int32_t>(k));
  for (int32_t v : {0, 1, -1, INT32_MIN, INT32_MAX}) EXPECT_TRUE(values.count(v)) << v;
  ir::Literal preds = RandomLiteral(ir::Shape(ElementType::kPred, {64}), 7);
  for (char c : preds.bytes()) EXPECT_TRUE(c == 0 || c == 1);
}

}  // namespace
}  // namespace detrain::testing
