// The cost of an exact cross-process sum (docs/scale-out.md): on the same buffers of n floats
// per rank, MPI_Allreduce(MPI_SUM) — whose algorithm Open MPI picks from P and n, so its order
// of additions (and its bits) may change with either — next to what detrain does instead: the
// pairwise tree over the ranks in rank order (rank r adds rank r + s's partial sum to its own at
// stride s = 1, 2, 4, ...), with detrain's own transport (runtime/mpi), then the sum sent back
// down the same tree so every rank holds it, as an all-reduce leaves it; an all-gather
// followed by the same tree on every rank; and runtime::ExactAllReduceSum, the same tree's bits
// by reduce-scatter then all-gather (each rank sums 1/P of the elements; SendRecv rounds).
//
//   mpirun -np P bench_mpi_reduce [REPETITIONS]
//
// Prints, per size, the median over REPETITIONS (default 200) of each, and their ratio; rank 0
// also checks that the tree's result is the same bits on every rank.
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "runtime/mpi/mpi_cluster.h"

namespace {

using detrain::runtime::Channel;
using detrain::runtime::Cluster;

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// The pairwise tree over ranks, then back down: every rank ends with the root's sum.
void TreeAllReduce(Cluster& c, std::vector<float>* data, std::vector<float>* scratch) {
  const int p = c.size(), r = c.rank();
  const int64_t bytes = static_cast<int64_t>(data->size() * sizeof(float));
  for (int s = 1; s < p; s *= 2) {  // up: partial sums toward rank 0
    if (r % (2 * s) == s) {
      if (!c.Send(r - s, Channel::kData, data->data(), bytes).ok()) std::abort();
      break;
    }
    if (r + s < p) {
      if (!c.Recv(r + s, Channel::kData, scratch->data(), bytes).ok()) std::abort();
      for (size_t i = 0; i < data->size(); ++i) (*data)[i] = (*data)[i] + (*scratch)[i];
    }
  }
  int top = 1;
  while (top * 2 < p) top *= 2;
  for (int s = top; s >= 1; s /= 2) {  // down: the sum from rank 0 to everyone
    if (r % (2 * s) == 0 && r + s < p) {
      if (!c.Send(r + s, Channel::kData, data->data(), bytes).ok()) std::abort();
    } else if (r % (2 * s) == s) {
      if (!c.Recv(r - s, Channel::kData, data->data(), bytes).ok()) std::abort();
    }
  }
}

// MPI_Allgather (which only moves bytes) and then, on every rank, the pairwise tree over the P
// gathered buffers in rank order: the same bits everywhere, in one round of communication.
void GatherThenTree(int p, std::vector<float>* data, std::vector<float>* gathered) {
  const size_t n = data->size();
  MPI_Allgather(data->data(), static_cast<int>(n), MPI_FLOAT, gathered->data(), static_cast<int>(n),
                MPI_FLOAT, MPI_COMM_WORLD);
  for (int s = 1; s < p; s *= 2) {
    for (int r = 0; r + s < p; r += 2 * s) {
      float* a = gathered->data() + static_cast<size_t>(r) * n;
      const float* b = gathered->data() + static_cast<size_t>(r + s) * n;
      for (size_t i = 0; i < n; ++i) a[i] = a[i] + b[i];
    }
  }
  std::memcpy(data->data(), gathered->data(), n * sizeof(float));
}

}  // namespace

int main(int argc, char** argv) {
  const int reps = argc > 1 ? std::atoi(argv[1]) : 200;
  auto joined = detrain::runtime::mpi::Join(300);
  if (!joined.ok() || *joined == nullptr) {
    std::fprintf(stderr, "run under mpirun: mpirun -np P %s\n", argv[0]);
    return 2;
  }
  Cluster& c = **joined;
  if (c.rank() == 0) {
    std::printf("P = %d, %d repetitions, medians\n%10s %14s %16s %6s %18s %6s %16s %6s\n", c.size(),
                reps, "floats", "MPI_Allreduce", "tree down+up", "ratio", "allgather+tree", "ratio",
                "exact RS+AG", "ratio");
  }
  for (int64_t n : {1024, 16384, 262144, 1048576}) {
    std::vector<float> input(static_cast<size_t>(n)), data, scratch(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i)
      input[static_cast<size_t>(i)] = 1.0f / static_cast<float>(1 + ((i * 7919 + c.rank()) % 1000));
    std::vector<double> mpi_s, tree_s, gather_s, exact_s;
    std::vector<float> gathered(static_cast<size_t>(n) * static_cast<size_t>(c.size()));
    std::vector<float> via_gather, via_exact, exact_scratch;
    for (int k = 0; k < reps; ++k) {
      data = input;
      MPI_Barrier(MPI_COMM_WORLD);
      auto t0 = std::chrono::steady_clock::now();
      MPI_Allreduce(MPI_IN_PLACE, data.data(), static_cast<int>(n), MPI_FLOAT, MPI_SUM,
                    MPI_COMM_WORLD);
      auto t1 = std::chrono::steady_clock::now();
      data = input;
      MPI_Barrier(MPI_COMM_WORLD);
      auto t2 = std::chrono::steady_clock::now();
      TreeAllReduce(c, &data, &scratch);
      auto t3 = std::chrono::steady_clock::now();
      via_gather = input;
      MPI_Barrier(MPI_COMM_WORLD);
      auto t4 = std::chrono::steady_clock::now();
      GatherThenTree(c.size(), &via_gather, &gathered);
      auto t5 = std::chrono::steady_clock::now();
      via_exact = input;
      MPI_Barrier(MPI_COMM_WORLD);
      auto t6 = std::chrono::steady_clock::now();
      if (!detrain::runtime::ExactAllReduceSum(c, via_exact.data(), n, &exact_scratch).ok())
        std::abort();
      auto t7 = std::chrono::steady_clock::now();
      exact_s.push_back(std::chrono::duration<double>(t7 - t6).count());
      gather_s.push_back(std::chrono::duration<double>(t5 - t4).count());
      mpi_s.push_back(std::chrono::duration<double>(t1 - t0).count());
      tree_s.push_back(std::chrono::duration<double>(t3 - t2).count());
    }
    // Every rank holds the root's bits.
    std::vector<float> root = data;
    MPI_Bcast(root.data(), static_cast<int>(n), MPI_FLOAT, 0, MPI_COMM_WORLD);
    int same = std::memcmp(root.data(), data.data(), data.size() * sizeof(float)) == 0 &&
               std::memcmp(root.data(), via_gather.data(), data.size() * sizeof(float)) == 0 &&
               std::memcmp(root.data(), via_exact.data(), data.size() * sizeof(float)) == 0,
        all = 0;
    MPI_Allreduce(&same, &all, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
    if (c.rank() == 0) {
      const double a = Median(mpi_s), b = Median(tree_s), g = Median(gather_s), e = Median(exact_s);
      std::printf("%10lld %11.1f us %13.1f us %5.2fx %15.1f us %5.2fx %13.1f us %5.2fx%s\n",
                  static_cast<long long>(n), a * 1e6, b * 1e6, b / a, g * 1e6, g / a, e * 1e6,
                  e / a, all ? "" : "  RANKS DIFFER");
    }
  }
  detrain::runtime::mpi::Leave();
  return 0;
}
