// See toolchain.h. Compiled with the CUDA toolkit's nvrtc.h and nvJitLink.h when DETRAIN_HAVE_CUDA
// is defined; otherwise only the stubs at the end.
#include "compiler/codegen/cuda/toolchain.h"

#include "compiler/codegen/cuda/cuda_program.h"

#ifdef DETRAIN_HAVE_CUDA
#include <nvJitLink.h>
#include <nvrtc.h>
#endif

namespace detrain::codegen::cuda {

std::vector<std::string> NvrtcOptions() {
  return {"-std=c++20",     "-arch=" + std::string(kPtxArch),
          "--fmad=false",   "-ftz=false",
          "-prec-div=true", "-prec-sqrt=true"};
}

std::vector<std::string> LinkOptions(std::string_view arch) {
  return {"-arch=" + std::string(arch),
          "-O3",
          "-ftz=false",
          "-prec-div=true",
          "-prec-sqrt=true",
          "-fma=false",
          "-Xptxas=--fmad=false"};
}

#ifdef DETRAIN_HAVE_CUDA

namespace {

std::vector<const char*> Pointers(const std::vector<std::string>& v) {
  std::vector<const char*> p;
  for (const std::string& s : v) p.push_back(s.c_str());
  return p;
}

// Drops the trailing NULs NVRTC and nvJitLink count in their sizes.
std::string Trimmed(std::string s) {
  while (!s.empty() && (s.back() == '\0' || s.back() == '\n')) s.pop_back();
  return s;
}

}  // namespace

bool ToolchainAvailable() { return true; }

Result<ToolchainVersions> Versions() {
  int major = 0, minor = 0;
  if (nvrtcVersion(&major, &minor) != NVRTC_SUCCESS) return Internal("nvrtcVersion failed");
  ToolchainVersions v;
  v.nvrtc = std::to_string(major) + "." + std::to_string(minor);
  unsigned jmajor = 0, jminor = 0;
  if (nvJitLinkVersion(&jmajor, &jminor) != NVJITLINK_SUCCESS)
    return Internal("nvJitLinkVersion failed");
  v.nvjitlink = std::to_string(jmajor) + "." + std::to_string(jminor);
  return v;
}

Result<std::string> CompilePtx(std::string_view source, std::string* log) {
  return CompilePtxWithout(source, "", log);
}

Result<std::string> CompilePtxWithout(std::string_view source, std::string_view header,
                                      std::string* log_out) {
  const std::string text(source);
  std::vector<std::string> names, bytes;
  for (const DeviceHeader& h : DeviceHeaders()) {
    if (h.path == header) continue;
    names.emplace_back(h.path);
    bytes.emplace_back(h.bytes);
  }
  nvrtcProgram program = nullptr;
  nvrtcResult r =
      nvrtcCreateProgram(&program, text.c_str(), "detrain.cu", static_cast<int>(names.size()),
                         Pointers(bytes).data(), Pointers(names).data());
  if (r != NVRTC_SUCCESS) {
    return Internal(std::string("nvrtcCreateProgram: ") + nvrtcGetErrorString(r));
  }
  const std::vector<std::string> options = NvrtcOptions();
  r = nvrtcCompileProgram(program, static_cast<int>(options.size()), Pointers(options).data());
  size_t log_size = 0;
  nvrtcGetProgramLogSize(program, &log_size);
  std::string log(log_size, '\0');
  if (log_size > 0) nvrtcGetProgramLog(program, log.data());
  if (r != NVRTC_SUCCESS) {
    nvrtcDestroyProgram(&program);
    return Internal(std::string("NVRTC could not compile the generated CUDA source (") +
                    nvrtcGetErrorString(r) + "):\n" + Trimmed(log).substr(0, 8000));
  }
  size_t size = 0;
  nvrtcGetPTXSize(program, &size);
  std::string ptx(size, '\0');
  r = nvrtcGetPTX(program, ptx.data());
  nvrtcDestroyProgram(&program);
  if (r != NVRTC_SUCCESS) return Internal(std::string("nvrtcGetPTX: ") + nvrtcGetErrorString(r));
  while (!ptx.empty() && ptx.back() == '\0') ptx.pop_back();
  if (log_out != nullptr) *log_out = Trimmed(log);
  return ptx;
}

Result<std::string> LinkCubin(std::string_view ptx, std::string_view arch) {
  const std::vector<std::string> options = LinkOptions(arch);
  nvJitLinkHandle handle = nullptr;
  nvJitLinkResult r =
      nvJitLinkCreate(&handle, static_cast<uint32_t>(options.size()), Pointers(options).data());
  if (r != NVJITLINK_SUCCESS) {
    return Internal("nvJitLinkCreate for " + std::string(arch) + " failed (" +
                    std::to_string(static_cast<int>(r)) + ")");
  }
  auto log = [&handle]() {
    size_t size = 0;
    nvJitLinkGetErrorLogSize(handle, &size);
    std::string text(size, '\0');
    if (size > 0) nvJitLinkGetErrorLog(handle, text.data());
    return Trimmed(text).substr(0, 8000);
  };
  const std::string input(ptx);
  r = nvJitLinkAddData(handle, NVJITLINK_INPUT_PTX, input.data(), input.size(), "detrain.ptx");
  if (r == NVJITLINK_SUCCESS) r = nvJitLinkComplete(handle);
  if (r != NVJITLINK_SUCCESS) {
    const std::string message = log();
    nvJitLinkDestroy(&handle);
    return Internal("nvJitLink could not assemble the PTX for " + std::string(arch) + " (" +
                    std::to_string(static_cast<int>(r)) + "):\n" + message);
  }
  size_t size = 0;
  nvJitLinkGetLinkedCubinSize(handle, &size);
  std::string cubin(size, '\0');
  r = nvJitLinkGetLinkedCubin(handle, cubin.data());
  nvJitLinkDestroy(&handle);
  if (r != NVJITLINK_SUCCESS) return Internal("nvJitLinkGetLinkedCubin failed");
  return cubin;
}

#else  // !DETRAIN_HAVE_CUDA

namespace {
Status NoToolkit() {
  return Unimplemented(
      "this detrain was built without the CUDA toolkit (NVRTC, nvJitLink): it cannot compile "
      "CUDA stages; rebuild where /usr/local/cuda is installed (docs/cuda.md)");
}
}  // namespace

bool ToolchainAvailable() { return false; }
Result<ToolchainVersions> Versions() { return NoToolkit(); }
Result<std::string> CompilePtx(std::string_view, std::string*) { return NoToolkit(); }
Result<std::string> CompilePtxWithout(std::string_view, std::string_view, std::string*) {
  return NoToolkit();
}
Result<std::string> LinkCubin(std::string_view, std::string_view) { return NoToolkit(); }

#endif

Result<CudaImages> CompileImages(const CudaProgram& program) {
  CudaImages images;
  DETRAIN_ASSIGN_OR_RETURN(images.ptx, CompilePtx(program.source));
  for (const char* arch : kCubinArchs) {
    DETRAIN_ASSIGN_OR_RETURN(std::string cubin, LinkCubin(images.ptx, arch));
    images.cubins.emplace_back(arch, std::move(cubin));
  }
  return images;
}

}  // namespace detrain::codegen::cuda
