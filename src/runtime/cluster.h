// The processes of one run (docs/scale-out.md): P ranks, launched and connected by an existing
// engine (MPI: runtime/mpi/mpi_cluster.h), that move bytes point to point. Nothing here adds
// numbers: every cross-process sum is the shard tree the plan already holds, run in the plan's
// own kernels on whichever device the mesh puts it (executor.h), so P changes where work
// happens and never a bit.
//
// Protocol. Rank 0 runs the program — the trainer, the bundle, the verifier — exactly as a
// single process does; ranks 1..P-1 follow: they compile the same program, check with rank 0
// that their stages are identical (Handshake), then serve the train step's executor until rank 0
// says stop (Executor::Follow). Every rank walks the same schedule, so each knows which bytes it
// sends and receives and in what order; messages between two ranks on one channel arrive in the
// order they were sent (MPI's non-overtaking rule).
//
// Faults. Every wait is bounded (`timeout_seconds`): a rank that died or hangs makes its peer's
// Send or Recv fail with a message naming it (rank, host), and the run stops there.
//
// Thread safety: one thread at a time uses a cluster.
#ifndef DETRAIN_RUNTIME_CLUSTER_H_
#define DETRAIN_RUNTIME_CLUSTER_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "base/status.h"

namespace detrain::runtime {

enum class Channel : int {
  kControl = 1,  // rank 0 to followers: what to do next
  kData = 2,     // parameters and the mesh's transfers
  kHandshake = 3,
};

class Cluster {
 public:
  virtual ~Cluster() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  // Where rank r runs ("rank 1 (host node2)"), for messages and environment.json.
  virtual std::string Describe(int rank) const = 0;
  // This process's host name.
  virtual std::string host() const = 0;
  // Blocking point-to-point transfers of exactly `bytes` bytes, bounded by the timeout.
  virtual Status Send(int to, Channel channel, const void* data, int64_t bytes) = 0;
  virtual Status Recv(int from, Channel channel, void* data, int64_t bytes) = 0;
  // Sends `send_bytes` to `to` and receives `recv_bytes` from `from` with both transfers in
  // flight at once, so that ranks exchanging in a ring or pairwise never wait on each other's
  // send. The default sends, then receives: right for a transport whose sends never block.
  virtual Status SendRecv(int to, Channel channel, const void* send, int64_t send_bytes, int from,
                          void* recv, int64_t recv_bytes) {
    DETRAIN_RETURN_IF_ERROR(Send(to, channel, send, send_bytes));
    return Recv(from, channel, recv, recv_bytes);
  }
  // Stops every process of the run at once (after a transfer failed half-way, the others cannot
  // be told in order). Does not return for a real launcher.
  virtual void Abort(int exit_code) = 0;

  // A transfer failed half-way: the ranks are out of step, and only Abort can stop them.
  bool broken() const { return broken_; }
  void set_broken() { broken_ = true; }

 private:
  bool broken_ = false;
};

// Control messages from rank 0 to each follower.
enum class Control : int64_t { kStop = 0, kRunStep = 1 };
Status SendControl(Cluster& c, int to, Control what, int64_t value);
// Returns {what, value}.
Result<std::pair<Control, int64_t>> RecvControl(Cluster& c, int from);

// Strings of at most `max_bytes`, length first.
Status SendString(Cluster& c, int to, Channel channel, const std::string& s);
Result<std::string> RecvString(Cluster& c, int from, Channel channel, int64_t max_bytes);

// Every rank's `mine`, in rank order, on rank 0 (the others get an empty vector).
Result<std::vector<std::string>> GatherToRankZero(Cluster& c, const std::string& mine,
                                                  int64_t max_bytes);
// Rank 0's `value` on every rank.
Result<std::string> BroadcastFromRankZero(Cluster& c, const std::string& value, int64_t max_bytes);

// The sum over the ranks of every rank's `data` (n floats), left in `data` on every rank: for
// each element, the pairwise tree over the ranks' values in rank order (pairs (2j, 2j+1) level by
// level, an odd last carried up), with the NaN rule of compiler/semantics — so the bits are the
// same for any P and on every rank, where MPI_Allreduce's are whatever its algorithm for this P
// and n gives. The schedule depends on P and n, never the bits: for a power-of-two P, recursive
// doubling of whole partials up to 4,096 floats (log2 P rounds) and recursive halving then
// doubling above (each halving round one level of the tree; each rank sends and receives
// 2 (P - 1) / P × n floats); for other P, a ring-ordered reduce-scatter — rank q sums elements
// [q n / P, (q + 1) n / P) from every rank's copy in the tree's order — then all-gather, in
// P - 1 rounds of SendRecv each way. `scratch` is resized to about n floats.
Status ExactAllReduceSum(Cluster& c, float* data, int64_t n, std::vector<float>* scratch);

// P ranks as threads of this process, for tests: the same protocol without a launcher.
// MakeLocalClusters(P) returns one cluster per rank; each must be used by its own thread.
std::vector<std::shared_ptr<Cluster>> MakeLocalClusters(int ranks, double timeout_seconds = 60);

}  // namespace detrain::runtime

#endif  // DETRAIN_RUNTIME_CLUSTER_H_
