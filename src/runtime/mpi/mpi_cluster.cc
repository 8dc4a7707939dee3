// See mpi_cluster.h. Transfers are nonblocking requests polled against a deadline, so a dead or
// hung rank becomes an error naming it instead of a process that never returns.
#include "runtime/mpi/mpi_cluster.h"

#include <cstdlib>

#if DETRAIN_HAVE_MPI
#include <mpi.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <thread>
#include <vector>
#endif

namespace detrain::runtime::mpi {

// The one environment read in detrain, and not a hidden input (DESIGN.md §2): the launcher's
// variables are how a process learns it is one of P (MPI_Init reads the same ones), and P
// reaches no hashed artifact — a run on any P has the single process's stages and step hashes
// (tests/evidence/cluster_run_test.cc, tests/cli/mpi_test.py); it is recorded in environment.json
// only. Never consulted on another path.
bool LaunchedByLauncher() {
  for (const char* name : {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_SIZE"}) {
    if (std::getenv(name) != nullptr) return true;
  }
  return false;
}

#if DETRAIN_HAVE_MPI

bool Available() { return true; }

namespace {

bool g_joined = false;

constexpr int64_t kChunk = int64_t{1} << 30;  // MPI counts are int
// SendRecv's small exchanges (SmallSendRecv).
constexpr int64_t kSmallExchange = 16 << 10;
constexpr int64_t kEagerPiece = 2 << 10;

std::string ErrorString(int code) {
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  if (MPI_Error_string(code, text, &length) != MPI_SUCCESS)
    return "MPI error " + std::to_string(code);
  return std::string(text, static_cast<size_t>(length));
}

class MpiCluster final : public Cluster {
 public:
  MpiCluster(int rank, int size, std::vector<std::string> hosts, double timeout)
      : rank_(rank), size_(size), hosts_(std::move(hosts)), timeout_(timeout) {}
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::string Describe(int r) const override {
    std::string host = r >= 0 && r < size_ ? hosts_[static_cast<size_t>(r)] : "?";
    return "rank " + std::to_string(r) + " (host " + host + ")";
  }
  std::string host() const override { return hosts_[static_cast<size_t>(rank_)]; }

  Status Send(int to, Channel channel, const void* data, int64_t bytes) override {
    return Transfer(/*send=*/true, to, channel, const_cast<void*>(data), bytes);
  }
  Status Recv(int from, Channel channel, void* data, int64_t bytes) override {
    return Transfer(/*send=*/false, from, channel, data, bytes);
  }
  // Both directions posted before either is waited for, piece by piece as Transfer cuts them.
  Status SendRecv(int to, Channel channel, const void* send, int64_t send_bytes, int from,
                  void* recv, int64_t recv_bytes) override {
    for (int peer : {to, from}) {
      if (peer < 0 || peer >= size_ || peer == rank_)
        return Internal("cluster: bad peer " + std::to_string(peer));
    }
    if (send_bytes < 0 || recv_bytes < 0) return Internal("cluster: negative transfer");
    const char* out = static_cast<const char*>(send);
    char* in = static_cast<char*>(recv);
    const int tag = static_cast<int>(channel);
    if (send_bytes <= kSmallExchange && recv_bytes <= kSmallExchange)
      return SmallSendRecv(to, tag, out, send_bytes, from, in, recv_bytes);
    int64_t sent = 0, received = 0;
    bool first = true;  // a 0-byte transfer is still one message, as in Transfer
    while (first || sent < send_bytes || received < recv_bytes) {
      const bool do_send = first || sent < send_bytes, do_recv = first || received < recv_bytes;
      const int scount = static_cast<int>(std::min(kChunk, send_bytes - sent));
      const int rcount = static_cast<int>(std::min(kChunk, recv_bytes - received));
      MPI_Request requests[2];
      if (do_send) {
        int rc = MPI_Isend(const_cast<char*>(out) + sent, scount, MPI_BYTE, to, tag, MPI_COMM_WORLD,
                           &requests[0]);
        if (rc != MPI_SUCCESS)
          return IoError("MPI send to " + Describe(to) + ": " + ErrorString(rc));
      }
      if (do_recv) {
        int rc =
            MPI_Irecv(in + received, rcount, MPI_BYTE, from, tag, MPI_COMM_WORLD, &requests[1]);
        if (rc != MPI_SUCCESS)
          return IoError("MPI receive from " + Describe(from) + ": " + ErrorString(rc));
      }
      // Both polled in one loop: neither waits for the other's deadline checks.
      Pending pending[2] = {{&requests[0], true, to, scount, !do_send},
                            {&requests[1], false, from, rcount, !do_recv}};
      DETRAIN_RETURN_IF_ERROR(Wait(pending, 2));
      if (do_send) sent += scount;
      if (do_recv) received += rcount;
      first = false;
    }
    return Status::Ok();
  }
  void Abort(int exit_code) override { MPI_Abort(MPI_COMM_WORLD, exit_code); }

 private:
  // An exchange of at most kSmallExchange bytes each way goes as pieces of at most kEagerPiece
  // bytes, all in flight at once: each fits Open MPI's shared-memory eager size (4 KiB with its
  // header), so it needs no rendezvous round trip. Both sides cut a transfer of the same size
  // into the same pieces, so they match in order.
  Status SmallSendRecv(int to, int tag, const char* out, int64_t send_bytes, int from, char* in,
                       int64_t recv_bytes) {
    constexpr int kMaxPieces = static_cast<int>(kSmallExchange / kEagerPiece) + 1;
    MPI_Request requests[2 * kMaxPieces];
    Pending pending[2 * kMaxPieces];
    int n = 0;
    auto pieces = [](int64_t bytes) {
      return bytes == 0 ? 1 : (bytes + kEagerPiece - 1) / kEagerPiece;
    };
    for (int64_t k = 0; k < pieces(send_bytes); ++k) {
      const int count = static_cast<int>(std::min(kEagerPiece, send_bytes - k * kEagerPiece));
      int rc = MPI_Isend(const_cast<char*>(out) + k * kEagerPiece, count, MPI_BYTE, to, tag,
                         MPI_COMM_WORLD, &requests[n]);
      if (rc != MPI_SUCCESS) return IoError("MPI send to " + Describe(to) + ": " + ErrorString(rc));
      pending[n] = {&requests[n], true, to, count, false};
      ++n;
    }
    for (int64_t k = 0; k < pieces(recv_bytes); ++k) {
      const int count = static_cast<int>(std::min(kEagerPiece, recv_bytes - k * kEagerPiece));
      int rc =
          MPI_Irecv(in + k * kEagerPiece, count, MPI_BYTE, from, tag, MPI_COMM_WORLD, &requests[n]);
      if (rc != MPI_SUCCESS)
        return IoError("MPI receive from " + Describe(from) + ": " + ErrorString(rc));
      pending[n] = {&requests[n], false, from, count, false};
      ++n;
    }
    return Wait(pending, n);
  }

  Status Transfer(bool send, int peer, Channel channel, void* data, int64_t bytes) {
    if (peer < 0 || peer >= size_ || peer == rank_ || bytes < 0)
      return Internal("cluster: bad peer " + std::to_string(peer));
    char* p = static_cast<char*>(data);
    int64_t done = 0;
    do {
      const int count = static_cast<int>(std::min(kChunk, bytes - done));
      MPI_Request request;
      const int tag = static_cast<int>(channel);
      int rc = send ? MPI_Isend(p + done, count, MPI_BYTE, peer, tag, MPI_COMM_WORLD, &request)
                    : MPI_Irecv(p + done, count, MPI_BYTE, peer, tag, MPI_COMM_WORLD, &request);
      if (rc != MPI_SUCCESS)
        return IoError("MPI " + std::string(send ? "send to " : "receive from ") + Describe(peer) +
                       ": " + ErrorString(rc));
      Pending pending = {&request, send, peer, count, false};
      DETRAIN_RETURN_IF_ERROR(Wait(&pending, 1));
      done += count;
    } while (done < bytes);
    return Status::Ok();
  }

  // One request of a Wait: a send or receive of `count` bytes with `peer`; `done` once complete.
  struct Pending {
    MPI_Request* request;
    bool send;
    int peer;
    int count;
    bool done;
  };

  // Polls the `n` requests until all complete or the deadline passes. MPI moves a large message
  // only while it is polled (the rendezvous protocol), so the first 20 ms poll without sleeping
  // (yielding the core to other processes); a longer wait — a follower waiting while rank 0
  // evaluates or writes a checkpoint — polls every 200 µs.
  Status Wait(Pending* pending, int n) {
    const auto start = std::chrono::steady_clock::now();
    const auto busy_until = start + std::chrono::milliseconds(20);
    const auto deadline = start + std::chrono::duration<double>(timeout_);
    for (;;) {
      bool all = true;
      for (int i = 0; i < n; ++i) {
        Pending& p = pending[i];
        if (p.done) continue;
        int flag = 0;
        MPI_Status status;
        int rc = MPI_Test(p.request, &flag, &status);
        if (rc != MPI_SUCCESS)
          return IoError("MPI transfer with " + Describe(p.peer) + ": " + ErrorString(rc));
        if (!flag) {
          all = false;
          continue;
        }
        p.done = true;
        if (!p.send) {
          int received = 0;
          MPI_Get_count(&status, MPI_BYTE, &received);
          if (received != p.count) {
            return Internal(Describe(p.peer) + " sent " + std::to_string(received) +
                            " bytes where " + std::to_string(p.count) + " were expected");
          }
        }
      }
      if (all) return Status::Ok();
      const auto now = std::chrono::steady_clock::now();
      if (now < busy_until) {
        sched_yield();
        continue;
      }
      if (now > deadline) {
        for (int i = 0; i < n; ++i) {
          if (pending[i].done) continue;
          return FailedPrecondition(Describe(pending[i].peer) +
                                    (pending[i].send ? " took nothing" : " sent nothing") +
                                    " for " + std::to_string(static_cast<int64_t>(timeout_)) +
                                    " s: it died or hangs (--rank-timeout sets the bound)");
        }
      }
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
  }

  int rank_, size_;
  std::vector<std::string> hosts_;
  double timeout_;
};

}  // namespace

Result<std::shared_ptr<Cluster>> Join(double timeout_seconds) {
  if (!LaunchedByLauncher()) return std::shared_ptr<Cluster>();
  if (!(timeout_seconds > 0)) return InvalidArgument("--rank-timeout must be positive");
  if (!g_joined) {
    int provided = 0;
    int rc = MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SERIALIZED, &provided);
    if (rc != MPI_SUCCESS) return IoError("MPI does not start: " + ErrorString(rc));
    if (provided < MPI_THREAD_SERIALIZED) {
      return FailedPrecondition("this MPI offers no MPI_THREAD_SERIALIZED");
    }
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    g_joined = true;
  }
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  char name[MPI_MAX_PROCESSOR_NAME] = {};
  int length = 0;
  MPI_Get_processor_name(name, &length);
  std::vector<char> all(static_cast<size_t>(size) * MPI_MAX_PROCESSOR_NAME, '\0');
  int rc = MPI_Allgather(name, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, all.data(), MPI_MAX_PROCESSOR_NAME,
                         MPI_CHAR, MPI_COMM_WORLD);
  if (rc != MPI_SUCCESS) return IoError("MPI: exchanging host names: " + ErrorString(rc));
  std::vector<std::string> hosts;
  for (int r = 0; r < size; ++r) {
    const char* h = all.data() + static_cast<size_t>(r) * MPI_MAX_PROCESSOR_NAME;
    hosts.emplace_back(h, strnlen(h, MPI_MAX_PROCESSOR_NAME));
  }
  return std::shared_ptr<Cluster>(
      std::make_shared<MpiCluster>(rank, size, std::move(hosts), timeout_seconds));
}

void Leave() {
  if (!g_joined) return;
  MPI_Finalize();
  g_joined = false;
}

#else  // !DETRAIN_HAVE_MPI

bool Available() { return false; }

Result<std::shared_ptr<Cluster>> Join(double) {
  if (!LaunchedByLauncher()) return std::shared_ptr<Cluster>();
  return FailedPrecondition(
      "started by an MPI launcher, but this detrain was built without MPI (apt-get install "
      "libopenmpi-dev, then rebuild)");
}

void Leave() {}

#endif

}  // namespace detrain::runtime::mpi
