// See executor.h. Load: read and validate the plan, check the options against it, compute every
// kernel's device set, open the backend's devices. Run: copy arguments into the devices that use
// them, then walk the schedule once; before a device runs a kernel, the operands it lacks are
// transferred from a device that has them.
#include "runtime/executor.h"

#include <algorithm>
#include <cstring>

#include "runtime/all_reduce.h"
#include "runtime/device_factory.h"

namespace detrain::runtime {

namespace pb = plan::v2;

struct Executor::State {
  std::unique_ptr<plan::ValidatedPlan> checked;  // the plan, read once
  ExecutorOptions options;
  Isa isa = Isa::kScalar;
  std::vector<uint32_t> device_mask;             // per kernel: the devices that run it (bit d)
  std::vector<int32_t> param_kernel;             // per parameter number: its kernel id
  std::unique_ptr<DeviceFactory> factory;        // the backend's
  std::vector<std::unique_ptr<Device>> devices;  // this rank's, loaded once, reused by every Run
  // The mesh across processes: `ranks` × `per_rank` devices; this rank holds devices
  // [rank × per_rank, (rank + 1) × per_rank). One rank without a cluster.
  Cluster* cluster = nullptr;
  int rank = 0, ranks = 1, per_rank = 1;
  ExecutorStats stats;
  bool results_kept = false;  // the last run had one replica and finished: ReadResult may read
  // Resident state (Executor::SetCarry): per parameter, the result it takes, or -1; per run,
  // which null arguments lie in place (resident) and which were read out (staged).
  std::vector<int> carry;
  std::vector<char> resident;
  std::vector<ir::Literal> staged;
  int64_t resident_arguments = 0;
  // One device of one rank running an unreplicated plan: no transfers to track.
  bool OneDevice() const { return !plan().replicated() && ranks == 1 && per_rank == 1; }

  const pb::Plan& plan() const { return checked->proto(); }
  const std::vector<plan::Array>& buffers() const { return checked->buffers(); }
  int Owner(int device) const { return ranks == 1 ? 0 : device / per_rank; }
  Status Walk(const std::vector<std::vector<const ir::Literal*>>* args,
              std::vector<std::vector<ir::Literal>>* results, size_t first);
};

Executor::Executor() : state_(std::make_unique<State>()) {}
Executor::~Executor() = default;
const pb::Plan& Executor::plan() const { return state_->plan(); }
const ExecutorStats& Executor::stats() const { return state_->stats; }
Isa Executor::isa() const { return state_->isa; }

namespace {

// The device sets of all kernels (executor.h, "The mesh"). The plan reader checked every
// reference and shard range, and that kernels read only values defined before them.
std::vector<uint32_t> Place(const pb::Plan& plan, int devices) {
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
      for (int32_t b : op.buffers())
        consumers[static_cast<size_t>(plan.buffers(b).defined_by())].push_back(k.id());
    }
  }
  for (int32_t b : plan.outputs()) mask[static_cast<size_t>(plan.buffers(b).defined_by())] |= 1u;
  for (int i = n - 1; i >= 0; --i) {
    const pb::Kernel& k = plan.kernels(i);
    if (k.shard_hi() > k.shard_lo()) {
      mask[static_cast<size_t>(i)] = 1u << (k.shard_lo() / per_device);
      continue;
    }
    for (int32_t c : consumers[static_cast<size_t>(i)])
      mask[static_cast<size_t>(i)] |= mask[static_cast<size_t>(c)];
    if (mask[static_cast<size_t>(i)] == 0) mask[static_cast<size_t>(i)] = 1u;
  }
  return mask;
}

// Copies result buffer `ref` of `device` into `lit`, in place when it has the result's shape.
Status CopyResult(Device& device, const plan::Array& ref, ir::Literal* lit) {
  if (lit->shape().is_tuple() || lit->shape().type() != ref.type ||
      lit->shape().dims() != ref.dims ||
      lit->bytes().size() != static_cast<size_t>(ref.bytes)) {  // e.g. a default literal
    *lit = ir::Literal(ir::Shape(ref.type, ref.dims));
  }
  return device.CopyOut(ref.id, lit->mutable_bytes().data(), ref.bytes);
}

Status CheckArgument(const plan::Array& b, const ir::Literal& arg, const pb::EntryParameter& p) {
  if (arg.shape().is_tuple() || arg.shape().type() != b.type || arg.shape().dims() != b.dims) {
    return InvalidArgument("parameter " + std::to_string(p.number()) + " ('" + p.name() +
                           "') expects " + ir::Shape(b.type, b.dims).ToString() + ", got " +
                           arg.shape().ToString());
  }
  return Status::Ok();
}

}  // namespace

Result<std::unique_ptr<Executor>> Executor::Create(std::string_view bytes,
                                                   const ExecutorOptions& options) {
  std::unique_ptr<Executor> e(new Executor());
  State& s = *e->state_;
  DETRAIN_ASSIGN_OR_RETURN(plan::ValidatedPlan checked, plan::ReadPlan(bytes));
  s.checked = std::make_unique<plan::ValidatedPlan>(std::move(checked));
  const pb::Plan& p = s.plan();
  if (options.threads < 1 || options.threads > 256)
    return Unavailable("threads must be between 1 and 256");
  s.isa = options.isa.value_or(BestIsa());
  if (!IsaSupported(s.isa)) {
    return Unavailable("ISA '" + std::string(IsaName(s.isa)) +
                       "' is not supported by this CPU (best: " + std::string(IsaName(BestIsa())) +
                       ")");
  }
  const int64_t shards = p.shards();
  const int per_rank = options.devices;
  const int ranks = options.cluster != nullptr ? options.cluster->size() : 1;
  if (!(per_rank == 1 || per_rank == 2 || per_rank == 4 || per_rank == 8) ||
      shards % per_rank != 0) {
    std::string ok;
    for (int c : {1, 2, 4, 8}) {
      if (shards % c == 0) ok += (ok.empty() ? "" : ", ") + std::to_string(c);
    }
    return Unavailable("--devices " + std::to_string(per_rank) +
                       ": the device count must be 1, 2, 4 or 8 and divide the program's " +
                       std::to_string(shards) + " shards (use " + ok + ")");
  }
  if (ranks < 1 || ranks > 32 || shards % (static_cast<int64_t>(ranks) * per_rank) != 0 ||
      ranks * per_rank > 32) {
    return Unavailable("a mesh of " + std::to_string(ranks) + " processes × --devices " +
                       std::to_string(per_rank) + " = " +
                       std::to_string(static_cast<int64_t>(ranks) * per_rank) +
                       " devices: the mesh's device count must divide the program's " +
                       std::to_string(shards) + " shards (and be at most 32)");
  }
  const int d = ranks * per_rank;  // the mesh's devices
  if (p.replicated() && d != 1) {
    return Unavailable(
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
  s.param_kernel.assign(static_cast<size_t>(p.parameters_size()), -1);
  for (int i = 0; i < p.parameters_size(); ++i)
    s.param_kernel[static_cast<size_t>(i)] = p.buffers(p.parameters(i).buffers(0)).defined_by();
  s.device_mask = Place(p, d);
  DeviceOptions device_options;
  device_options.backend = options.backend;
  device_options.threads = options.threads;
  device_options.isa = s.isa;
  device_options.mesh_devices = d;
  device_options.generated_loops = options.generated_loops;
  device_options.loops_fallback = options.loops_fallback;
  device_options.backend_options = options.backend_options;
  DETRAIN_ASSIGN_OR_RETURN(s.factory, OpenDevices(*s.checked, device_options));
  // Loading prepares every kernel: a plan a backend cannot run is reported here rather than at
  // the first run.
  for (int i = 0; i < (p.replicated() ? 1 : per_rank); ++i) {
    DETRAIN_ASSIGN_OR_RETURN(
        auto device,
        s.factory->MakeDevice(s.rank * per_rank + i, /*whole_plan=*/p.replicated() || d == 1));
    s.devices.push_back(std::move(device));
  }
  s.stats.devices = s.factory->Describe();  // after loading: what the devices run with
  const LoadRewrites rewrites = s.devices[0]->Rewrites();
  s.stats.folded_transposes = rewrites.transposes;
  s.stats.folded_dot_trees = rewrites.dot_trees;
  s.stats.folded_scalar_broadcasts = rewrites.scalar_broadcasts;
  s.stats.fused_elementwise = rewrites.fused_elementwise;
  s.stats.generated_loops = rewrites.generated_loops;
  s.stats.views = rewrites.views;
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
  DETRAIN_RETURN_IF_ERROR(RunKeep(args));
  results->resize(static_cast<size_t>(state_->plan().outputs_size()));
  for (int o = 0; o < state_->plan().outputs_size(); ++o)
    DETRAIN_RETURN_IF_ERROR(ReadResult(o, &(*results)[static_cast<size_t>(o)]));
  return Status::Ok();
}

Status Executor::SetCarry(std::vector<int> carry) {
  State& s = *state_;
  const pb::Plan& p = s.plan();
  if (carry.size() != static_cast<size_t>(p.parameters_size())) {
    return InvalidArgument(
        "a carry names one result or -1 per parameter: " + std::to_string(p.parameters_size()) +
        " expected, got " + std::to_string(carry.size()));
  }
  for (size_t i = 0; i < carry.size(); ++i) {
    if (carry[i] == -1) continue;
    if (carry[i] < 0 || carry[i] >= p.outputs_size())
      return InvalidArgument("parameter " + std::to_string(i) + " carries no result " +
                             std::to_string(carry[i]));
    const plan::Array& from = s.buffers()[static_cast<size_t>(p.outputs(carry[i]))];
    const plan::Array& to =
        s.buffers()[static_cast<size_t>(p.parameters(static_cast<int>(i)).buffers(0))];
    if (from.type != to.type || from.dims != to.dims) {
      return InvalidArgument(
          "parameter " + std::to_string(i) + " ('" + p.parameters(static_cast<int>(i)).name() +
          "') is " + ir::Shape(to.type, to.dims).ToString() + "; result " +
          std::to_string(carry[i]) + " is " + ir::Shape(from.type, from.dims).ToString());
    }
  }
  s.carry = std::move(carry);
  return Status::Ok();
}

int64_t Executor::resident_arguments() const { return state_->resident_arguments; }

bool Executor::CarriedInPlace(int parameter) const {
  const State& s = *state_;
  if (parameter < 0 || static_cast<size_t>(parameter) >= s.carry.size()) return false;
  const int from = s.carry[static_cast<size_t>(parameter)];
  if (from < 0 || !s.OneDevice()) return false;
  return s.buffers()[static_cast<size_t>(s.plan().outputs(from))].offset ==
         s.buffers()[static_cast<size_t>(s.plan().parameters(parameter).buffers(0))].offset;
}

Status Executor::RunKeep(const std::vector<const ir::Literal*>& args) {
  State& s = *state_;
  if (s.plan().replicated())
    return InvalidArgument(
        "a run that keeps its results runs one replica; this plan is replicated");
  // Null arguments are the previous run's carried results: in place, or read out now, before
  // anything of this run is copied in over them.
  std::vector<const ir::Literal*> in = args;
  s.resident.assign(in.size(), 0);
  for (size_t i = 0; i < in.size(); ++i) {
    if (in[i] != nullptr) continue;
    const int from = i < s.carry.size() ? s.carry[i] : -1;
    if (from < 0) return InvalidArgument("argument " + std::to_string(i) + " is missing");
    if (!s.results_kept)
      return FailedPrecondition("argument " + std::to_string(i) +
                                " is carried, but no run before kept its results");
    if (CarriedInPlace(static_cast<int>(i))) {
      s.resident[i] = 1;
      continue;
    }
    s.staged.resize(in.size());
    DETRAIN_RETURN_IF_ERROR(ReadResult(from, &s.staged[i]));
    in[i] = &s.staged[i];
  }
  Status st = RunBorrowed({in}, nullptr);
  s.resident.clear();
  return st;
}

Status Executor::ReadResult(int index, ir::Literal* out) {
  State& s = *state_;
  if (!s.results_kept) return FailedPrecondition("no run has kept its results");
  if (index < 0 || index >= s.plan().outputs_size())
    return InvalidArgument("no result " + std::to_string(index));
  // The walk gathered every result on device 0, which is this rank's first (rank 0).
  return CopyResult(*s.devices[0], s.buffers()[static_cast<size_t>(s.plan().outputs(index))], out);
}

DeviceTraffic Executor::Traffic() const {
  DeviceTraffic sum;
  for (const auto& d : state_->devices) {
    const DeviceTraffic t = d->Traffic();
    sum.launches += t.launches;
    sum.bytes_in += t.bytes_in;
    sum.bytes_out += t.bytes_out;
  }
  return sum;
}

Status Executor::DigestResults(const std::vector<int>& indices,
                               const std::vector<std::string>& prefixes, std::string* out) {
  State& s = *state_;
  if (!s.results_kept) return FailedPrecondition("no run has kept its results");
  if (indices.size() != prefixes.size()) return InvalidArgument("one prefix per result");
  std::vector<BufferDigest> buffers;
  for (size_t i = 0; i < indices.size(); ++i) {
    if (indices[i] < 0 || indices[i] >= s.plan().outputs_size())
      return InvalidArgument("no result " + std::to_string(indices[i]));
    const plan::Array& ref = s.buffers()[static_cast<size_t>(s.plan().outputs(indices[i]))];
    buffers.push_back({ref.id, ref.bytes, prefixes[i]});
  }
  out->clear();
  // The walk gathered every result on device 0, which is this rank's first (rank 0).
  return s.devices[0]->DigestBuffers(buffers, out);
}

Status Executor::RunBorrowed(const std::vector<std::vector<const ir::Literal*>>& args,
                             std::vector<std::vector<ir::Literal>>* results) {
  State& s = *state_;
  if (s.rank != 0) {
    return FailedPrecondition("this process is " + s.cluster->Describe(s.rank) +
                              ", which follows rank 0 (Executor::Follow)");
  }
  s.results_kept = false;
  const size_t replicas = args.size();
  if (replicas == 0) return InvalidArgument("at least one replica is needed");
  if (results != nullptr) results->resize(replicas);
  if (s.plan().replicated()) {
    // A replicated plan: one device per replica, all in lockstep.
    while (s.devices.size() < replicas) {
      DETRAIN_ASSIGN_OR_RETURN(auto device,
                               s.factory->MakeDevice(static_cast<int>(s.devices.size()),
                                                     /*whole_plan=*/true));
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
  s.results_kept = replicas == 1;
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
  const pb::Plan& plan = this->plan();
  const std::vector<plan::Array>& buffers = this->buffers();
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
      const plan::Array& b = buffers[static_cast<size_t>(p.buffers(0))];
      const ir::Literal* arg = args != nullptr ? (*args)[r][static_cast<size_t>(i)] : nullptr;
      if (args != nullptr && arg == nullptr) {
        // RunKeep's resident argument: already in this one device's arena, where it is read.
        if (static_cast<size_t>(i) >= resident.size() || !resident[static_cast<size_t>(i)])
          return InvalidArgument("argument " + std::to_string(i) + " is missing");
        present[0][static_cast<size_t>(b.id)] = 1;
        ++resident_arguments;
        continue;
      }
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
    const plan::Array& ref = buffers[static_cast<size_t>(b)];
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

  if (OneDevice()) {  // (a cluster has more than one rank)
    // Every kernel on the one device, whose operands the plan reader checked are defined before
    // it: nothing to track or transfer (a small step's walk would cost as much as its kernels).
    Device& only = *devices[0];
    for (const pb::Kernel& k : plan.kernels()) {
      if (k.has_alias()) continue;
      DETRAIN_RETURN_IF_ERROR(only.Launch(k.id()));
      ++stats.kernel_launches;
    }
    if (results == nullptr) return Status::Ok();
    std::vector<ir::Literal>& out = (*results)[first];
    out.resize(static_cast<size_t>(plan.outputs_size()));
    for (int o = 0; o < plan.outputs_size(); ++o) {
      DETRAIN_RETURN_IF_ERROR(CopyResult(only, buffers[static_cast<size_t>(plan.outputs(o))],
                                         &out[static_cast<size_t>(o)]));
    }
    return Status::Ok();
  }

  for (const pb::Kernel& k : plan.kernels()) {
    if (k.has_alias()) continue;
    if (k.has_all_reduce()) {  // replicated plans only: one process
      DETRAIN_RETURN_IF_ERROR(HostAllReduce(checked->kernel(k.id()), devices, nd));
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
      DETRAIN_RETURN_IF_ERROR(CopyResult(*device(dev), buffers[static_cast<size_t>(b)],
                                         &(*out)[static_cast<size_t>(o)]));
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
