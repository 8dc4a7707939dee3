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
  std::vector<std::unique_ptr<Device>> devices;  // loaded once, reused by every Run
  ExecutorStats stats;
  // kCuda: the generated program and the GPUs.
  std::unique_ptr<codegen::cuda::CudaProgram> cuda_program;
  std::shared_ptr<cuda::GpuSystem> gpus;

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
  const int d = options.devices;
  if (!(d == 1 || d == 2 || d == 4 || d == 8) || shards % d != 0) {
    std::string ok;
    for (int c : {1, 2, 4, 8}) {
      if (shards % c == 0) ok += (ok.empty() ? "" : ", ") + std::to_string(c);
    }
    return InvalidArgument("--devices " + std::to_string(d) +
                           ": the device count must be 1, 2, 4 or 8 and divide the program's " +
                           std::to_string(shards) + " shards (use " + ok + ")");
  }
  if (s.plan.replicated() && d != 1) {
    return InvalidArgument("--devices " + std::to_string(d) +
                           ": a replicated module (all-reduce) runs one device per replica");
  }
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
  for (int i = 0; i < (s.plan.replicated() ? 1 : d); ++i) {
    DETRAIN_ASSIGN_OR_RETURN(auto device,
                             s.MakeDevice(i, /*whole_plan=*/s.plan.replicated() || d == 1));
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
  const size_t replicas = args.size();
  if (replicas == 0) return InvalidArgument("at least one replica is needed");
  results->resize(replicas);
  const int nd = s.plan.replicated() ? static_cast<int>(replicas) : s.options.devices;
  auto& devices = s.devices;
  while (static_cast<int>(devices.size()) < nd) {  // a replicated plan: one device per replica
    DETRAIN_ASSIGN_OR_RETURN(auto device,
                             s.MakeDevice(static_cast<int>(devices.size()), /*whole_plan=*/true));
    devices.push_back(std::move(device));
  }
  // Arguments are borrowed and results written over (*results)[first..]: copying a step's state
  // or allocating its results anew would cost as much as the step's elementwise work.
  auto run_one = [&](std::span<const std::vector<const ir::Literal*>> replica_args,
                     size_t first) -> Status {
    const size_t nb = s.buffers.size();
    std::vector<std::vector<char>> present(static_cast<size_t>(nd), std::vector<char>(nb, 0));
    auto device_of = [&](size_t r, int d) { return s.plan.replicated() ? static_cast<int>(r) : d; };
    for (size_t r = 0; r < replica_args.size(); ++r) {
      const auto& a = replica_args[r];
      if (a.size() != static_cast<size_t>(s.plan.parameters_size())) {
        return InvalidArgument("the entry computation takes " +
                               std::to_string(s.plan.parameters_size()) + " argument(s), got " +
                               std::to_string(a.size()));
      }
      for (int i = 0; i < s.plan.parameters_size(); ++i) {
        const pb::EntryParameter& p = s.plan.parameters(i);
        const ArrayRef& b = s.buffers[static_cast<size_t>(p.buffers(0))];
        DETRAIN_RETURN_IF_ERROR(CheckArgument(b, *a[static_cast<size_t>(i)], p));
        uint32_t mask =
            s.plan.replicated()
                ? 1u
                : s.device_mask[static_cast<size_t>(s.param_kernel[static_cast<size_t>(i)])];
        for (int d = 0; d < nd; ++d) {
          if (!s.plan.replicated() && !(mask & (1u << d))) continue;
          int dev = device_of(r, d);
          if (s.plan.replicated() && d != 0) continue;
          DETRAIN_RETURN_IF_ERROR(devices[static_cast<size_t>(dev)]->CopyIn(
              b.id, a[static_cast<size_t>(i)]->bytes().data(), b.bytes));
          present[static_cast<size_t>(dev)][static_cast<size_t>(b.id)] = 1;
        }
      }
    }
    auto ensure = [&](int d, int32_t b) -> Status {
      if (present[static_cast<size_t>(d)][static_cast<size_t>(b)]) return Status::Ok();
      for (int e = 0; e < nd; ++e) {
        if (!present[static_cast<size_t>(e)][static_cast<size_t>(b)]) continue;
        const ArrayRef& ref = s.buffers[static_cast<size_t>(b)];
        DETRAIN_RETURN_IF_ERROR(
            devices[static_cast<size_t>(e)]->SendBuffer(b, devices[static_cast<size_t>(d)].get()));
        present[static_cast<size_t>(d)][static_cast<size_t>(b)] = 1;
        ++s.stats.transfers;
        s.stats.transfer_bytes += ref.bytes;
        return Status::Ok();
      }
      return Internal("buffer " + std::to_string(b) + " is on no device");
    };
    for (const pb::Kernel& k : s.plan.kernels()) {
      if (k.has_alias()) continue;
      if (k.has_all_reduce()) {
        DETRAIN_RETURN_IF_ERROR(AllReduce(k, s.buffers, devices, nd));
        for (int d = 0; d < nd; ++d)
          present[static_cast<size_t>(d)][static_cast<size_t>(k.outputs(0))] = 1;
        continue;
      }
      for (int d = 0; d < nd; ++d) {
        if (!s.plan.replicated() && !(s.device_mask[static_cast<size_t>(k.id())] & (1u << d)))
          continue;
        for (const auto& op : k.operands()) {
          for (int32_t b : op.buffers()) DETRAIN_RETURN_IF_ERROR(ensure(d, b));
        }
        DETRAIN_RETURN_IF_ERROR(devices[static_cast<size_t>(d)]->Launch(k.id()));
        ++s.stats.kernel_launches;
        for (int32_t b : k.outputs()) present[static_cast<size_t>(d)][static_cast<size_t>(b)] = 1;
      }
    }
    for (size_t r = 0; r < replica_args.size(); ++r) {
      int dev = device_of(r, 0);
      std::vector<ir::Literal>& out = (*results)[first + r];
      out.resize(static_cast<size_t>(s.plan.outputs_size()));
      for (int o = 0; o < s.plan.outputs_size(); ++o) {
        const int32_t b = s.plan.outputs(o);
        DETRAIN_RETURN_IF_ERROR(ensure(dev, b));
        const ArrayRef& ref = s.buffers[static_cast<size_t>(b)];
        ir::Literal& lit = out[static_cast<size_t>(o)];
        if (lit.shape().is_tuple() || lit.shape().type() != ref.type ||
            lit.shape().dims() != ref.dims ||
            lit.bytes().size() != static_cast<size_t>(ref.bytes)) {  // e.g. a default literal
          lit = ir::Literal(ir::Shape(ref.type, ref.dims));
        }
        DETRAIN_RETURN_IF_ERROR(
            devices[static_cast<size_t>(dev)]->CopyOut(b, lit.mutable_bytes().data(), ref.bytes));
      }
    }
    return Status::Ok();
  };
  if (s.plan.replicated()) {
    // All replicas in lockstep, each on its own device.
    DETRAIN_RETURN_IF_ERROR(run_one(args, 0));
  } else {
    // Without collectives, replicas are independent runs.
    for (size_t r = 0; r < replicas; ++r)
      DETRAIN_RETURN_IF_ERROR(run_one(std::span(args).subspan(r, 1), r));
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
