// A host emulator of generated CUDA programs (codegen/cuda/cuda_program.h), so that every kernel
// the code generator writes runs — and is compared bit for bit with the interpreter and the CPU
// executor — on machines without a GPU. The translation unit is compiled by the host C++
// compiler with emulation_prelude.h force-included (no FMA contraction, no fast math) against
// the embedded device headers (written to a temporary include directory: the bytes the CUDA
// compile sees), loaded with dlopen, and each launch runs every block of its grid with its
// threads as fibers.
//
// What it checks: the generated code's indexing, tiling, barriers and orders — the logic that
// decides each bit. What it cannot: the CUDA compiler's and the hardware's conformance to IEEE
// (ptxas, fma), which tools/gpu-check.sh checks on a GPU.
//
// Test-only. Thread safety: one call at a time per emulator.
#ifndef DETRAIN_TESTS_COMPILER_CODEGEN_CUDA_EMULATOR_H_
#define DETRAIN_TESTS_COMPILER_CODEGEN_CUDA_EMULATOR_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "base/status.h"
#include "compiler/codegen/cuda/cuda_program.h"
#include "compiler/ir/literal.h"
#include "runtime/cuda/cuda_backend.h"
#include "runtime/cuda/gpu.h"

namespace detrain::testing {

class CudaEmulator {
 public:
  // Compiles `program`'s source (cached by its SHA-256 under the build directory).
  static Result<std::unique_ptr<CudaEmulator>> Create(const codegen::cuda::CudaProgram& program);
  ~CudaEmulator();

  // Runs one launch on `arena` (and `scratch`, program.scratch_bytes bytes); a kLoop launch runs
  // its loop. `max_blocks` > 0 caps each grid dimension (every generated kernel loops over its
  // blocks, so any grid computes the same values).
  Status Run(const codegen::cuda::Launch& launch, uint8_t* arena, uint8_t* scratch,
             uint32_t max_blocks = 0);

  // Runs function `function` of the program on the grid (capped by max_blocks) with `args`.
  Status RunKernel(const std::string& function, const uint32_t grid[3], uint32_t block,
                   uint8_t* arena, uint8_t* scratch, const long long* args,
                   uint32_t max_blocks = 0);

  // Runs a whole plan (`plan_bytes`, the plan `program` was generated from) on one emulated
  // device: arguments copied in, every kernel's launches in schedule order, results copied out.
  Result<std::vector<ir::Literal>> RunPlan(std::string_view plan_bytes,
                                           const std::vector<ir::Literal>& args,
                                           uint32_t max_blocks = 0);

 private:
  CudaEmulator() = default;
  const codegen::cuda::CudaProgram* program_ = nullptr;
  codegen::cuda::CudaProgram copy_;
  void* handle_ = nullptr;
  void* launch_ = nullptr;
};

// What the host asked of the emulated GPUs: bytes copied to them and back, and launches.
struct GpuTraffic {
  int64_t to_device = 0, to_host = 0, launches = 0;
};

// A GpuSystem (runtime/cuda/gpu.h) of `count` emulated GPUs in host memory, running the program
// on the emulator: the executor, the CUDA device and the trainer run unchanged on it. Transfers
// between two emulated GPUs are counted (`between`, when given), and the host's traffic with
// them (`traffic`, when given).
runtime::cuda::GpuSystemFactory EmulatedGpus(int count, uint32_t max_blocks = 0,
                                             std::shared_ptr<int64_t> between = nullptr,
                                             std::shared_ptr<GpuTraffic> traffic = nullptr);

// The CUDA backend's options (ExecutorOptions::backend_options) for EmulatedGpus: no images
// (the emulator runs the generated source) and the program generated from the plan, unless
// `program` is given.
std::shared_ptr<const runtime::cuda::CudaOptions> EmulatedCuda(
    int count, uint32_t max_blocks = 0, std::shared_ptr<int64_t> between = nullptr,
    std::shared_ptr<const codegen::cuda::CudaProgram> program = nullptr,
    std::shared_ptr<GpuTraffic> traffic = nullptr);

}  // namespace detrain::testing

#endif  // DETRAIN_TESTS_COMPILER_CODEGEN_CUDA_EMULATOR_H_
