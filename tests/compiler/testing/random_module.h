// The one random-module generator of the test suite: small verified IR modules and argument
// lists built from a seed, for every property test that compares two evaluations of one
// program bit for bit — print -> parse -> print, interp(m) == interp(pass(m)), and the
// conformance harness backend(m) == interp(m) (STYLE.md point 6).
//
// A module is a sequence of steps; each step picks one enabled op family (elementwise three
// times as often as each other family), then an op of it and operands among the values built
// so far (or fresh constants). The entry returns values nothing else uses, so most of the code
// is live; the rest is dead code on purpose (passes must cope with it). Shapes stay small
// (rank <= max_rank, dimensions <= max_dim, at most kMaxElements elements per value).
//
// A conformance check, for example (link detrain_test_modules):
//
//   RandomModuleOptions options = RandomModuleOptions::Replicated();
//   options.exclude_ops = {ir::Opcode::kConvolution};  // what the engine does not run yet
//   for (uint64_t seed = 1; seed <= 500; ++seed) {
//     auto module = RandomModule(seed, options);       // never null
//     std::vector<std::vector<ir::Literal>> args = {RandomArguments(*module, 2 * seed),
//                                                   RandomArguments(*module, 2 * seed + 1)};
//     auto want = interp::EvaluateReplicated(*module, args);  // the oracle, 2 replicas
//     ... run the engine on the same arguments; compare with Literal::BitwiseEqual ...
//   }
//
// Known gap: scatter indices are s32 only (gather also takes s64), because the interpreter's
// scatter bounds check overflows on s64 indices near INT64_MAX.
//
// Determinism: the same (seed, options) always builds the same module and the same arguments,
// on every machine (std::mt19937_64 only, no distributions whose output the standard leaves
// to the library). Thread safety: pure functions; concurrent calls are safe. Test-only.
#ifndef DETRAIN_TESTS_COMPILER_TESTING_RANDOM_MODULE_H_
#define DETRAIN_TESTS_COMPILER_TESTING_RANDOM_MODULE_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "compiler/ir/module.h"

namespace detrain::testing {

// Op families, as bits of RandomModuleOptions::families.
namespace op_family {
// unary, binary, compare, select, clamp, convert, bitcast-convert and iota, over every element
// type each op accepts (pred, s32, u32, s64, u64, f32).
inline constexpr uint32_t kElementwise = 1u << 0;
// broadcast, reshape, transpose, slice, concatenate, pad, reverse, dynamic-slice and
// dynamic-update-slice (start indices taken from data, so they get clamped).
inline constexpr uint32_t kMovement = 1u << 1;
// reduce and reduce-window, with add/multiply/max/min (and/or/xor for integers) combiners.
inline constexpr uint32_t kReduction = 1u << 2;
// dot (batch and contracting dimensions) and convolution (1 or 2 spatial dimensions, strides,
// padding, dilations).
inline constexpr uint32_t kDotConv = 1u << 3;
// gather and scatter (add/max/overwrite combiners), indices from data.
inline constexpr uint32_t kGatherScatter = 1u << 4;
// call, tuple and get-tuple-element.
inline constexpr uint32_t kCall = 1u << 5;
// all-reduce, often in pairs with the same or an equal combiner (evaluate with replicas).
inline constexpr uint32_t kAllReduce = 1u << 6;
// the threefry custom-call on u32 values.
inline constexpr uint32_t kThreefry = 1u << 7;
// what the passes look for: identity constants (1, -0.0, and the non-identity +0.0) as
// constants or broadcast splats, transpose/reshape/broadcast chains, repeated subexpressions,
// constant subgraphs, calls on reduced scalars, elementwise chains, reductions of elementwise
// producers, selects on constant predicates, full slices and zero pads. f32 and s32 only.
inline constexpr uint32_t kPassPatterns = 1u << 8;

inline constexpr uint32_t kAll = (1u << 9) - 1;
// while: fori loops of 0..3 trips over a value (what unroll-while unrolls). Not in kAll, so
// that the modules of every seed stay what they were before loops existed; asked for by
// RandomModuleOptions::WithLoops.
inline constexpr uint32_t kLoop = 1u << 9;
}  // namespace op_family

struct RandomModuleOptions {
  uint32_t families = op_family::kAll & ~op_family::kAllReduce;
  // Element types the generator may create values of (parameters, constants, converts). An
  // engine lacking a type removes it; f32 must stay (it is the type most ops need).
  std::vector<ir::ElementType> types = {ir::ElementType::kPred, ir::ElementType::kS32,
                                        ir::ElementType::kU32,  ir::ElementType::kS64,
                                        ir::ElementType::kU64,  ir::ElementType::kF32};
  int min_steps = 5, max_steps = 30;  // steps attempted (a step that does not fit is skipped)
  int max_params = 3;                 // the entry takes 1..max_params parameters
  int max_rank = 3;                   // of parameters and fresh constants; ops may add one
  int64_t max_dim = 4;
  int pass_pattern_weight = 1;  // kPassPatterns counts this many times when a family is picked
  // kPassPatterns also draws the S-shard row structure merge-rows undoes (an option, so that
  // the modules of every other option set stay the ones their tests were written on).
  bool sharded_rows = false;
  // Ops an engine lacks: a step whose new instructions (or the computations they call) use one
  // is dropped (its instructions stay behind as dead code, which no engine executes).
  std::vector<ir::Opcode> exclude_ops;

  // Every family but all-reduce (evaluate with interp::Evaluate).
  static RandomModuleOptions Everything() { return {}; }
  // Every family, all-reduce included (evaluate with interp::EvaluateReplicated).
  static RandomModuleOptions Replicated();
  // Mostly kPassPatterns (weighted 16:1 against each of elementwise, movement, reduction and
  // call), f32 and s32 only, 8..27 steps: the modules the pass property tests need, on which
  // every rewriting pass fires often.
  static RandomModuleOptions PassTargeted(bool all_reduce);
  // PassTargeted(false) with fori loops (op_family::kLoop) as well.
  static RandomModuleOptions WithLoops();
  // PassTargeted(false) with sharded_rows.
  static RandomModuleOptions ShardedRows();
};

// Values never exceed this many elements (keeps the interpreter fast on thousands of modules).
inline constexpr int64_t kMaxElements = 256;

// A module that passes ir::VerifyModule; its entry takes 1..max_params parameters and returns
// one value or a tuple of up to six values nothing else uses. nullptr (with the builder's
// error on stderr) only if the generator has a bug: tests assert it is never null.
std::unique_ptr<ir::Module> RandomModule(uint64_t seed, const RandomModuleOptions& options = {});

// RandomModule(seed, RandomModuleOptions::PassTargeted(all_reduce)).
std::unique_ptr<ir::Module> PassTargetedModule(uint64_t seed, bool all_reduce);

// Arguments for `module`'s entry as raw bit patterns: each element is either uniformly random
// bits or, half the time, one of the edge values of its type — for f32 ±0, ±inf, quiet and
// signalling NaNs with random sign and payload, subnormals, ±FLT_MIN, ±FLT_MAX, ±1, small
// integers; for integers 0, ±1, the minimum and maximum, and small values (shift amounts and
// indices). pred elements are 0 or 1.
std::vector<ir::Literal> RandomArguments(const ir::Module& module, uint64_t seed);

// One literal of `shape` filled the way RandomArguments fills its arguments.
ir::Literal RandomLiteral(const ir::Shape& shape, uint64_t seed);

}  // namespace detrain::testing

#endif  // DETRAIN_TESTS_COMPILER_TESTING_RANDOM_MODULE_H_
