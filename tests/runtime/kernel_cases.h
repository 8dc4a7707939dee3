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
#include <sstream>
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
  // When >= 0: how many buffers the one-device CPU executor places inside another as views
  // (ExecutorStats::views, runtime/cpu/plan_views.h).
  int64_t views = -1;
};

std::vector<KernelCase> KernelCases();

// f32 values of both signs over 16 binades: sums of them round differently in any other order.
ir::Literal Varied(std::vector<int64_t> dims);

// Collects cases; Trace names the next one within its group (as SCOPED_TRACE would).
class Cases {
 public:
  void Group(std::string name) {
    group_ = std::move(name);
    trace_.clear();
  }
  template <typename T>
  void Trace(const T& what) {
    std::ostringstream s;
    s << what;
    trace_ = s.str();
  }
  void Add(const std::string& hlo, std::vector<ir::Literal> args, int64_t dot_trees = -1,
           int64_t scalar_broadcasts = -1, int64_t fused_elementwise = -1,
           int64_t updates_in_place = -1, int64_t views = -1) {
    KernelCase k;
    k.name = group_;
    if (!trace_.empty()) k.name += " " + trace_;
    for (const KernelCase& e : cases_) {
      if (e.name == k.name) k.name += " (" + std::to_string(cases_.size()) + ")";
    }
    k.hlo = hlo;
    k.args = std::move(args);
    k.dot_trees = dot_trees;
    k.scalar_broadcasts = scalar_broadcasts;
    k.fused_elementwise = fused_elementwise;
    k.updates_in_place = updates_in_place;
    k.views = views;
    cases_.push_back(std::move(k));
    trace_.clear();
  }
  std::vector<KernelCase> Take() { return std::move(cases_); }

 private:
  std::string group_, trace_;
  std::vector<KernelCase> cases_;
};

// gtest prints a case by its name.
inline void PrintTo(const KernelCase& k, std::ostream* os) { *os << k.name; }

}  // namespace detrain::runtime

#endif  // DETRAIN_TESTS_RUNTIME_KERNEL_CASES_H_
