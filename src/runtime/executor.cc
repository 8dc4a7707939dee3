// See executor.h. Load: parse, check buffers and signature, compute every kernel's device set.
// Run: copy arguments into the devices that use them, then walk the schedule once; before a
// device runs a kernel, the operands it lacks are transferred from a device that has them.
#include "runtime/executor.h"

#include <cstring>
#include <span>

#include "base/thread_pool.h"
#include "compiler/codegen/cuda/cuda_program.h"
#include "compiler/semantics/semantics.h"
#include "runtime/cpu/cpu_device.h"
#include "runtime/cpu/program.h"
#include "runtime/cuda/cuda_device.h"

namespace detrain::runtime {

namespace pb = plan::v2;
using cpu::ArrayRef;

struct Executor::State {
  pb::Plan plan;
  ExecutorOptions options;
  Isa isa = Isa::kScalar;
  std::unique_ptr<ThreadPool> pool;
  std::vector<ArrayRef> buffers;
  std::vector<uint32_t> device_mask;             // per kernel: the devices that run it (bit d)
  std::vector<int32_t> param_kernel;             // per parameter number: its kernel id
  std::vector<std::unique_ptr<Device>> devices;  // this rank's, loaded once, reused by every Run
  // The mesh across processes: `ranks` × `per_rank` devices; this rank holds devices
  // [rank × per_rank, (rank + 1) × per_rank). One rank without a cluster.
  Cluster* cluster = nullptr;
  int rank = 0, ranks = 1, per_rank = 1;
  ExecutorStats stats;
  // kCuda: the generated program and the GPUs.
  std::unique_ptr<codegen::cuda::CudaProgram> cuda_program;
  std::shared_ptr<cuda::GpuSystem> gpus;

  int Owner(int device) const { return ranks == 1 ? 0 : device / per_rank; }
  Status Walk(const std::vector<std::vector<const ir::Literal*>>* args,
              std::vector<std::vector<ir::Literal>>* results, size_t first);

  // Device `index` of the mesh, loaded with the plan.
  Result<std::unique_ptr<Device>> MakeDevice(int index, bool whole_plan) {
    std::unique_ptr<Device> device;
    if (options.backend == Backend::kCuda) {
      device = std::make_unique<cuda::CudaDevice>(index, gpus, index % gpus->DeviceCount(),
                                                  cuda_program.get());
    } else {
      device = std::make_unique<cpu::CpuDevice>(index, pool.get(), isa, whole_plan);
    }
    DETRAIN_RETURN_IF_ERROR(device->Load(plan));
    return device;
  }
};

const char* BackendName(Backend backend) { return backend == Backend::kCuda ? "cuda" : "cpu"; }

Result<Backend> ParseBackend(std::string_view name) {
  if (name == "cpu") return Backend::kCpu;
  if (name == "cuda") return Backend::kCuda;
  return InvalidArgument("unknown backend '" + std::string(name) + "' (cpu or cuda)");
}

Executor::Executor() : state_(std::make_unique<State>()) {}
Executor::~Executor() = default;
const pb::Plan& Executor::plan() const { return state_->plan; }
const ExecutorStats& Executor::stats() const { return state_->stats; }
Isa Executor::isa() const { return state_->isa; }

namespace {

bool IsPowerOfTwo(int64_t x) { return x > 0 && (x & (x - 1)) == 0; }

// The device sets of all kernels (executor.h, "The mesh").
Result<std::vector<uint32_t>> Place(const pb::Plan& plan, int devices) {
  const int n = plan.kernels_size();
  std::vector<uint32_t> mask(static_cast<size_t>(n), 0);
  if (devices == 1) {
    std::fill(mask.begin(), mask.end(), 1u);
    return mask;
  }
  const int64_t per_device = plan.shards() / devices;
  std::vector<std::vector<int32_t>> consumers(static_cast<size_t>(n));
  for (const pb::Kernel& k : plan.kernels()) {
    for (const auto& op : k.operands()) {
      for (int32_t b : op.buffers()) {
        int32_t def = plan.buffers(b).defined_by();
        if (def < 0 || def >= n)
          return InvalidArgument("plan: buffer " + std::to_string(b) + " has no defining kernel");
        consumers[static_cast<size_t>(def)].push_back(k.id());
      }
    }
  }
  for (int32_t b : plan.outputs()) mask[static_cast<size_t>(plan.buffers(b).defined_by())] |= 1u;
  for (int i = n - 1; i >= 0; --i) {
    const pb::Kernel& k = plan.kernels(i);
    if (k.shard_hi() > k.shard_lo()) {
      if (k.shard_lo() < 0 || k.shard_hi() > plan.shards())
        return InvalidArgument("plan: kernel " + k.name() + " has a bad shard range");
      mask[static_cast<size_t>(i)] = 1u << (k.shard_lo() / per_device);
      continue;
    }
    for (int32_t c : consumers[static_cast<size_t>(i)]) {
      if (c <= i)
        return InvalidArgument("plan: kernel " + std::to_string(c) +
                               " reads a value defined after it");
      mask[static_cast<size_t>(i)] |= mask[static_cast<size_t>(c)];
    }
    if (mask[static_cast<size_t>(i)] == 0) mask[static_cast<size_t>(i)] = 1u;
  }
  return mask;
}

Status CheckArgument(const ArrayRef& b, const ir::Literal& arg, const pb::EntryParameter& p) {
  if (arg.shape().is_tuple() || arg.shape().type() != b.type || arg.shape().dims() != b.dims) {
    return InvalidArgument("parameter " + std::to_string(p.number()) + " ('" + p.name() +
                           "') expects " + ir::Shape(b.type, b.dims).ToString() + ", got " +
                           arg.shape().ToString());
  }
  return Status::Ok();
}

// The all-reduce of kernel `k` across `devices` (one per replica): each replica's operand copied
// to the host, the pairwise tree over each replica group, the sum copied back to the group.
Status AllReduce(const pb::Kernel& k, const std::vector<ArrayRef>& buffers,
                 std::vector<std::unique_ptr<Device>>& devices, int64_t replicas) {
  if (k.operands_size() != 1 || k.operands(0).buffers_size() != 1 || k.outputs_size() != 1) {
    return InvalidArgument("plan: all-reduce " + k.name() + " must reduce one array");
  }
  const ArrayRef& in = buffers[static_cast<size_t>(k.operands(0).buffers(0))];
  const ArrayRef& out = buffers[static_cast<size_t>(k.outputs(0))];
  if (in.type != out.type || in.elements != out.elements)
    return InvalidArgument("plan: all-reduce shapes");
  std::vector<std::vector<int64_t>> groups;
  for (const auto& g : k.all_reduce().replica_groups())
    groups.emplace_back(g.replicas().begin(), g.replicas().end());
  if (groups.empty()) {
    groups.emplace_back();
    for (int64_t r = 0; r < replicas; ++r) groups.back().push_back(r);
  }
  std::vector<int> covered(static_cast<size_t>(replicas), 0);
  for (const auto& g : groups) {
    for (int64_t r : g) {
      if (r < 0 || r >= replicas || covered[static_cast<size_t>(r)]++) {
        return InvalidArgument("all-reduce replica groups must name each of the " +
                               std::to_string(replicas) + " replicas once");
      }
    }
  }
  if (std::count(covered.begin(), covered.end(), 0) != 0)
    return InvalidArgument("all-reduce replica groups must cover every replica");
  DETRAIN_ASSIGN_OR_RETURN(
      auto combiner, cpu::DecodeProgram(k.all_reduce().combiner().program(), {in.type, in.type}));
  std::vector<std::string> operand(static_cast<size_t>(replicas));
  for (int64_t r = 0; r < replicas; ++r) {
    operand[static_cast<size_t>(r)].resize(static_cast<size_t>(in.bytes));
    DETRAIN_RETURN_IF_ERROR(devices[static_cast<size_t>(r)]->CopyOut(
        in.id, operand[static_cast<size_t>(r)].data(), in.bytes));
  }
  std::string sum(static_cast<size_t>(out.bytes), '\0');
  for (const auto& g : groups) {
    ir::DispatchElementType(in.type, [&](auto tag) {
      using T = typename decltype(tag)::type;
      auto combine = [&](T a, T b) { return cpu::Combine<T>(combiner, a, b); };
      std::vector<T> values;
      for (int64_t i = 0; i < in.elements; ++i) {
        values.clear();
        for (int64_t r : g) {
          T v;
          std::memcpy(&v, operand[static_cast<size_t>(r)].data() + i * sizeof(T), sizeof(T));
          values.push_back(v);
        }
        T total = semantics::PairwiseTreeInPlace(values.data(), static_cast<int64_t>(values.size()),
                                                 combine);
        std::memcpy(sum.data() + i * sizeof(T), &total, sizeof(T));
      }
    });
    for (int64_t r : g)
      DETRAIN_RETURN_IF_ERROR(
          devices[static_cast<size_t>(r)]->CopyIn(out.id, sum.data(), out.bytes));
  }
  return Status::Ok();
}

}  // namespace

Result<std::unique_ptr<Executor>> Executor::Create(std::string_view bytes,
                                                   const ExecutorOptions& options) {
  std::unique_ptr<Executor> e(new Executor());
  State& s = *e->state_;
  if (bytes.size() > static_cast<size_t>(INT32_MAX) ||
      !s.plan.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) {
    return InvalidArgument("not a serialized detrain.plan.v2.Plan (" +
                           std::to_string(bytes.size()) + " bytes)");
  }
  if (s.plan.format_version() != 2) {
    return InvalidArgument("plan format version " + std::to_string(s.plan.format_version()) +
                           " (this detrain runs version 2)");
  }
  if (options.threads < 1 || options.threads > 256)
    return InvalidArgument("threads must be between 1 and 256");
  s.isa = options.isa.value_or(BestIsa());
  if (!IsaSupported(s.isa)) {
    return InvalidArgument(
        "ISA '" + std::string(IsaName(s.isa)) +
        "' is not supported by this CPU (best: " + std::string(IsaName(BestIsa())) + ")");
  }
  const int64_t shards = s.plan.shards();
  if (!IsPowerOfTwo(shards) || shards > 4096)
    return InvalidArgument("plan: shard count " + std::to_string(shards));
  const int per_rank = options.devices;
  const int ranks = options.cluster != nullptr ? options.cluster->size() : 1;
  if (!(per_rank == 1 || per_rank == 2 || per_rank == 4 || per_rank == 8) ||
      shards % per_rank != 0) {
    std::string ok;
    for (int c : {1, 2, 4, 8}) {
      if (shards % c == 0) ok += (ok.empty() ? "" : ", ") + std::to_string(c);
    }
    return InvalidArgument("--devices " + std::to_string(per_rank) +
                           ": the device count must be 1, 2, 4 or 8 and divide the program's " +
                           std::to_string(shards) + " shards (use " + ok + ")");
  }
  if (ranks < 1 || ranks > 32 || shards % (static_cast<int64_t>(ranks) * per_rank) != 0 ||
      ranks * per_rank > 32) {
    return InvalidArgument("a mesh of " + std::to_string(ranks) + " processes × --devices " +
                           std::to_string(per_rank) + " = " +
                           std::to_string(static_cast<int64_t>(ranks) * per_rank) +
                           " devices: the mesh's device count must divide the program's " +
                           std::to_string(shards) + " shards (and be at most 32)");
  }
  const int d = ranks * per_rank;  // the mesh's devices
  if (s.plan.replicated() && d != 1) {
    return InvalidArgument(
        "--devices " + std::to_string(per_rank) + " on " + std::to_string(ranks) +
        " process(es): a replicated module (all-reduce) runs one device per replica, in one "
        "process");
  }
  if (options.cluster != nullptr && ranks > 1) {
    s.cluster = options.cluster.get();
    s.rank = options.cluster->rank();
    s.ranks = ranks;
  }
  s.per_rank = per_rank;
  s.options = options;
  DETRAIN_ASSIGN_OR_RETURN(s.buffers, cpu::CheckBuffers(s.plan));
  for (int i = 0; i < s.plan.kernels_size(); ++i) {
    const pb::Kernel& k = s.plan.kernels(i);
    if (k.id() != i)
      return InvalidArgument("plan: kernel ids out of order at " + std::to_string(i));
    for (const auto& op : k.operands()) {
      for (int32_t b : op.buffers()) {
        if (b < 0 || b >= s.plan.buffers_size())
          return InvalidArgument("plan: kernel " + k.name() + " reads a missing buffer");
      }
    }
    for (int32_t b : k.outputs()) {
      if (b < 0 || b >= s.plan.buffers_size())
        return InvalidArgument("plan: kernel " + k.name() + " writes a missing buffer");
    }
  }
  for (int32_t b : s.plan.outputs()) {
    if (b < 0 || b >= s.plan.buffers_size())
      return InvalidArgument("plan: a missing output buffer");
  }
  for (int i = 0; i < s.plan.buffers_size(); ++i) {
    int32_t def = s.plan.buffers(i).defined_by();
    if (def < 0 || def >= s.plan.kernels_size())
      return InvalidArgument("plan: buffer " + std::to_string(i) + " has no defining kernel");
  }
  s.param_kernel.assign(static_cast<size_t>(s.plan.parameters_size()), -1);
  for (int i = 0; i < s.plan.parameters_size(); ++i) {
    const pb::EntryParameter& p = s.plan.parameters(i);
    if (p.number() != i || p.buffers_size() != 1)
      return InvalidArgument("plan: entry parameter " + std::to_string(i) + " is not one array");
    int32_t b = p.buffers(0);
    if (b < 0 || b >= s.plan.buffers_size())
      return InvalidArgument("plan: entry parameter " + std::to_string(i) + " has no buffer");
    s.param_kernel[static_cast<size_t>(i)] = s.plan.buffers(b).defined_by();
  }
  DETRAIN_ASSIGN_OR_RETURN(s.device_mask, Place(s.plan, d));
  s.pool = std::make_unique<ThreadPool>(static_cast<size_t>(options.threads));
  if (options.backend == Backend::kCuda) {
    // The CPU kernels' checks of every spec come first: the generated code trusts the plan.
    DETRAIN_RETURN_IF_ERROR(cpu::PrepareKernels(s.plan, s.buffers, false).status());
    Result<codegen::cuda::CudaProgram> program = codegen::cuda::GenerateCuda(s.plan);
    if (!program.ok()) return program.status().WithContext("--backend cuda");
    s.cuda_program = std::make_unique<codegen::cuda::CudaProgram>(std::move(*program));
    std::shared_ptr<const cuda::CudaImages> images = options.cuda_images;
    if (images == nullptr) {
      DETRAIN_ASSIGN_OR_RETURN(cuda::CudaImages compiled, cuda::CompileImages(*s.cuda_program));
      images = std::make_shared<const cuda::CudaImages>(std::move(compiled));
    }
    Result<std::shared_ptr<cuda::GpuSystem>> gpus =
        options.gpu_system ? options.gpu_system(*s.cuda_program, *images)
                           : cuda::OpenDriverSystem(*s.cuda_program, *images);
    if (!gpus.ok()) return gpus.status().WithContext("--backend cuda");
    s.gpus = std::move(*gpus);
    for (int g = 0; g < std::min(s.gpus->DeviceCount(), d); ++g)
      s.stats.devices.push_back("gpu " + std::to_string(g) + ": " + s.gpus->Describe(g));
  } else {
    s.stats.devices.push_back("cpu (" + std::string(IsaName(s.isa)) + ", " +
                              std::to_string(options.threads) + " threads)");
  }
  // Loading prepares every kernel: a bad plan is reported here rather than at the first run.
  for (int i = 0; i < (s.plan.replicated() ? 1 : per_rank); ++i) {
    DETRAIN_ASSIGN_OR_RETURN(
        auto device,
        s.MakeDevice(s.rank * per_rank + i, /*whole_plan=*/s.plan.replicated() || d == 1));
    s.devices.push_back(std::move(device));
  }
  if (auto* first = dynamic_cast<cpu::CpuDevice*>(s.devices[0].get())) {
    s.stats.folded_transposes = first->folds().transposes;
    s.stats.folded_dot_trees = first->folds().dot_trees;
  }
  return e;
}

Result<std::vector<std::vector<ir::Literal>>> Executor::Run(
    const std::vector<std::vector<ir::Literal>>& args) {
  std::vector<std::vector<const ir::Literal*>> borrowed(args.size());
  for (size_t r = 0; r < args.size(); ++r) {
    for (const ir::Literal& a : args[r]) borrowed[r].push_back(&a);
  }
  std::vector<std::vector<ir::Literal>> results;
  DETRAIN_RETURN_IF_ERROR(RunBorrowed(borrowed, &results));
  return results;
}

Status Executor::RunInto(const std::vector<const ir::Literal*>& args,
                         std::vector<ir::Literal>* results) {
  if (state_->plan.replicated())
    return InvalidArgument("RunInto runs one replica; this plan is replicated");
  std::vector<std::vector<ir::Literal>> out(1);
  out[0] = std::move(*results);
  Status status = RunBorrowed({args}, &out);
  *results = std::move(out[0]);
  return status;
}

Status Executor::RunBorrowed(const std::vector<std::vector<const ir::Literal*>>& args,
                             std::vector<std::vector<ir::Literal>>* results) {
  State& s = *state_;
  if (s.rank != 0) {
    return FailedPrecondition("this process is " + s.cluster->Describe(s.rank) +
                              ", which follows rank 0 (Executor::Follow)");
  }
  const size_t replicas = args.size();
  if (replicas == 0) return InvalidArgument("at least one replica is needed");
  results->resize(replicas);
  if (s.plan.replicated()) {
    // A replicated plan: one device per replica, all in lockstep.
    while (s.devices.size() < replicas) {
      DETRAIN_ASSIGN_OR_RETURN(
          auto device, s.MakeDevice(static_cast<int>(s.devices.size()), /*whole_plan=*/true));
      s.devices.push_back(std::move(device));
    }
    return s.Walk(&args, results, 0);
  }
  // Without collectives, replicas are independent runs.
  for (size_t r = 0; r < replicas; ++r) {
    const std::vector<std::vector<const ir::Literal*>> one = {args[r]};
    if (s.cluster != nullptr) {
      for (int f = 1; f < s.ranks; ++f) {
        Status sent = SendControl(*s.cluster, f, Control::kRunStep, 0);
        if (!sent.ok()) {
          s.cluster->set_broken();
          return sent;
        }
      }
    }
    DETRAIN_RETURN_IF_ERROR(s.Walk(&one, results, r));
  }
  return Status::Ok();
}

Result<bool> Executor::Follow(int64_t* stop_value) {
  State& s = *state_;
  if (s.cluster == nullptr || s.rank == 0)
    return FailedPrecondition("Follow is for the follower ranks of a cluster");
  Result<std::pair<Control, int64_t>> message = RecvControl(*s.cluster, 0);
  if (!message.ok()) {
    s.cluster->set_broken();
    return message.status();
  }
  if (message->first == Control::kStop) {
    if (stop_value != nullptr) *stop_value = message->second;
    return false;
  }
  DETRAIN_RETURN_IF_ERROR(s.Walk(nullptr, nullptr, 0));
  return true;
}

// One run of the plan on the mesh: `args` (rank 0; null on a follower) per replica, the results
// written over (*results)[first..]. Arguments are borrowed and results written in place: copying
// a step's state or allocating its results anew would cost as much as the step's elementwise work.
// Every rank walks the same schedule with the same presence table (which device holds which
// buffer), so the ranks agree on every transfer without telling each other.
Status Executor::State::Walk(const std::vector<std::vector<const ir::Literal*>>* args,
                             std::vector<std::vector<ir::Literal>>* results, size_t first) {
  const bool replicated = plan.replicated();
  const size_t replica_count = replicated ? args->size() : 1;
  const int nd = replicated ? static_cast<int>(replica_count) : ranks * per_rank;
  const int base = rank * per_rank;  // this rank's first device
  auto mine = [&](int d) { return Owner(d) == rank; };
  auto device = [&](int d) { return devices[static_cast<size_t>(d - base)].get(); };
  const size_t nb = buffers.size();
  std::vector<std::vector<char>> present(static_cast<size_t>(nd), std::vector<char>(nb, 0));
  auto device_of = [&](size_t r, int d) { return replicated ? static_cast<int>(r) : d; };
  // A failed transfer leaves the other ranks waiting for bytes that will never come.
  auto fail = [&](Status st) {
    if (!st.ok() && cluster != nullptr) cluster->set_broken();
    return st;
  };

  // The parameters: rank 0 copies each into its devices that use it and sends it to each
  // follower that has such a device; a follower copies what it receives into its own.
  const int np = plan.parameters_size();
  for (size_t r = 0; r < replica_count; ++r) {
    if (args != nullptr && (*args)[r].size() != static_cast<size_t>(np)) {
      return InvalidArgument("the entry computation takes " + std::to_string(np) +
                             " argument(s), got " + std::to_string((*args)[r].size()));
    }
    for (int i = 0; i < np; ++i) {
      const pb::EntryParameter& p = plan.parameters(i);
      const ArrayRef& b = buffers[static_cast<size_t>(p.buffers(0))];
      const ir::Literal* arg = args != nullptr ? (*args)[r][static_cast<size_t>(i)] : nullptr;
      if (arg != nullptr) DETRAIN_RETURN_IF_ERROR(CheckArgument(b, *arg, p));
      const uint32_t mask =
          replicated ? 1u : device_mask[static_cast<size_t>(param_kernel[static_cast<size_t>(i)])];
      std::string received;
      const void* bytes = arg != nullptr ? arg->bytes().data() : nullptr;
      if (cluster != nullptr) {
        for (int q = 0; q < ranks; ++q) {
          const uint32_t devices_of_q = ((1u << per_rank) - 1) << (q * per_rank);
          if (q == 0 || !(mask & devices_of_q)) continue;
          if (rank == 0) {
            DETRAIN_RETURN_IF_ERROR(fail(cluster->Send(q, Channel::kData, bytes, b.bytes)));
          } else if (q == rank) {
            received.resize(static_cast<size_t>(b.bytes));
            DETRAIN_RETURN_IF_ERROR(
                fail(cluster->Recv(0, Channel::kData, received.data(), b.bytes)));
            bytes = received.data();
          }
        }
      }
      for (int d = 0; d < (replicated ? 1 : nd); ++d) {
        if (!replicated && !(mask & (1u << d))) continue;
        const int dev = device_of(r, d);
        present[static_cast<size_t>(dev)][static_cast<size_t>(b.id)] = 1;
        if (mine(dev)) DETRAIN_RETURN_IF_ERROR(fail(device(dev)->CopyIn(b.id, bytes, b.bytes)));
      }
    }
  }

  // Makes buffer `b` present on device `d`: from a device of the same rank when one has it,
  // else from the lowest device that has it.
  auto ensure = [&](int d, int32_t b) -> Status {
    if (present[static_cast<size_t>(d)][static_cast<size_t>(b)]) return Status::Ok();
    int from = -1;
    for (int e = 0; e < nd && from < 0; ++e) {
      if (present[static_cast<size_t>(e)][static_cast<size_t>(b)] && Owner(e) == Owner(d)) from = e;
    }
    for (int e = 0; e < nd && from < 0; ++e) {
      if (present[static_cast<size_t>(e)][static_cast<size_t>(b)]) from = e;
    }
    if (from < 0) return Internal("buffer " + std::to_string(b) + " is on no device");
    const ArrayRef& ref = buffers[static_cast<size_t>(b)];
    if (mine(from) && mine(d)) {
      DETRAIN_RETURN_IF_ERROR(device(from)->SendBuffer(b, device(d)));
    } else if (mine(from)) {
      std::string staged(static_cast<size_t>(ref.bytes), '\0');
      DETRAIN_RETURN_IF_ERROR(fail(device(from)->CopyOut(b, staged.data(), ref.bytes)));
      DETRAIN_RETURN_IF_ERROR(
          fail(cluster->Send(Owner(d), Channel::kData, staged.data(), ref.bytes)));
    } else if (mine(d)) {
      std::string staged(static_cast<size_t>(ref.bytes), '\0');
      DETRAIN_RETURN_IF_ERROR(
          fail(cluster->Recv(Owner(from), Channel::kData, staged.data(), ref.bytes)));
      DETRAIN_RETURN_IF_ERROR(fail(device(d)->CopyIn(b, staged.data(), ref.bytes)));
    }
    if (mine(from) || mine(d)) {
      ++stats.transfers;
      stats.transfer_bytes += ref.bytes;
    }
    present[static_cast<size_t>(d)][static_cast<size_t>(b)] = 1;
    return Status::Ok();
  };

  for (const pb::Kernel& k : plan.kernels()) {
    if (k.has_alias()) continue;
    if (k.has_all_reduce()) {  // replicated plans only: one process
      DETRAIN_RETURN_IF_ERROR(AllReduce(k, buffers, devices, nd));
      for (int d = 0; d < nd; ++d)
        present[static_cast<size_t>(d)][static_cast<size_t>(k.outputs(0))] = 1;
      continue;
    }
    for (int d = 0; d < nd; ++d) {
      if (!replicated && !(device_mask[static_cast<size_t>(k.id())] & (1u << d))) continue;
      for (const auto& op : k.operands()) {
        for (int32_t b : op.buffers()) DETRAIN_RETURN_IF_ERROR(fail(ensure(d, b)));
      }
      if (mine(d)) {
        DETRAIN_RETURN_IF_ERROR(fail(device(d)->Launch(k.id())));
        ++stats.kernel_launches;
      }
      for (int32_t b : k.outputs()) present[static_cast<size_t>(d)][static_cast<size_t>(b)] = 1;
    }
  }

  // The results, gathered on device 0 (rank 0) — or each replica's device.
  for (size_t r = 0; r < replica_count; ++r) {
    const int dev = device_of(r, 0);
    std::vector<ir::Literal>* out = results != nullptr ? &(*results)[first + r] : nullptr;
    if (out != nullptr) out->resize(static_cast<size_t>(plan.outputs_size()));
    for (int o = 0; o < plan.outputs_size(); ++o) {
      const int32_t b = plan.outputs(o);
      DETRAIN_RETURN_IF_ERROR(fail(ensure(dev, b)));
      if (!mine(dev) || out == nullptr) continue;
      const ArrayRef& ref = buffers[static_cast<size_t>(b)];
      ir::Literal& lit = (*out)[static_cast<size_t>(o)];
      if (lit.shape().is_tuple() || lit.shape().type() != ref.type ||
          lit.shape().dims() != ref.dims ||
          lit.bytes().size() != static_cast<size_t>(ref.bytes)) {  // e.g. a default literal
        lit = ir::Literal(ir::Shape(ref.type, ref.dims));
      }
      DETRAIN_RETURN_IF_ERROR(device(dev)->CopyOut(b, lit.mutable_bytes().data(), ref.bytes));
    }
  }
  return Status::Ok();
}

std::vector<ir::Literal> FlattenLiteral(const ir::Literal& literal) {
  std::vector<ir::Literal> out;
  if (!literal.shape().is_tuple()) {
    out.push_back(literal);
    return out;
  }
  for (const ir::Literal& e : literal.tuple_elements()) {
    for (ir::Literal& leaf : FlattenLiteral(e)) out.push_back(std::move(leaf));
  }
  return out;
}

}  // namespace detrain::runtime
