// See thread_pool.h.
#include "base/thread_pool.h"

namespace detrain {

ThreadPool::ThreadPool(size_t num_threads) : num_threads_(num_threads) {
  if (num_threads_ == 0) num_threads_ = std::max<size_t>(1, std::thread::hardware_concurrency());
  for (size_t i = 1; i < num_threads_; ++i) workers_.emplace_back([this] { WorkerLoop(); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  work_cv_.notify_all();
  for (auto& t : workers_) t.join();
}

void ThreadPool::RunIndices() {
  for (;;) {
    size_t i;
    const std::function<void(size_t)>* fn;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (fn_ == nullptr || next_ >= n_) return;
      i = next_++;
      fn = fn_;
    }
    (*fn)(i);
  }
}

void ThreadPool::WorkerLoop() {
  size_t seen_generation = 0;
  for (;;) {
    {
      std::unique_lock<std::mutex> lock(mu_);
      work_cv_.wait(lock, [&] { return stop_ || generation_ != seen_generation; });
      if (stop_) return;
      seen_generation = generation_;
      ++active_;
    }
    RunIndices();
    {
      std::lock_guard<std::mutex> lock(mu_);
      --active_;
    }
    done_cv_.notify_all();
  }
}

void ThreadPool::ParallelFor(size_t n, const std::function<void(size_t)>& fn) {
  if (n == 0) return;
  if (workers_.empty() || n == 1) {
    for (size_t i = 0; i < n; ++i) fn(i);
    return;
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    fn_ = &fn;
    n_ = n;
    next_ = 0;
    ++generation_;
  }
  work_cv_.notify_all();
  RunIndices();
  std::unique_lock<std::mutex> lock(mu_);
  // All indices are handed out once next_ == n_; wait for workers still running theirs.
  done_cv_.wait(lock, [&] { return next_ >= n_ && active_ == 0; });
  fn_ = nullptr;
}

}  // namespace detrain
