// The CUDA source (cuda_program.h) through NVIDIA's toolchain, with no GPU: NVRTC compiles it
// to PTX for the virtual architecture kPtxArch, and nvJitLink assembles the PTX into a cubin for
// each of kCubinArchs (docs/cuda.md "The compile chain"). Options fix the arithmetic the
// contract needs — no FMA contraction (an fmaf is written where one is meant), no flush to zero,
// IEEE division and square root — and are recorded with the toolchain versions in each stage's
// transform. The device headers come from detrain itself (DeviceHeaders()); no include path is
// given, so nothing of the installed toolkit but its compilers is an input.
//
// Why compute_80 PTX (and not compute_90): PTX for a virtual architecture can be assembled for
// that architecture and later ones only, so compute_90 PTX cannot give the sm_80 cubin; the
// generated code uses no instruction newer than sm_80 has, and compute_80 PTX is also what a
// newer GPU (sm_100, sm_120) JIT-compiles when no cubin matches.
//
// Built when a CUDA toolkit is found (DETRAIN_CUDA); otherwise every function but
// ToolchainAvailable returns an Unimplemented error that says so.
//
// Thread safety: every function may be called from any thread. Determinism: for the same
// source and toolchain version, the same bytes (tests/compiler/codegen/cuda/toolchain_test.cc
// compiles each example 10 times and on 1, 2 and 8 threads).
#ifndef DETRAIN_COMPILER_CODEGEN_CUDA_TOOLCHAIN_H_
#define DETRAIN_COMPILER_CODEGEN_CUDA_TOOLCHAIN_H_

#include <array>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/status.h"

namespace detrain::codegen::cuda {

struct CudaProgram;

inline constexpr char kPtxArch[] = "compute_80";
inline constexpr std::array<const char*, 2> kCubinArchs = {"sm_80", "sm_90"};

// Whether this detrain was built with NVRTC and nvJitLink.
bool ToolchainAvailable();

// "major.minor" of the NVRTC and nvJitLink libraries in use.
struct ToolchainVersions {
  std::string nvrtc;
  std::string nvjitlink;
};
Result<ToolchainVersions> Versions();

// The options each step runs with (recorded in the stage records).
std::vector<std::string> NvrtcOptions();
std::vector<std::string> LinkOptions(std::string_view arch);

// PTX of `source` (NUL-free text). A compile error carries NVRTC's log; `log`, when given,
// receives the log of a successful compile (its warnings; empty for detrain's sources).
Result<std::string> CompilePtx(std::string_view source, std::string* log = nullptr);
// CompilePtx with every device header but `header` (a check that each one is needed).
Result<std::string> CompilePtxWithout(std::string_view source, std::string_view header,
                                      std::string* log = nullptr);
// The cubin of `ptx` for `arch` (one of kCubinArchs).
Result<std::string> LinkCubin(std::string_view ptx, std::string_view arch);

// The compiled forms of one generated program (the stages ptx and cubin-*): a GPU loads the
// cubin of its architecture, or JIT-compiles the PTX where none matches.
struct CudaImages {
  std::string ptx;
  std::vector<std::pair<std::string, std::string>> cubins;  // ("sm_90", bytes), ...
};

// The PTX of `program` and its cubin for every architecture of kCubinArchs.
Result<CudaImages> CompileImages(const CudaProgram& program);

}  // namespace detrain::codegen::cuda

#endif  // DETRAIN_COMPILER_CODEGEN_CUDA_TOOLCHAIN_H_
