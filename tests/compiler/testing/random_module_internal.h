// The generator behind RandomModule (random_module.h), shared by its two source files:
// random_module.cc (the step loop, operands, elementwise, movement, arguments) and
// random_module_ops.cc (reductions, dot/convolution, gather/scatter, calls, all-reduce,
// threefry and the pass-targeted patterns). Not an API. Thread safety: one Generator per
// thread. Determinism: every choice comes from Pick (rng_() % n).
#ifndef DETRAIN_TESTS_COMPILER_TESTING_RANDOM_MODULE_INTERNAL_H_
#define DETRAIN_TESTS_COMPILER_TESTING_RANDOM_MODULE_INTERNAL_H_

#include <map>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "compiler/ir/builder.h"
#include "random_module.h"

namespace detrain::testing::random_internal {

using ir::Builder;
using ir::ElementType;
using ir::Instruction;
using ir::Opcode;
using ir::Shape;

// Fills every element of `lit` (an array) with raw bits as RandomArguments describes.
void FillRandom(ir::Literal& lit, std::mt19937_64& rng);

class Generator {
 public:
  Generator(uint64_t seed, const RandomModuleOptions& options) : rng_(seed), options_(options) {}
  std::unique_ptr<ir::Module> Build();

 private:
  // random_module.cc
  uint64_t Pick(uint64_t n) { return n == 0 ? 0 : rng_() % n; }
  bool Chance(uint64_t one_in) { return Pick(one_in) == 0; }
  bool Has(ElementType t) const;
  ElementType AnyType();
  Shape RandomShape(ElementType t);
  std::vector<int64_t> Permutation(int rank);
  // An existing value of type `t` (any shape), else a fresh random constant of it.
  Instruction* Operand(ElementType t);
  // An existing value of `shape` if one exists (3 in 4 times), else a fresh random constant.
  Instruction* SameShape(const Shape& shape);
  Instruction* RandomConstant(const Shape& shape);
  Instruction* Splat(const Shape& s, float f, int64_t i);  // constant array or broadcast scalar
  Instruction* IndexScalar();  // an integer scalar read from data (or a small constant)
  bool Fits(const std::vector<int64_t>& dims) const;
  void Step();
  // Whether an instruction of the entry from position `first` on, or a computation one of
  // them calls, uses an op of options_.exclude_ops.
  bool UsesExcludedOps(size_t first) const;
  Instruction* Elementwise();
  Instruction* Movement();
  Instruction* DynamicSlicing(Instruction* x);

  // random_module_ops.cc
  const ir::Computation* Combiner(Opcode op, ElementType t, int copy = 0);
  const ir::Computation* AnyCombiner(ElementType t);
  // A window over a dimension of size d (size 1..max_size, strides, padding, dilations) that
  // fits: its extent (WindowExtent) is at least 1.
  ir::WindowDim RandomWindow(int64_t d, int64_t max_size);
  Instruction* Reduction();
  Instruction* DotConv();
  Instruction* Convolution(Instruction* x);
  Instruction* GatherScatter();
  Instruction* CallOrTuple();
  Instruction* Loop();
  Instruction* AllReduce();
  Instruction* Threefry();
  Instruction* PassPattern();
  Instruction* PassPatternOf(ElementType t, Instruction* x);
  // The S-shard structure merge-rows undoes: x's rows cut into 2 or 3 blocks, each put through
  // the same chain (an elementwise op, one with a shared row-independent operand, one with the
  // block's own operand, a row statistic broadcast back, a transpose or reshape keeping the
  // rows), the results concatenated along the rows (one time in three out of order).
  Instruction* ShardedRows(ElementType t, Instruction* x);

  std::mt19937_64 rng_;
  RandomModuleOptions options_;
  ir::Module* module_ = nullptr;
  Builder* b_ = nullptr;                    // the entry's builder while Build runs
  const ir::Computation* entry_ = nullptr;  // the computation b_ builds
  std::vector<Instruction*> values_;
  std::map<std::pair<int, int>, const ir::Computation*> combiners_;  // (op, type) and copies
  const ir::Computation* scalar_callee_ = nullptr;  // (f32 p0, p1, p2) -> p0 * p1 + p0
  int next_computation_ = 0;
};

}  // namespace detrain::testing::random_internal

#endif  // DETRAIN_TESTS_COMPILER_TESTING_RANDOM_MODULE_INTERNAL_H_
