// The CUDA executable's source (stage 4, docs/cuda.md): a plan's kernel specs (the very specs
// the CPU runs, compiler/plan/kernel_spec.h) written out as one CUDA C++ translation unit, and
// the launch plan that runs it — for every plan kernel, the device functions to launch (grid,
// block) or the bytes to copy, in order.
//
// The generated text is canonical: a device function's arena offsets are its arguments, so that
// the plan kernels with the same code (the S shards' copies of one op, say) share one function;
// functions are named in order of first use (dt_f0, dt_f1, helpers dt_h0, ...); integers are
// decimal and constants' bits hexadecimal; nothing in it depends on the machine, the toolkit or
// the thread count. Its first lines list the device
// headers it includes (compiler/semantics/, base/math/, attest/prng/threefry_block.h) with each
// header's SHA-256, and the launch plan, so the stage's digest commits to both.
//
// The determinism rules the generated code keeps (DESIGN.md §2): every element's value comes
// from the shared op semantics (compiler/semantics/, base/math/ crmath) evaluated in the
// canonical order — a dot or convolution output is one sequential fmaf chain over k ascending
// (tiles split only output elements; no tensor cores), a reduction is the pairwise-64 leaves and
// tree, a scatter applies updates in row-major update order — and no floating-point sum uses an
// atomic. Block and grid sizes are fixed by the code generator, never by the device.
//
// Thread safety: pure functions. Determinism: GenerateCuda's result is a function of the plan's
// bytes and of detrain's device headers.
#ifndef DETRAIN_COMPILER_CODEGEN_CUDA_CUDA_PROGRAM_H_
#define DETRAIN_COMPILER_CODEGEN_CUDA_CUDA_PROGRAM_H_

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "compiler/plan/reader.h"

namespace detrain::codegen::cuda {

// The generated code's format: bump when the text a plan gives changes.
inline constexpr uint32_t kCudaSourceVersion = 2;

// Every program's source also holds the state digest's two kernels (attest/state_digest.h,
// policy xxh3-128-chunked), for a device that digests the state where it lies (runtime/cuda):
// args[0] is a count n of items, then three words per item; each item is XXH3-128 of `bytes`
// bytes at a source offset, its 16 canonical bytes written to scratch at an output offset.
// kDigestLeaves reads the arena (a tensor's chunk), kDigestTensors the scratch (a tensor's
// prefix and leaves). One thread per item, kDigestBlock threads a block, any grid.
inline constexpr char kDigestLeaves[] = "dt_digest_leaves";
inline constexpr char kDigestTensors[] = "dt_digest_tensors";
inline constexpr uint32_t kDigestBlock = 64;

// One step of a plan kernel on a device. Offsets are bytes in the device's arena (the plan's
// buffer layout), so that every device of a mesh runs the same steps on its own arena.
struct Launch {
  enum class Kind : uint8_t {
    kKernel,    // function<<<grid, block>>>(arena, scratch, args): args[i] is args_[i]
    kCopy,      // `bytes` bytes from arena + src to arena + dst
    kConstant,  // `constant` (the plan kernel's constant bytes, its spec) to arena + dst
    kLoop,      // CudaProgram::loops[loop], run by the host (a plan's while kernel)
  };
  Kind kind = Kind::kKernel;
  std::string function;
  std::vector<int64_t> args;  // kKernel: the function's arguments (arena offsets)
  uint32_t grid[3] = {1, 1, 1};
  uint32_t block = 1;
  int64_t src = 0;
  int64_t dst = 0;
  int64_t bytes = 0;
  std::string constant;  // kConstant
  int32_t loop = -1;     // kLoop
};

// A plan's while kernel (plan.proto WhileSpec), its sub-plans' arenas placed at its region
// of the device's arena: the host runs `condition` (which starts by copying the state into the
// condition's parameter buffers), reads the pred at `predicate`, and while it is true runs
// `body` (which copies the state in, runs the body, and copies its result back to the state).
// The launches that precede the kLoop step copy the initial state to the state.
struct Loop {
  std::string name;  // the while kernel's, for errors
  std::vector<Launch> condition;
  int64_t predicate = 0;  // arena offset of the condition's pred
  std::vector<Launch> body;
};

struct CudaProgram {
  std::string source;                         // the translation unit (stage "cuda")
  std::vector<std::vector<Launch>> launches;  // per plan kernel id, in order
  std::vector<Loop> loops;                    // every while kernel's, nested ones included
  int64_t scratch_bytes = 0;                  // device scratch the launches need (0: none)
};

// The CUDA program of a plan, validated by the plan reader (compiler/plan/reader.h): the bytes
// are read there first. A spec the generator has no device code for is an Unimplemented error
// naming the kernel.
Result<CudaProgram> GenerateCuda(std::string_view plan_bytes);
Result<CudaProgram> GenerateCuda(const plan::ValidatedPlan& plan);

// The device headers the generated source includes, embedded in detrain at build time: the
// only files besides the source that a compiler of it needs (no CUDA toolkit header is one).
struct DeviceHeader {
  std::string_view path;   // as the source includes it, e.g. "compiler/semantics/scalar.h"
  std::string_view bytes;  // the file's bytes
};
std::span<const DeviceHeader> DeviceHeaders();

}  // namespace detrain::codegen::cuda

#endif  // DETRAIN_COMPILER_CODEGEN_CUDA_CUDA_PROGRAM_H_
