// The kernel cases every backend runs against the reference interpreter: modules whose values
// decide the bits of a kernel's fast paths (special-value pairs, NaN payloads, signed zeros,
// order-sensitive sums, clamped and skipped indices, tiles and leaves that end partway) — the
// cases random modules rarely meet. runtime/kernels_test.cc runs them on the CPU executor (every
// ISA, threads 1 and 2); compiler/codegen/cuda/emulation_test.cc on generated CUDA code.
//
// Test-only. Determinism: the same cases, names and arguments on every call.
#ifndef DETRAIN_TESTS_RUNTIME_KERNEL_CASES_H_
#define DETRAIN_TESTS_RUNTIME_KERNEL_CASES_H_

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "compiler/ir/literal.h"

namespace detrain::runtime {

struct KernelCase {
  std::string name;  // "Family" or "Family detail", unique
  std::string hlo;   // an HLO module (text)
  std::vector<ir::Literal> args;
  // When >= 0: how many add trees of dots the one-device CPU executor must rewrite into GemmTree
  // kernels (ExecutorStats::folded_dot_trees).
  int64_t dot_trees = -1;
  // When >= 0: how many broadcasts of a scalar the CPU executor must read as that scalar
  // (ExecutorStats::folded_scalar_broadcasts).
  int64_t scalar_broadcasts = -1;
  // When >= 0: how many elementwise kernels the one-device CPU executor must run block by block
  // in groups (ExecutorStats::fused_elementwise).
  int64_t fused_elementwise = -1;
  // When >= 0: how many results the plan (default format) writes over the operand they update
  // (buffers with a donor; the cases have no training state to donate).
  int64_t updates_in_place = -1;
};

std::vector<KernelCase> KernelCases();

// gtest prints a case by its name.
inline void PrintTo(const KernelCase& k, std::ostream* os) { *os << k.name; }

}  // namespace detrain::runtime

#endif  // DETRAIN_TESTS_RUNTIME_KERNEL_CASES_H_
