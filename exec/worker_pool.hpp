// worker_pool.hpp: persistent threads that run one task per worker and wait for all of them.
//
// Used by the concurrent timing mode so that K workers really compute at the same time without
// paying thread creation on every step. run(n, task) calls task(0..n-1), each on its own
// thread, and returns when all have finished; the first exception thrown by a task is
// rethrown. What it leaves out: pinning threads to cores, work stealing.
#pragma once

#include <condition_variable>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace tauplan::exec {

class WorkerPool {
 public:
  explicit WorkerPool(int threads);
  ~WorkerPool();
  WorkerPool(const WorkerPool&) = delete;
  WorkerPool& operator=(const WorkerPool&) = delete;

  int threads() const { return static_cast<int>(threads_.size()); }
  /// Runs task(i) for i in [0, n) on threads 0..n-1 (n <= threads()) and waits for them.
  void run(int n, const std::function<void(int)>& task);

 private:
  void loop(int index);

  std::vector<std::thread> threads_;
  std::mutex mutex_;
  std::condition_variable start_;
  std::condition_variable done_;
  const std::function<void(int)>* task_ = nullptr;
  int active_ = 0;     // tasks in the current batch
  int remaining_ = 0;  // tasks not finished yet
  long long generation_ = 0;
  bool stop_ = false;
  std::exception_ptr error_;
};

}  // namespace tauplan::exec
