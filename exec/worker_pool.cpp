// worker_pool.cpp: a generation counter under one mutex wakes the threads for each batch.
#include "exec/worker_pool.hpp"

#include <cassert>

namespace tauplan::exec {

WorkerPool::WorkerPool(int threads) {
  assert(threads >= 1);
  threads_.reserve(static_cast<std::size_t>(threads));
  for (int i = 0; i < threads; ++i)
    threads_.emplace_back([this, i] { loop(i); });
}

WorkerPool::~WorkerPool() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  start_.notify_all();
  for (std::thread& t : threads_)
    t.join();
}

void WorkerPool::run(int n, const std::function<void(int)>& task) {
  assert(n >= 0 && n <= threads());
  if (n == 0) return;
  std::unique_lock<std::mutex> lock(mutex_);
  task_ = &task;
  active_ = n;
  remaining_ = n;
  error_ = nullptr;
  ++generation_;
  start_.notify_all();
  done_.wait(lock, [this] { return remaining_ == 0; });
  task_ = nullptr;
  if (error_) std::rethrow_exception(error_);
}

void WorkerPool::loop(int index) {
  long long seen = 0;
  for (;;) {
    const std::function<void(int)>* task = nullptr;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      start_.wait(lock, [&] { return stop_ || generation_ != seen; });
      if (stop_) return;
      seen = generation_;
      if (index >= active_) continue;  // not needed in this batch
      task = task_;
    }
    std::exception_ptr error;
    try {
      (*task)(index);
    } catch (...) {
      error = std::current_exception();
    }
    std::lock_guard<std::mutex> lock(mutex_);
    if (error && !error_) error_ = error;
    if (--remaining_ == 0) done_.notify_one();
  }
}

}  // namespace tauplan::exec
