// The CPU kernels: one class per spec kind of schemas/plan.proto, prepared once when a plan is
// loaded and then run any number of times in an arena. A plan reaches them validated
// (compiler/plan/reader.h: every spec checked against the buffers it reads and writes, its scalar
// programs decoded), so a maker only builds; what it still refuses is its own limit (a rank its
// index arrays cannot hold, a table it will not allocate).
//
// Determinism: every kernel writes each output element with the canonical order of its op
// (DESIGN.md §2) whatever the thread count or ISA path: work is split across threads only
// between output elements, in fixed blocks, and every ISA path computes the same operations on
// the same values. Thread safety: Run may be called from one thread at a time per kernel.
#ifndef DETRAIN_RUNTIME_CPU_KERNELS_H_
#define DETRAIN_RUNTIME_CPU_KERNELS_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "base/isa.h"
#include "base/status.h"
#include "base/thread_pool.h"
#include "compiler/ir/element_type.h"
#include "runtime/cpu/fused_loops.h"
#include "runtime/cpu/program.h"
#include "schemas/plan.pb.h"

namespace detrain::runtime::cpu {

// What a kernel runs with: the device's thread pool and ISA path, and the device's scratch
// space (at least the largest CpuKernel::ScratchBytes() of its plan, 64-byte aligned; shared by
// all kernels, which run one at a time), so that no kernel allocates while a step runs.
struct ExecContext {
  ThreadPool* pool = nullptr;
  Isa isa = Isa::kScalar;
  uint8_t* scratch = nullptr;
  int64_t scratch_bytes = 0;
  // Inside a `while` kernel: the iterations its loop and the loops nested in it have run
  // (kernels_while.cc); null outside any loop.
  int64_t* loop_iterations = nullptr;
};

class BlockedKernel;

class CpuKernel {
 public:
  virtual ~CpuKernel() = default;
  virtual Status Run(uint8_t* arena, const ExecContext& ctx) const = 0;
  // Bytes of ctx.scratch that Run uses.
  virtual int64_t ScratchBytes() const { return 0; }
  // Load time (FoldScalarBroadcasts, plan_folds.h): whether this kernel reads operand `input`
  // only elementwise, so that it may read it as one element; with `apply`, it reads that element
  // from `at` (outside the arena, written before this kernel runs) from now on. Elementwise
  // kernels (and a tree's epilogue) can; every other kernel says no.
  virtual bool ReadInputAsScalar(size_t /*input*/, bool /*apply*/, const uint8_t* /*at*/) {
    return false;
  }
  // Load time (FuseElementwiseRuns): this kernel as one that runs block by block, or null.
  virtual BlockedKernel* AsBlocked() { return nullptr; }
  // Load time, after every fold (fused_loops.h): asks `loops` for the generated loops of the
  // elementwise programs this kernel (or a kernel it holds) evaluates; once `loops` is built,
  // they run instead of the evaluator. The same bits either way.
  virtual void RequestLoops(FusedLoops& /*loops*/) {}
};

// An elementwise kernel run in parts (FuseElementwiseRuns, plan_folds.h): Begin once per run,
// then RunBlock for every block in [0, Blocks()), in any order, on any thread, each with
// BlockScratchBytes() of 64-byte aligned scratch. A block writes only its own elements of the
// output (block b: elements [b B, (b + 1) B) for a fixed B) and reads only those of each input
// that is not a scalar (one element).
class BlockedKernel {
 public:
  virtual ~BlockedKernel() = default;
  virtual int64_t Elements() const = 0;
  virtual int64_t Blocks() const = 0;
  virtual int64_t BlockScratchBytes() const = 0;
  virtual const std::vector<ArrayRef>& Inputs() const = 0;
  virtual const ArrayRef& Output() const = 0;
  virtual void Begin(uint8_t* arena) const = 0;
  virtual void RunBlock(uint8_t* arena, int64_t block, Isa isa, uint8_t* scratch) const = 0;
};

// Prepares one kernel of a validated plan. Alias kernels (parameters, tuples) and all-reduce
// (run by the executor across replicas) return nullptr.
Result<std::unique_ptr<CpuKernel>> PrepareKernel(const plan::CheckedKernel& kernel);

// The exact rewrites PrepareKernels made (plan_folds.h).
struct FoldCounts {
  int64_t transposes = 0;
  int64_t dot_trees = 0;
  int64_t scalar_broadcasts = 0;
  int64_t fused_elementwise = 0;  // kernels run block by block in groups
};

// Every kernel of `plan` prepared (PrepareKernel), then rewritten by the load-time folds
// (plan_folds.h): a dot writes a transpose of its result that nothing else reads, and — with
// `whole_plan` (the device runs every kernel: one device, or one replica) — an add tree of dots
// runs as one GemmTree. Neither changes a bit.
Result<std::vector<std::unique_ptr<CpuKernel>>> PrepareKernels(const plan::ValidatedPlan& plan,
                                                               bool whole_plan,
                                                               FoldCounts* folds = nullptr);

// Runs fn(block) for block in [0, blocks) on the pool (inline when there is one block).
void ForBlocks(const ExecContext& ctx, int64_t blocks, const std::function<void(int64_t)>& fn);

// Kernel makers, one per family of specs (kernels_*.cc), each given a validated kernel.
using KernelResult = Result<std::unique_ptr<CpuKernel>>;
KernelResult MakeElementwise(const plan::CheckedKernel& k);
KernelResult MakeDot(const plan::CheckedKernel& k);
KernelResult MakeConvolution(const plan::CheckedKernel& k);
KernelResult MakeReduce(const plan::CheckedKernel& k);
KernelResult MakeReduceWindow(const plan::CheckedKernel& k);
KernelResult MakeMovement(const plan::CheckedKernel& k);
KernelResult MakeIndexing(const plan::CheckedKernel& k);  // gather and scatter
KernelResult MakeWhile(const plan::CheckedKernel& k);
KernelResult MakeThreefry(const plan::CheckedKernel& k);

}  // namespace detrain::runtime::cpu

#endif  // DETRAIN_RUNTIME_CPU_KERNELS_H_
