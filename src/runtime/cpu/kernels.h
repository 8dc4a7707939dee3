// The CPU kernels: one class per spec kind of schemas/cpu_plan.proto, prepared once when a plan
// is loaded (specs checked against the buffers they read and write, scalar programs decoded)
// and then run any number of times in an arena.
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
#include "runtime/cpu/program.h"
#include "schemas/cpu_plan.pb.h"

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

// A checked array buffer of the plan.
struct ArrayRef {
  int32_t id = 0;
  ir::ElementType type = ir::ElementType::kF32;
  std::vector<int64_t> dims;
  int64_t offset = 0;
  int64_t elements = 0;
  int64_t bytes = 0;
};

class CpuKernel {
 public:
  virtual ~CpuKernel() = default;
  virtual Status Run(uint8_t* arena, const ExecContext& ctx) const = 0;
  // Bytes of ctx.scratch that Run uses.
  virtual int64_t ScratchBytes() const { return 0; }
};

// Checks `kernel` against `buffers` and prepares it. Alias kernels (parameters, tuples) and
// all-reduce (run by the executor across replicas) return nullptr. A `while` kernel needs its
// plan: PrepareKernels prepares it (MakeWhile).
Result<std::unique_ptr<CpuKernel>> PrepareKernel(const plan::v2::Kernel& kernel,
                                                 const std::vector<ArrayRef>& buffers);

// Every kernel of `plan` prepared (PrepareKernel), with one exact rewrite: a 2-D transpose of a
// dot's result that nothing else reads runs inside the dot, which writes the transposed layout
// directly (FoldDotTranspose; the transpose's kernel becomes nullptr). Each element is the
// same chain with the defined NaN rule (gemm.h), so no value changes; the dot's own buffer is
// never written, which nothing can observe.
//
// With `whole_plan` (the device runs every kernel: one device, or one replica), a second: an
// elementwise kernel that is an add tree over f32 dot results nothing else reads (the shard tree
// of per-shard weight gradients) runs as one GemmTree (gemm.h) over the dots' operands, tile by
// tile, and the dots' kernels become nullptr (FoldDotTree). Same bits: each leaf element is the
// dot's chain and each sum the tree's addition.
struct FoldCounts {
  int64_t transposes = 0;
  int64_t dot_trees = 0;
};
// `depth`: how many loops hold `plan` (0 for a whole plan; a loop's condition and body are
// plans of their own, kernels_while.cc).
Result<std::vector<std::unique_ptr<CpuKernel>>> PrepareKernels(const plan::v2::Plan& plan,
                                                               const std::vector<ArrayRef>& buffers,
                                                               bool whole_plan,
                                                               FoldCounts* folds = nullptr,
                                                               int depth = 0);

// Whether kernel `transpose` of `plan` was folded into its dot (kernels_linalg.cc).
bool FoldDotTranspose(const plan::v2::Plan& plan, const std::vector<ArrayRef>& buffers,
                      const std::vector<std::unique_ptr<CpuKernel>>& kernels, int32_t transpose);

// Whether elementwise kernel `tree` of `plan` was rewritten into a GemmTree over the dots it adds
// (kernels_linalg.cc). Their operands are then read at `tree`'s place in the schedule: only when
// nothing that still runs writes them in between, and only a contiguous slice of rows is read in
// place of its copy.
bool FoldDotTree(const plan::v2::Plan& plan, const std::vector<ArrayRef>& buffers,
                 std::vector<std::unique_ptr<CpuKernel>>& kernels, int32_t tree);

// Runs fn(block) for block in [0, blocks) on the pool (inline when there is one block).
void ForBlocks(const ExecContext& ctx, int64_t blocks, const std::function<void(int64_t)>& fn);

// Kernel makers, one per file.
Result<std::unique_ptr<CpuKernel>> MakeElementwise(const plan::v2::Kernel& k,
                                                   std::vector<ArrayRef> in, ArrayRef out);
Result<std::unique_ptr<CpuKernel>> MakeDot(const plan::v2::Kernel& k, ArrayRef lhs, ArrayRef rhs,
                                           ArrayRef out);
Result<std::unique_ptr<CpuKernel>> MakeConvolution(const plan::v2::Kernel& k, ArrayRef in,
                                                   ArrayRef kernel, ArrayRef out);
Result<std::unique_ptr<CpuKernel>> MakeReduce(const plan::v2::Kernel& k, ArrayRef in, ArrayRef init,
                                              ArrayRef out);
Result<std::unique_ptr<CpuKernel>> MakeReduceWindow(const plan::v2::Kernel& k, ArrayRef in,
                                                    ArrayRef init, ArrayRef out);
Result<std::unique_ptr<CpuKernel>> MakeMovement(const plan::v2::Kernel& k, std::vector<ArrayRef> in,
                                                ArrayRef out);
Result<std::unique_ptr<CpuKernel>> MakeIndexing(const plan::v2::Kernel& k, std::vector<ArrayRef> in,
                                                ArrayRef out);
Result<std::unique_ptr<CpuKernel>> MakeWhile(const plan::v2::Kernel& k, const plan::v2::Plan& plan,
                                             const std::vector<ArrayRef>& buffers, int depth);
Result<std::unique_ptr<CpuKernel>> MakeThreefry(const plan::v2::Kernel& k, std::vector<ArrayRef> in,
                                                std::vector<ArrayRef> out);

}  // namespace detrain::runtime::cpu

#endif  // DETRAIN_RUNTIME_CPU_KERNELS_H_
