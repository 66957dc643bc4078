// bucket_stream.cpp: the stream's thread and its hand-offs with the compute thread.
#include "exec/bucket_stream.hpp"

#include <limits>
#include <stdexcept>
#include <utility>

namespace tauplan::exec {

BucketStream::BucketStream() : thread_([this] { loop(); }) {}

BucketStream::~BucketStream() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

void BucketStream::start_round(std::vector<Bucket> buckets) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (finished_count_ != buckets_.size())
      throw std::logic_error("BucketStream: a round started before the last one was waited for");
    buckets_ = std::move(buckets);
    done_.assign(buckets_.size(), Done{});
    next_ = 0;
    finished_count_ = 0;
    ready_from_ = std::numeric_limits<std::size_t>::max();
    step_ended_ = false;
    error_ = nullptr;
  }
  wake_.notify_all();
}

void BucketStream::mark_ready(std::size_t first) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (first >= ready_from_) return;
    ready_from_ = first;
  }
  wake_.notify_all();
  // On a core shared with the stream's thread, let it start the collective now.
  std::this_thread::yield();
}

void BucketStream::step_done() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    step_ended_ = true;
    ready_from_ = 0;
  }
  wake_.notify_all();
}

BucketStream::Done BucketStream::wait(std::size_t j) {
  std::unique_lock<std::mutex> lock(mutex_);
  if (j >= buckets_.size()) throw std::logic_error("BucketStream: no such bucket in the round");
  finished_.wait(lock, [&] { return finished_count_ > j; });
  if (error_) std::rethrow_exception(error_);
  return done_[j];
}

void BucketStream::wait_all() {
  std::unique_lock<std::mutex> lock(mutex_);
  finished_.wait(lock, [&] { return finished_count_ == buckets_.size(); });
  if (error_) std::rethrow_exception(error_);
}

void BucketStream::loop() {
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    wake_.wait(lock, [&] {
      return stop_ || (next_ < buckets_.size() && ready_from_ <= buckets_[next_].first);
    });
    if (stop_) return;
    const std::size_t j = next_++;
    Done& done = done_[j];
    done.during_backward = !step_ended_;
    // buckets_ stays as it is until every bucket of the round has finished (start_round).
    const std::function<long long()>& job = buckets_[j].job;
    lock.unlock();
    done.enter = Clock::now();
    std::exception_ptr error;
    try {
      done.messages = job();
    } catch (...) {
      error = std::current_exception();
    }
    done.leave = Clock::now();
    lock.lock();
    if (error) {
      // The later buckets are not run: their waits rethrow this one's error.
      error_ = error;
      next_ = buckets_.size();
      finished_count_ = buckets_.size();
    } else {
      finished_count_ = j + 1;
    }
    finished_.notify_all();
  }
}

}  // namespace tauplan::exec
