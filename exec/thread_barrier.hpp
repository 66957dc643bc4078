// thread_barrier.hpp: a reusable barrier for a fixed number of threads (C++17 has no
// std::barrier), used where measurements start threads' timed work together. It models nothing;
// it leaves out timeouts (a thread that never arrives blocks the others).
#pragma once

#include <condition_variable>
#include <mutex>

namespace tauplan::exec {

class ThreadBarrier {
 public:
  explicit ThreadBarrier(int count) : count_(count) {}
  /// Blocks until `count` threads have called it; then all return and the barrier is reused.
  void wait() {
    std::unique_lock<std::mutex> lock(mutex_);
    const long generation = generation_;
    if (++arrived_ == count_) {
      arrived_ = 0;
      ++generation_;
      cv_.notify_all();
      return;
    }
    cv_.wait(lock, [&] { return generation != generation_; });
  }

 private:
  std::mutex mutex_;
  std::condition_variable cv_;
  int count_, arrived_ = 0;
  long generation_ = 0;
};

}  // namespace tauplan::exec
