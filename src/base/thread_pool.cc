// See thread_pool.h.
#include "base/thread_pool.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace detrain {
namespace {

// Pauses an idle worker spends watching for the next job before it sleeps.
constexpr int kSpins = 4096;

inline void Relax() {
#if defined(__x86_64__)
  _mm_pause();
#else
  std::this_thread::yield();
#endif
}

}  // namespace

ThreadPool::ThreadPool(size_t num_threads) : num_threads_(num_threads) {
  if (num_threads_ == 0) num_threads_ = std::max<size_t>(1, std::thread::hardware_concurrency());
  for (size_t i = 1; i < num_threads_; ++i) workers_.emplace_back([this] { WorkerLoop(); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_.store(true);
  }
  work_cv_.notify_all();
  for (auto& t : workers_) t.join();
}

void ThreadPool::RunIndices(const std::function<void(size_t)>* fn, size_t n) {
  for (size_t i = next_.fetch_add(1, std::memory_order_relaxed); i < n;
       i = next_.fetch_add(1, std::memory_order_relaxed)) {
    (*fn)(i);
    remaining_.fetch_sub(1, std::memory_order_release);
  }
}

void ThreadPool::WorkerLoop() {
  uint64_t seen = 0;
  for (;;) {
    for (int spin = 0; spin < kSpins && generation_.load() == seen && !stop_.load(); ++spin)
      Relax();
    if (generation_.load() == seen && !stop_.load()) {
      std::unique_lock<std::mutex> lock(mu_);
      sleepers_.fetch_add(1);
      work_cv_.wait(lock, [&] { return stop_.load() || generation_.load() != seen; });
      sleepers_.fetch_sub(1);
    }
    if (stop_.load()) return;
    busy_.fetch_add(1);
    // Job g's fields stay put while busy_ > 0; a job already finished is skipped unread (its
    // caller may have returned, and the next job may be being written).
    const uint64_t g = generation_.load();
    if (g != seen && finished_.load() != g) RunIndices(fn_, n_);
    seen = g;
    busy_.fetch_sub(1, std::memory_order_release);
  }
}

void ThreadPool::ParallelFor(size_t n, const std::function<void(size_t)>& fn) {
  if (n == 0) return;
  if (workers_.empty() || n == 1) {
    for (size_t i = 0; i < n; ++i) fn(i);
    return;
  }
  // No worker may still be reading the previous job when this one is written.
  while (busy_.load(std::memory_order_acquire) != 0) Relax();
  fn_ = &fn;
  n_ = n;
  next_.store(0, std::memory_order_relaxed);
  remaining_.store(n, std::memory_order_relaxed);
  generation_.fetch_add(1);  // publishes the job (sequentially consistent, as sleepers_ below)
  if (sleepers_.load() != 0) {
    std::lock_guard<std::mutex> lock(mu_);
    work_cv_.notify_all();
  }
  RunIndices(&fn, n);
  // Every index has been handed out; wait for the ones still running, then for the workers
  // to leave the job (fn must outlive their last look at it).
  for (int spin = 0; remaining_.load(std::memory_order_acquire) != 0; ++spin) {
    if (spin < kSpins) {
      Relax();
    } else {
      std::this_thread::yield();
    }
  }
  finished_.store(generation_.load());
  while (busy_.load(std::memory_order_acquire) != 0) std::this_thread::yield();
}

}  // namespace detrain
