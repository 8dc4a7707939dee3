// See emulator.h.
#include "tests/compiler/codegen/cuda/emulator.h"

#include <dlfcn.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>

#include "attest/sha256.h"
#include "base/file_io.h"
#include "compiler/plan/schema.h"
#include "schemas/plan.pb.h"

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
                         uint32_t max_blocks) {
  switch (l.kind) {
    case cuda::Launch::Kind::kCopy:
      std::memmove(arena + l.dst, arena + l.src, static_cast<size_t>(l.bytes));
      return Status::Ok();
    case cuda::Launch::Kind::kConstant:
      if (static_cast<int64_t>(l.constant.size()) != l.bytes) return Internal("constant size");
      std::memcpy(arena + l.dst, l.constant.data(), l.constant.size());
      return Status::Ok();
    case cuda::Launch::Kind::kLoop: {
      // The host's loop, as runtime/cuda's device runs it (without its iteration budget).
      const cuda::Loop& loop = program_->loops.at(static_cast<size_t>(l.loop));
      for (;;) {
        for (const cuda::Launch& c : loop.condition)
          DETRAIN_RETURN_IF_ERROR(Run(c, arena, scratch, max_blocks));
        if (arena[loop.predicate] == 0) return Status::Ok();
        for (const cuda::Launch& b : loop.body)
          DETRAIN_RETURN_IF_ERROR(Run(b, arena, scratch, max_blocks));
      }
    }
    case cuda::Launch::Kind::kKernel:
      break;
  }
  std::vector<long long> args(l.args.begin(), l.args.end());
  return RunKernel(l.function, l.grid, l.block, arena, scratch, args.data(), max_blocks);
}

Status CudaEmulator::RunKernel(const std::string& function, const uint32_t grid_in[3],
                               uint32_t block, uint8_t* arena, uint8_t* scratch,
                               const long long* args, uint32_t max_blocks) {
  void* fn = ::dlsym(handle_, function.c_str());
  if (fn == nullptr) return Internal("no function " + function + " in the program");
  unsigned grid[3] = {grid_in[0], grid_in[1], grid_in[2]};
  if (max_blocks > 0) {
    for (unsigned& g : grid) g = g < max_blocks ? g : max_blocks;
  }
  char error[256] = {0};
  auto launch = reinterpret_cast<LaunchFn>(launch_);
  if (launch(reinterpret_cast<KernelFn>(fn), grid, block, arena, scratch, args, error,
             sizeof(error)) != 0) {
    return Internal(function + ": " + error);
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
      DETRAIN_RETURN_IF_ERROR(Run(l, arena.data(), scratch.data(), max_blocks));
    }
  }
  std::vector<ir::Literal> results;
  for (int32_t id : plan.outputs()) {
    const plan::v2::Buffer& b = plan.buffers(id);
    std::vector<int64_t> dims(b.dims().begin(), b.dims().end());
    DETRAIN_ASSIGN_OR_RETURN(ir::ElementType type, plan::FromPlanType(b.type()));
    ir::Literal lit{ir::Shape(type, dims)};
    std::memcpy(lit.mutable_bytes().data(), arena.data() + b.offset(),
                static_cast<size_t>(b.size()));
    results.push_back(std::move(lit));
  }
  return results;
}

namespace {

class EmulatedSystem : public runtime::cuda::GpuSystem {
 public:
  EmulatedSystem(std::unique_ptr<CudaEmulator> emulator, int count, uint32_t max_blocks,
                 std::shared_ptr<int64_t> between, std::shared_ptr<GpuTraffic> traffic)
      : emulator_(std::move(emulator)),
        count_(count),
        max_blocks_(max_blocks),
        between_(std::move(between)),
        traffic_(traffic != nullptr ? std::move(traffic) : std::make_shared<GpuTraffic>()) {}
  ~EmulatedSystem() override {
    for (auto& [ptr, gpu] : owner_) std::free(reinterpret_cast<void*>(ptr));
  }

  int DeviceCount() const override { return count_; }
  std::string Describe(int gpu) const override {
    return "emulated GPU " + std::to_string(gpu) + " (host)";
  }
  Result<runtime::cuda::DevicePtr> Allocate(int gpu, int64_t bytes) override {
    void* p = std::aligned_alloc(256, static_cast<size_t>((bytes + 255) / 256 * 256));
    if (p == nullptr) return Internal("out of host memory");
    std::memset(p, 0xA5, static_cast<size_t>(bytes));  // not zeros: nothing may read unwritten
    const auto ptr = reinterpret_cast<runtime::cuda::DevicePtr>(p);
    owner_[ptr] = gpu;
    return ptr;
  }
  void Free(int, runtime::cuda::DevicePtr ptr) override {
    owner_.erase(ptr);
    std::free(reinterpret_cast<void*>(ptr));
  }
  Status ToDevice(int gpu, runtime::cuda::DevicePtr dst, const void* src, int64_t n) override {
    traffic_->to_device += n;
    std::memcpy(At(dst), src, static_cast<size_t>(n));
    return Status::Ok();
  }
  Status ToHost(int gpu, void* dst, runtime::cuda::DevicePtr src, int64_t n) override {
    traffic_->to_host += n;
    std::memcpy(dst, At(src), static_cast<size_t>(n));
    return Status::Ok();
  }
  Status OnDevice(int gpu, runtime::cuda::DevicePtr dst, runtime::cuda::DevicePtr src,
                  int64_t n) override {
    std::memmove(At(dst), At(src), static_cast<size_t>(n));
    return Status::Ok();
  }
  Status Between(int from, runtime::cuda::DevicePtr src, int to, runtime::cuda::DevicePtr dst,
                 int64_t n) override {
    if (from == to) return Internal("a transfer between a GPU and itself");
    if (between_) ++*between_;
    std::memcpy(At(dst), At(src), static_cast<size_t>(n));
    return Status::Ok();
  }
  Status Launch(int, const codegen::cuda::Launch& l, runtime::cuda::DevicePtr arena,
                runtime::cuda::DevicePtr scratch, runtime::cuda::DevicePtr args) override {
    ++traffic_->launches;
    return emulator_->RunKernel(l.function, l.grid, l.block, At(arena), At(scratch),
                                reinterpret_cast<const long long*>(args), max_blocks_);
  }
  Status Synchronize(int) override { return Status::Ok(); }

 private:
  static uint8_t* At(runtime::cuda::DevicePtr p) { return reinterpret_cast<uint8_t*>(p); }

  std::unique_ptr<CudaEmulator> emulator_;
  int count_;
  uint32_t max_blocks_;
  std::shared_ptr<int64_t> between_;
  std::shared_ptr<GpuTraffic> traffic_;
  std::map<runtime::cuda::DevicePtr, int> owner_;
};

}  // namespace

runtime::cuda::GpuSystemFactory EmulatedGpus(int count, uint32_t max_blocks,
                                             std::shared_ptr<int64_t> between,
                                             std::shared_ptr<GpuTraffic> traffic) {
  return [=](const codegen::cuda::CudaProgram& program, const runtime::cuda::CudaImages&)
             -> Result<std::shared_ptr<runtime::cuda::GpuSystem>> {
    DETRAIN_ASSIGN_OR_RETURN(std::unique_ptr<CudaEmulator> emulator, CudaEmulator::Create(program));
    return std::shared_ptr<runtime::cuda::GpuSystem>(
        std::make_shared<EmulatedSystem>(std::move(emulator), count, max_blocks, between, traffic));
  };
}

std::shared_ptr<const runtime::cuda::CudaOptions> EmulatedCuda(
    int count, uint32_t max_blocks, std::shared_ptr<int64_t> between,
    std::shared_ptr<const codegen::cuda::CudaProgram> program,
    std::shared_ptr<GpuTraffic> traffic) {
  auto options = std::make_shared<runtime::cuda::CudaOptions>();
  options->program = std::move(program);
  options->images = std::make_shared<const runtime::cuda::CudaImages>();  // not loaded
  options->gpu_system = EmulatedGpus(count, max_blocks, std::move(between), std::move(traffic));
  return options;
}

}  // namespace detrain::testing
