// The driver's GpuSystem (gpu.h): every visible NVIDIA GPU through the CUDA driver API, loaded
// with dlopen("libcuda.so.1") when a run asks for a GPU — so that detrain starts, and its CPU
// backend runs, on machines with no driver — and NCCL (libnccl.so.2) for transfers between GPUs,
// used only as point-to-point send/receive (never a collective: NCCL's reductions pick their
// algorithm per call; the shard tree's additions run in the program's kernels).
//
// Each GPU gets its primary context, one stream and the program's module: the cubin of its
// architecture (sm_XY runs on compute capability X.Y' for Y' >= Y), or else the PTX,
// JIT-compiled by the driver (recorded in Describe). Functions are looked up once, on first use.
#include <dlfcn.h>

#include <map>
#include <mutex>

#include "compiler/codegen/cuda/toolchain.h"
#include "runtime/cuda/gpu.h"

#ifdef DETRAIN_HAVE_CUDA
#include <cuda.h>
#include <nccl.h>
#endif

namespace detrain::runtime::cuda {

#ifdef DETRAIN_HAVE_CUDA

namespace {

// The driver API entry points detrain calls, resolved from libcuda.so.1.
struct Driver {
// clang-format off
#define DETRAIN_CU_FUNCTIONS(X)                                                                  \
  X(cuInit) X(cuDriverGetVersion) X(cuDeviceGetCount) X(cuDeviceGet) X(cuDeviceGetName)          \
  X(cuDeviceGetAttribute) X(cuDevicePrimaryCtxRetain) X(cuDevicePrimaryCtxRelease_v2)            \
  X(cuCtxSetCurrent) X(cuModuleLoadDataEx) X(cuModuleUnload) X(cuModuleGetFunction)              \
  X(cuMemAlloc_v2) X(cuMemFree_v2) X(cuMemcpyHtoDAsync_v2) X(cuMemcpyDtoHAsync_v2)               \
  X(cuMemcpyDtoDAsync_v2) X(cuMemcpyPeerAsync) X(cuStreamCreate) X(cuStreamDestroy_v2)           \
  X(cuStreamSynchronize) X(cuLaunchKernel) X(cuGetErrorString)
// clang-format on
#define DETRAIN_X(f) decltype(&::f) f = nullptr;
  DETRAIN_CU_FUNCTIONS(DETRAIN_X)
#undef DETRAIN_X
};

struct Nccl {
// clang-format off
#define DETRAIN_NCCL_FUNCTIONS(X)                                                             \
  X(ncclGetVersion) X(ncclCommInitAll) X(ncclCommDestroy) X(ncclGroupStart) X(ncclGroupEnd) \
  X(ncclSend) X(ncclRecv) X(ncclGetErrorString)
// clang-format on
#define DETRAIN_X(f) decltype(&::f) f = nullptr;
  DETRAIN_NCCL_FUNCTIONS(DETRAIN_X)
#undef DETRAIN_X
};

// The driver library, loaded once per process (never unloaded).
Result<const Driver*> LoadDriver() {
  static std::once_flag once;
  static Driver driver;
  static std::string error;
  std::call_once(once, [] {
    void* lib = ::dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (lib == nullptr) {
      error =
          std::string("no NVIDIA driver: libcuda.so.1 could not be loaded (") + ::dlerror() + ")";
      return;
    }
#define DETRAIN_X(f)                                                 \
  driver.f = reinterpret_cast<decltype(driver.f)>(::dlsym(lib, #f)); \
  if (driver.f == nullptr && error.empty()) error = "libcuda.so.1 has no " #f;
    DETRAIN_CU_FUNCTIONS(DETRAIN_X)
#undef DETRAIN_X
    if (error.empty()) {
      CUresult r = driver.cuInit(0);
      if (r != CUDA_SUCCESS) {
        const char* s = nullptr;
        driver.cuGetErrorString(r, &s);
        error = std::string("the NVIDIA driver did not start (cuInit: ") + (s ? s : "?") + ")";
      }
    }
  });
  if (!error.empty()) return Unavailable(error);
  return &driver;
}

Result<const Nccl*> LoadNccl() {
  static std::once_flag once;
  static Nccl nccl;
  static std::string error;
  std::call_once(once, [] {
    void* lib = ::dlopen("libnccl.so.2", RTLD_NOW | RTLD_LOCAL);
    if (lib == nullptr) {
      error = std::string("libnccl.so.2 could not be loaded (") + ::dlerror() + ")";
      return;
    }
#define DETRAIN_X(f)                                             \
  nccl.f = reinterpret_cast<decltype(nccl.f)>(::dlsym(lib, #f)); \
  if (nccl.f == nullptr && error.empty()) error = "libnccl.so.2 has no " #f;
    DETRAIN_NCCL_FUNCTIONS(DETRAIN_X)
#undef DETRAIN_X
  });
  if (!error.empty()) return Unavailable(error);
  return &nccl;
}

class DriverSystem : public GpuSystem {
 public:
  ~DriverSystem() override {
    if (nccl_ != nullptr) {
      for (ncclComm_t c : comms_) nccl_->ncclCommDestroy(c);
    }
    for (Gpu& g : gpus_) {
      d_->cuCtxSetCurrent(g.context);
      if (g.stream != nullptr) d_->cuStreamDestroy_v2(g.stream);
      if (g.module != nullptr) d_->cuModuleUnload(g.module);
      d_->cuDevicePrimaryCtxRelease_v2(g.device);
    }
  }

  Status Open(const CudaImages& images) {
    DETRAIN_ASSIGN_OR_RETURN(d_, LoadDriver());
    int count = 0, version = 0;
    DETRAIN_RETURN_IF_ERROR(Check(d_->cuDeviceGetCount(&count), "cuDeviceGetCount"));
    d_->cuDriverGetVersion(&version);
    if (count == 0) return Unavailable("the NVIDIA driver sees no GPU");
    for (int i = 0; i < count; ++i) {
      Gpu g;
      DETRAIN_RETURN_IF_ERROR(Check(d_->cuDeviceGet(&g.device, i), "cuDeviceGet"));
      char name[256] = {0};
      d_->cuDeviceGetName(name, sizeof(name) - 1, g.device);
      int major = 0, minor = 0;
      d_->cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, g.device);
      d_->cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, g.device);
      DETRAIN_RETURN_IF_ERROR(
          Check(d_->cuDevicePrimaryCtxRetain(&g.context, g.device), "cuDevicePrimaryCtxRetain"));
      DETRAIN_RETURN_IF_ERROR(Check(d_->cuCtxSetCurrent(g.context), "cuCtxSetCurrent"));
      DETRAIN_RETURN_IF_ERROR(
          Check(d_->cuStreamCreate(&g.stream, CU_STREAM_NON_BLOCKING), "cuStreamCreate"));
      // The cubin of this architecture, else the PTX through the driver's JIT.
      const std::string* image = nullptr;
      int best_minor = -1;
      for (const auto& [arch, bytes] : images.cubins) {
        int a_major = 0, a_minor = 0;
        if (std::sscanf(arch.c_str(), "sm_%1d%1d", &a_major, &a_minor) != 2) continue;
        if (a_major == major && a_minor <= minor && a_minor > best_minor) {
          image = &bytes;
          best_minor = a_minor;
          g.image = "cubin " + arch;
        }
      }
      if (image == nullptr) {
        image = &images.ptx;
        g.image = std::string("PTX ") + codegen::cuda::kPtxArch + " (JIT-compiled by the driver)";
      }
      std::string text = *image;
      if (image == &images.ptx) text.push_back('\0');  // the driver reads PTX as a C string
      DETRAIN_RETURN_IF_ERROR(
          Check(d_->cuModuleLoadDataEx(&g.module, text.data(), 0, nullptr, nullptr),
                "loading the " + g.image));
      g.description = std::string(name) + ", compute capability " + std::to_string(major) + "." +
                      std::to_string(minor) + ", driver " + std::to_string(version / 1000) + "." +
                      std::to_string(version % 1000 / 10) + ", " + g.image;
      gpus_.push_back(std::move(g));
    }
    return Status::Ok();
  }

  int DeviceCount() const override { return static_cast<int>(gpus_.size()); }
  std::string Describe(int gpu) const override {
    return gpus_[static_cast<size_t>(gpu)].description;
  }

  Result<DevicePtr> Allocate(int gpu, int64_t bytes) override {
    DETRAIN_RETURN_IF_ERROR(Use(gpu));
    CUdeviceptr p = 0;
    DETRAIN_RETURN_IF_ERROR(
        Check(d_->cuMemAlloc_v2(&p, static_cast<size_t>(bytes)),
              "allocating " + std::to_string(bytes) + " bytes on GPU " + std::to_string(gpu)));
    return static_cast<DevicePtr>(p);
  }

  void Free(int gpu, DevicePtr ptr) override {
    if (Use(gpu).ok()) d_->cuMemFree_v2(static_cast<CUdeviceptr>(ptr));
  }

  Status ToDevice(int gpu, DevicePtr dst, const void* src, int64_t bytes) override {
    DETRAIN_RETURN_IF_ERROR(Use(gpu));
    // Synchronous for the caller's memory: the host buffer may change right after.
    DETRAIN_RETURN_IF_ERROR(Check(d_->cuMemcpyHtoDAsync_v2(static_cast<CUdeviceptr>(dst), src,
                                                           static_cast<size_t>(bytes), Stream(gpu)),
                                  "copy to GPU"));
    return Check(d_->cuStreamSynchronize(Stream(gpu)), "cuStreamSynchronize");
  }

  Status ToHost(int gpu, void* dst, DevicePtr src, int64_t bytes) override {
    DETRAIN_RETURN_IF_ERROR(Use(gpu));
    DETRAIN_RETURN_IF_ERROR(Check(d_->cuMemcpyDtoHAsync_v2(dst, static_cast<CUdeviceptr>(src),
                                                           static_cast<size_t>(bytes), Stream(gpu)),
                                  "copy from GPU"));
    return Check(d_->cuStreamSynchronize(Stream(gpu)), "cuStreamSynchronize");
  }

  Status OnDevice(int gpu, DevicePtr dst, DevicePtr src, int64_t bytes) override {
    DETRAIN_RETURN_IF_ERROR(Use(gpu));
    return Check(
        d_->cuMemcpyDtoDAsync_v2(static_cast<CUdeviceptr>(dst), static_cast<CUdeviceptr>(src),
                                 static_cast<size_t>(bytes), Stream(gpu)),
        "copy on GPU");
  }

  Status Between(int from, DevicePtr src, int to, DevicePtr dst, int64_t bytes) override {
    DETRAIN_RETURN_IF_ERROR(OpenNccl());
    if (nccl_ == nullptr) {  // no NCCL: a peer copy, ordered on the receiver after the sender
      DETRAIN_RETURN_IF_ERROR(Synchronize(from));
      DETRAIN_RETURN_IF_ERROR(Use(to));
      return Check(d_->cuMemcpyPeerAsync(static_cast<CUdeviceptr>(dst), Context(to),
                                         static_cast<CUdeviceptr>(src), Context(from),
                                         static_cast<size_t>(bytes), Stream(to)),
                   "peer copy");
    }
    DETRAIN_RETURN_IF_ERROR(NcclCheck(nccl_->ncclGroupStart(), "ncclGroupStart"));
    ncclResult_t send = nccl_->ncclSend(
        reinterpret_cast<const void*>(src), static_cast<size_t>(bytes), ncclUint8, to,
        comms_[static_cast<size_t>(from)], reinterpret_cast<cudaStream_t>(Stream(from)));
    ncclResult_t recv = nccl_->ncclRecv(reinterpret_cast<void*>(dst), static_cast<size_t>(bytes),
                                        ncclUint8, from, comms_[static_cast<size_t>(to)],
                                        reinterpret_cast<cudaStream_t>(Stream(to)));
    DETRAIN_RETURN_IF_ERROR(NcclCheck(nccl_->ncclGroupEnd(), "ncclGroupEnd"));
    DETRAIN_RETURN_IF_ERROR(NcclCheck(send, "ncclSend"));
    return NcclCheck(recv, "ncclRecv");
  }

  Status Launch(int gpu, const codegen::cuda::Launch& l, DevicePtr arena, DevicePtr scratch,
                DevicePtr args) override {
    DETRAIN_RETURN_IF_ERROR(Use(gpu));
    Gpu& g = gpus_[static_cast<size_t>(gpu)];
    auto found = g.functions.find(l.function);
    if (found == g.functions.end()) {
      CUfunction f = nullptr;
      DETRAIN_RETURN_IF_ERROR(Check(d_->cuModuleGetFunction(&f, g.module, l.function.c_str()),
                                    "function " + l.function));
      found = g.functions.emplace(l.function, f).first;
    }
    CUdeviceptr a = static_cast<CUdeviceptr>(arena), s = static_cast<CUdeviceptr>(scratch),
                p = static_cast<CUdeviceptr>(args);
    void* params[] = {&a, &s, &p};
    return Check(d_->cuLaunchKernel(found->second, l.grid[0], l.grid[1], l.grid[2], l.block, 1, 1,
                                    0, g.stream, params, nullptr),
                 "launching " + l.function);
  }

  Status Synchronize(int gpu) override {
    DETRAIN_RETURN_IF_ERROR(Use(gpu));
    return Check(d_->cuStreamSynchronize(Stream(gpu)), "cuStreamSynchronize");
  }

 private:
  struct Gpu {
    CUdevice device = 0;
    CUcontext context = nullptr;
    CUstream stream = nullptr;
    CUmodule module = nullptr;
    std::map<std::string, CUfunction> functions;
    std::string image, description;
  };

  Status Check(CUresult r, const std::string& what) const {
    if (r == CUDA_SUCCESS) return Status::Ok();
    const char* s = nullptr;
    d_->cuGetErrorString(r, &s);
    return Internal("CUDA: " + what + ": " + (s ? s : "error " + std::to_string(r)));
  }
  Status NcclCheck(ncclResult_t r, const std::string& what) const {
    if (r == ncclSuccess) return Status::Ok();
    return Internal("NCCL: " + what + ": " + nccl_->ncclGetErrorString(r));
  }
  Status Use(int gpu) {
    if (gpu < 0 || gpu >= static_cast<int>(gpus_.size()))
      return InvalidArgument("no GPU " + std::to_string(gpu));
    return Check(d_->cuCtxSetCurrent(gpus_[static_cast<size_t>(gpu)].context), "cuCtxSetCurrent");
  }
  CUstream Stream(int gpu) const { return gpus_[static_cast<size_t>(gpu)].stream; }
  CUcontext Context(int gpu) const { return gpus_[static_cast<size_t>(gpu)].context; }

  // NCCL communicators over every GPU, made on the first transfer between two of them. Without
  // NCCL, transfers fall back to peer copies (nccl_ stays null).
  Status OpenNccl() {
    if (nccl_tried_) return Status::Ok();
    nccl_tried_ = true;
    Result<const Nccl*> nccl = LoadNccl();
    if (!nccl.ok()) return Status::Ok();
    comms_.assign(gpus_.size(), nullptr);
    std::vector<int> devices;
    for (size_t i = 0; i < gpus_.size(); ++i) devices.push_back(static_cast<int>(i));
    ncclResult_t r =
        (*nccl)->ncclCommInitAll(comms_.data(), static_cast<int>(gpus_.size()), devices.data());
    if (r != ncclSuccess) {
      comms_.clear();
      return Internal(std::string("NCCL: ncclCommInitAll: ") + (*nccl)->ncclGetErrorString(r));
    }
    nccl_ = *nccl;
    return Status::Ok();
  }

  const Driver* d_ = nullptr;
  const Nccl* nccl_ = nullptr;
  bool nccl_tried_ = false;
  std::vector<ncclComm_t> comms_;
  std::vector<Gpu> gpus_;
};

}  // namespace

Result<int> CountDriverGpus() {
  DETRAIN_ASSIGN_OR_RETURN(const Driver* d, LoadDriver());
  int count = 0;
  if (d->cuDeviceGetCount(&count) != CUDA_SUCCESS || count == 0)
    return Unavailable("the NVIDIA driver sees no GPU");
  return count;
}

Result<std::shared_ptr<GpuSystem>> OpenDriverSystem(const codegen::cuda::CudaProgram& program,
                                                    const CudaImages& images) {
  (void)program;
  auto system = std::make_shared<DriverSystem>();
  DETRAIN_RETURN_IF_ERROR(system->Open(images));
  return std::shared_ptr<GpuSystem>(std::move(system));
}

#else  // !DETRAIN_HAVE_CUDA

namespace {
Status NoCuda() {
  return Unavailable(
      "this detrain was built without the CUDA toolkit: --backend cuda is not available "
      "(docs/cuda.md)");
}
}  // namespace

Result<int> CountDriverGpus() { return NoCuda(); }
Result<std::shared_ptr<GpuSystem>> OpenDriverSystem(const codegen::cuda::CudaProgram&,
                                                    const CudaImages&) {
  return NoCuda();
}

#endif

}  // namespace detrain::runtime::cuda
