// See emulator.h.
#include "tests/compiler/codegen/cuda/emulator.h"

#include <dlfcn.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <fstream>

#include "attest/sha256.h"
#include "base/file_io.h"
#include "compiler/codegen/common/kernel_spec.h"
#include "schemas/cpu_plan.pb.h"

namespace detrain::testing {
namespace {

namespace cuda = codegen::cuda;

using KernelFn = void (*)(unsigned char*, unsigned char*, const long long*);
using LaunchFn = int (*)(KernelFn, const unsigned*, unsigned, unsigned char*, unsigned char*,
                         const long long*, char*, size_t);

Status MakeDirs(const std::string& path) {
  for (size_t i = 1; i <= path.size(); ++i) {
    if (i == path.size() || path[i] == '/') {
      const std::string p = path.substr(0, i);
      if (::mkdir(p.c_str(), 0755) != 0 && errno != EEXIST)
        return Internal("mkdir " + p + ": " + std::strerror(errno));
    }
  }
  return Status::Ok();
}

Status WriteAll(const std::string& path, std::string_view bytes) {
  std::ofstream f(path, std::ios::binary);
  f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  return f.good() ? Status::Ok() : Internal("cannot write " + path);
}

}  // namespace

CudaEmulator::~CudaEmulator() {
  if (handle_ != nullptr) ::dlclose(handle_);
}

Result<std::unique_ptr<CudaEmulator>> CudaEmulator::Create(const cuda::CudaProgram& program) {
  std::unique_ptr<CudaEmulator> e(new CudaEmulator());
  e->copy_ = program;
  e->program_ = &e->copy_;
  // Cached by the source and the prelude, which is how it is compiled.
  const std::string prelude_path =
      std::string(DETRAIN_SOURCE_DIR) + "/tests/compiler/codegen/cuda/emulation_prelude.h";
  DETRAIN_ASSIGN_OR_RETURN(std::string prelude, ReadFile(prelude_path));
  const std::string digest = attest::Sha256Hex(prelude + program.source);
  const std::string dir = std::string(DETRAIN_BINARY_DIR) + "/cuda-emulation/" + digest;
  const std::string so = dir + "/program.so";
  if (::access(so.c_str(), R_OK) != 0) {
    DETRAIN_RETURN_IF_ERROR(MakeDirs(dir + "/include"));
    for (const cuda::DeviceHeader& h : cuda::DeviceHeaders()) {
      const std::string path = dir + "/include/" + std::string(h.path);
      DETRAIN_RETURN_IF_ERROR(MakeDirs(path.substr(0, path.rfind('/'))));
      DETRAIN_RETURN_IF_ERROR(WriteAll(path, h.bytes));
    }
    DETRAIN_RETURN_IF_ERROR(WriteAll(dir + "/program.cu", program.source));
    const std::string tmp = so + ".tmp." + std::to_string(::getpid());
    const std::string command =
        std::string(DETRAIN_HOST_CXX) +
        " -std=c++20 -O1 -fPIC -shared -w -ffp-contract=off -fno-fast-math" +
#if defined(__x86_64__)
        " -mfpmath=sse -msse2" +
#endif
        " -include " + prelude_path + " -I" + dir + "/include -x c++ " + dir + "/program.cu -o " +
        tmp + " > " + dir + "/compile.log 2>&1";
    if (std::system(command.c_str()) != 0) {
      Result<std::string> log = ReadFile(dir + "/compile.log");
      return Internal("compiling the generated source for the emulator failed:\n" +
                      (log.ok() ? log->substr(0, 4000) : std::string("(no log)")));
    }
    if (::rename(tmp.c_str(), so.c_str()) != 0) return Internal("rename " + tmp);
  }
  e->handle_ = ::dlopen(so.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (e->handle_ == nullptr) return Internal(std::string("dlopen: ") + ::dlerror());
  e->launch_ = ::dlsym(e->handle_, "dt_emu_launch");
  if (e->launch_ == nullptr) return Internal("dt_emu_launch not found");
  return e;
}

Status CudaEmulator::Run(const cuda::Launch& l, uint8_t* arena, uint8_t* scratch,
                         std::string_view constant, uint32_t max_blocks) {
  switch (l.kind) {
    case cuda::Launch::Kind::kCopy:
      std::memmove(arena + l.dst, arena + l.src, static_cast<size_t>(l.bytes));
      return Status::Ok();
    case cuda::Launch::Kind::kConstant:
      if (static_cast<int64_t>(constant.size()) != l.bytes) return Internal("constant size");
      std::memcpy(arena + l.dst, constant.data(), constant.size());
      return Status::Ok();
    case cuda::Launch::Kind::kKernel:
      break;
  }
  void* fn = ::dlsym(handle_, l.function.c_str());
  if (fn == nullptr) return Internal("no function " + l.function + " in the program");
  unsigned grid[3] = {l.grid[0], l.grid[1], l.grid[2]};
  if (max_blocks > 0) {
    for (unsigned& g : grid) g = g < max_blocks ? g : max_blocks;
  }
  char error[256] = {0};
  auto launch = reinterpret_cast<LaunchFn>(launch_);
  std::vector<long long> args(l.args.begin(), l.args.end());
  if (launch(reinterpret_cast<KernelFn>(fn), grid, l.block, arena, scratch, args.data(), error,
             sizeof(error)) != 0) {
    return Internal(l.function + ": " + error);
  }
  return Status::Ok();
}

Result<std::vector<ir::Literal>> CudaEmulator::RunPlan(std::string_view plan_bytes,
                                                       const std::vector<ir::Literal>& args,
                                                       uint32_t max_blocks) {
  plan::v2::Plan plan;
  if (!plan.ParseFromArray(plan_bytes.data(), static_cast<int>(plan_bytes.size())))
    return InvalidArgument("not a plan");
  std::vector<uint8_t> arena(static_cast<size_t>(plan.arena_bytes()) + 1, 0xA5);
  std::vector<uint8_t> scratch(static_cast<size_t>(program_->scratch_bytes) + 1, 0x5A);
  if (args.size() != static_cast<size_t>(plan.parameters_size()))
    return InvalidArgument("argument count");
  for (int i = 0; i < plan.parameters_size(); ++i) {
    const plan::v2::Buffer& b = plan.buffers(plan.parameters(i).buffers(0));
    const ir::Literal& a = args[static_cast<size_t>(i)];
    if (static_cast<int64_t>(a.bytes().size()) != b.size()) return InvalidArgument("argument size");
    std::memcpy(arena.data() + b.offset(), a.bytes().data(), a.bytes().size());
  }
  for (int k = 0; k < plan.kernels_size(); ++k) {
    for (const cuda::Launch& l : program_->launches[static_cast<size_t>(k)]) {
      DETRAIN_RETURN_IF_ERROR(
          Run(l, arena.data(), scratch.data(), plan.kernels(k).constant(), max_blocks));
    }
  }
  std::vector<ir::Literal> results;
  for (int32_t id : plan.outputs()) {
    const plan::v2::Buffer& b = plan.buffers(id);
    std::vector<int64_t> dims(b.dims().begin(), b.dims().end());
    DETRAIN_ASSIGN_OR_RETURN(ir::ElementType type, codegen::FromPlanType(b.type()));
    ir::Literal lit{ir::Shape(type, dims)};
    std::memcpy(lit.mutable_bytes().data(), arena.data() + b.offset(),
                static_cast<size_t>(b.size()));
    results.push_back(std::move(lit));
  }
  return results;
}

}  // namespace detrain::testing
