// The executor: runs a v2 plan (stage 4) on a mesh of D in-process devices — CPU devices with a
// thread pool of T threads and an ISA path, or CUDA devices running the plan's generated CUDA
// program (codegen/cuda, runtime/cuda) on the machine's GPUs — and gives the same bits for every
// backend, D, T and ISA. The plan is read and validated once (compiler/plan/reader.h); the
// devices come from the device factory (device_factory.h): the executor names no backend.
//
// The mesh (DESIGN.md §2 "Canonical shards"; schemas/plan.md "Shards and devices"): the
// plan does not depend on D. Each kernel carries the range of the batch's S canonical shards
// its value depends on; device d holds shards [d S/D, (d+1) S/D). A kernel whose range lies in
// one device's shards runs there; a kernel whose range spans devices — an upper level of the
// shard tree — runs on the device of its lowest shard after the operands it lacks are
// transferred to it; a kernel that depends on no shard runs on every device that uses its value
// (device 0 for the entry's results). Every kernel therefore computes the same function of the
// same operand bytes on whichever device runs it: D changes where work happens, never a bit.
// A plan with all-reduce (an imported replicated module) runs one device per replica in
// lockstep; the all-reduce is the pairwise tree over each replica group, in group order,
// computed on the host from the replicas' copies.
//
// Processes (cluster.h): with a cluster of P ranks the mesh is P × D devices, rank p holding
// devices [p D, (p+1) D); every rank walks the same schedule, runs the kernels of its devices and
// sends or receives the buffers a kernel on another rank lacks. Rank 0 is given the arguments
// and sends each follower the parameters its devices use; the results are gathered on device 0
// (rank 0). Followers call Follow for each of rank 0's runs.
//
// CUDA devices: device d runs on GPU d mod G (several devices may share one GPU, each with its
// own arena); a transfer between devices on two GPUs is an NCCL send/receive, on one GPU a copy.
//
// Thread safety: one Run at a time per executor.
#ifndef DETRAIN_RUNTIME_EXECUTOR_H_
#define DETRAIN_RUNTIME_EXECUTOR_H_

#include <memory>
#include <optional>
#include <string_view>
#include <vector>

#include "base/isa.h"
#include "base/status.h"
#include "compiler/ir/literal.h"
#include "runtime/cluster.h"
#include "runtime/device.h"
#include "schemas/plan.pb.h"

namespace detrain::runtime {

struct ExecutorOptions {
  int threads = 1;         // the pool's size (CPU devices); never changes a bit
  std::optional<Isa> isa;  // default BestIsa(); an unsupported one is an error. Never hashed.
  int devices = 1;         // D in {1, 2, 4, 8}, dividing the plan's shard count S
  Backend backend = Backend::kCpu;
  // CPU: elementwise programs as generated loops compiled at load time by the C++ compiler
  // detrain was built with (docs/fused-loops.md), not the evaluator. Never changes a bit.
  bool generated_loops = false;
  // With generated_loops: where this machine cannot compile them, the evaluator (no error).
  bool loops_fallback = false;
  // What only `backend` reads, passed to it unread (cuda/cuda_backend.h CudaOptions: the program
  // and images a compile made, an emulator's GPUs); null: the backend's defaults.
  std::shared_ptr<const BackendOptions> backend_options;
  // Set, with more than one rank: this process is one rank of a mesh of P × `devices` devices,
  // whose count must divide the plan's shards. Never changes a bit.
  std::shared_ptr<Cluster> cluster;
};

struct ExecutorStats {
  int64_t kernel_launches = 0;  // summed over devices
  int64_t transfers = 0;        // buffers copied between devices
  int64_t transfer_bytes = 0;
  // Exact kernel rewrites made when the plan was loaded (device 0; cpu/plan_folds.h): dots
  // computing a transpose's layout, and add trees of dots run as one GemmTree.
  int64_t folded_transposes = 0;
  int64_t folded_dot_trees = 0;
  int64_t folded_scalar_broadcasts = 0;  // broadcasts of a scalar read as that scalar
  int64_t fused_elementwise = 0;         // elementwise kernels run block by block in groups
  int64_t generated_loops = 0;           // elementwise programs run as generated loops (device 0)
  int64_t views = 0;  // buffers placed inside another, where the plan copies them (device 0)
  // What ran it, for environment.json: "cpu (avx2, 4 threads)" or each GPU's description.
  std::vector<std::string> devices;
};

class Executor {
 public:
  // Reads and validates a serialized plan (a hostile file gets an error, never a crash) and
  // loads it on this rank's devices.
  static Result<std::unique_ptr<Executor>> Create(std::string_view plan_bytes,
                                                  const ExecutorOptions& options);
  ~Executor();

  // `args[r]`: the entry parameters of replica r (one replica unless the plan is replicated),
  // matching the plan's parameter shapes. Returns, per replica, the entry's result arrays in
  // tuple order (flattened).
  Result<std::vector<std::vector<ir::Literal>>> Run(
      const std::vector<std::vector<ir::Literal>>& args);

  // Run for one replica (an unreplicated plan) without copies: the arguments are borrowed, and
  // `results` is resized to the entry's result arrays, each literal already there with its
  // result's shape overwritten in place. A train loop that keeps `results` between steps (and
  // feeds them back as arguments) allocates nothing per step.
  Status RunInto(const std::vector<const ir::Literal*>& args, std::vector<ir::Literal>* results);

  // Run for one replica (an unreplicated plan) with borrowed arguments, its results left on the
  // devices: ReadResult copies result `index` (tuple order, flattened) into `out` — in place when
  // `out` already has its shape — until the next run. The arguments are in the devices before any
  // kernel runs, so a result may be read into the literal that was its argument: a train loop
  // reads the loss first and then the new state over the old one, and holds one copy of its
  // state on the host.
  Status RunKeep(const std::vector<const ir::Literal*>& args);
  Status ReadResult(int index, ir::Literal* out);
  // The chunked XXH3-128 digests (attest/state_digest.h, policy xxh3-128-chunked) of kept
  // results `indices`, result indices[i] hashed after prefixes[i], computed where they lie
  // (Device::DigestBuffers): 16 canonical bytes each, in order, into `out`. A train loop digests
  // its state every step this way without copying it to the host.
  Status DigestResults(const std::vector<int>& indices, const std::vector<std::string>& prefixes,
                       std::string* out);

  // Resident state (XLA's input/output aliasing, as a train loop uses it): `carry[i]` names the
  // result (tuple order, flattened) that parameter i takes from the run before, or -1; its
  // array type must be the parameter's. Then a null argument i of RunKeep, after a RunKeep whose
  // results are kept, takes that result where it lies: on one device, a result that the plan
  // donated its parameter's slice to (plan format 3) is already where the parameter is read, and
  // nothing is copied; any other carried result is read out before the run and copied in (the
  // bits are the same either way). A train loop passes its state once and then nulls, and copies
  // a result out only when it needs it on the host.
  Status SetCarry(std::vector<int> carry);
  // Whether parameter i's carried result lies where the parameter is read (no copy at all).
  bool CarriedInPlace(int parameter) const;
  // Arguments a run took in place, summed over runs (ExecutorStats-like; for tests and benches).
  int64_t resident_arguments() const;

  // A follower rank's part (rank > 0 of a cluster): waits for rank 0's next message and, for a
  // run, takes part in it — rank 0's Run or RunInto. Returns false, with the value rank 0 sent,
  // when rank 0 says stop.
  Result<bool> Follow(int64_t* stop_value);

  const plan::v2::Plan& plan() const;
  const ExecutorStats& stats() const;
  // This rank's devices' traffic, summed (Device::Traffic): the launches and the bytes between
  // the host and GPUs that a step costs, measured the same way with or without a profiler.
  DeviceTraffic Traffic() const;
  Isa isa() const;

 private:
  Executor();
  Status RunBorrowed(const std::vector<std::vector<const ir::Literal*>>& args,
                     std::vector<std::vector<ir::Literal>>* results);
  struct State;
  std::unique_ptr<State> state_;
};

// Flattens a (possibly nested tuple) literal into its array leaves, in tuple order.
std::vector<ir::Literal> FlattenLiteral(const ir::Literal& literal);

}  // namespace detrain::runtime

#endif  // DETRAIN_RUNTIME_EXECUTOR_H_
