// A fixed-size thread pool with a deterministic ParallelFor.
//
// ParallelFor(n, fn) calls fn(i) exactly once for every i in [0, n). Which thread runs which i
// is unspecified, so fn must write only to state owned by index i; any combination of per-index
// results must then be done by the caller in index order. That is how every parallel computation
// in detrain stays independent of the thread count.
//
// Thread safety: ParallelFor may be called from one thread at a time per pool. A pool of size 1
// runs everything on the calling thread.
#ifndef DETRAIN_BASE_THREAD_POOL_H_
#define DETRAIN_BASE_THREAD_POOL_H_

#include <condition_variable>
#include <cstddef>
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
  void RunIndices();

  size_t num_threads_;
  std::vector<std::thread> workers_;
  std::mutex mu_;
  std::condition_variable work_cv_;
  std::condition_variable done_cv_;
  const std::function<void(size_t)>* fn_ = nullptr;  // guarded by mu_
  size_t n_ = 0;
  size_t next_ = 0;    // guarded by mu_
  size_t active_ = 0;  // workers inside RunIndices
  size_t generation_ = 0;
  bool stop_ = false;
};

}  // namespace detrain

#endif  // DETRAIN_BASE_THREAD_POOL_H_
