// A fixed-size thread pool with a deterministic ParallelFor.
//
// ParallelFor(n, fn) calls fn(i) exactly once for every i in [0, n). Which thread runs which i
// is unspecified, so fn must write only to state owned by index i; any combination of per-index
// results must then be done by the caller in index order. That is how every parallel computation
// in detrain stays independent of the thread count.
//
// Thread safety: ParallelFor may be called from one thread at a time per pool. A pool of size 1
// runs everything on the calling thread.
//
// Hand-off: a train step is hundreds of short kernels, each a ParallelFor, so indices are taken
// with one atomic increment and idle workers spin briefly (kSpins pauses, about 100 µs on the
// development machine) before they sleep on a condition variable: back-to-back calls find them
// awake.
#ifndef DETRAIN_BASE_THREAD_POOL_H_
#define DETRAIN_BASE_THREAD_POOL_H_

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace detrain {

class ThreadPool {
 public:
  // num_threads == 0 means std::thread::hardware_concurrency() (at least 1).
  explicit ThreadPool(size_t num_threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  size_t size() const { return num_threads_; }

  // Runs fn(i) for i in [0, n), on all threads of the pool including the caller; returns when
  // all calls have returned. Indices are handed out dynamically in increasing order.
  void ParallelFor(size_t n, const std::function<void(size_t)>& fn);

 private:
  void WorkerLoop();
  // Takes and runs indices of the current job until none is left.
  void RunIndices(const std::function<void(size_t)>* fn, size_t n);

  size_t num_threads_;
  std::vector<std::thread> workers_;
  std::mutex mu_;  // with work_cv_: sleeping and waking idle workers
  std::condition_variable work_cv_;
  // The current job, written by ParallelFor before it publishes `generation_` (release) and
  // while no worker is inside a job (`busy_` == 0).
  const std::function<void(size_t)>* fn_ = nullptr;
  size_t n_ = 0;
  std::atomic<size_t> next_{0};          // the next index to hand out
  std::atomic<size_t> remaining_{0};     // indices not yet finished
  std::atomic<size_t> busy_{0};          // workers between reading a job and leaving it
  std::atomic<size_t> sleepers_{0};      // workers waiting on work_cv_
  std::atomic<uint64_t> generation_{0};  // the latest job
  std::atomic<uint64_t> finished_{0};    // the latest job whose every index has returned
  std::atomic<bool> stop_{false};
};

}  // namespace detrain

#endif  // DETRAIN_BASE_THREAD_POOL_H_
