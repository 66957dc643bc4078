// bucket_stream.hpp: gradient buckets all-reduced on a second thread while the backward pass
// runs (PyTorch DDP's overlap), one worker per process.
//
// A round hands the stream its buckets in the order the backward pass produces them (last layers
// first), each as the first index of its slice of the flat gradient and a job that combines the
// slice. The compute thread reports, as the backward pass goes, the lowest index from which the
// gradient is final (mark_ready); the stream's thread runs job j once the gradient is final from
// bucket j's first index on and job j - 1 has ended (so buckets leave in order, as the model's
// plan has them: model/ir/strategy_sync.cpp). wait(j) returns job j's entry and exit times, or
// rethrows what it threw. Under MPI the jobs make MPI calls from this thread while the main
// thread makes none until it has waited for the last one (MPI_THREAD_SERIALIZED).
// step_done() records when the backward pass ended, so that each job says whether it entered
// before that: the measured evidence that communication overlapped computation.
// What it leaves out: more than one bucket in flight at once (NCCL's streams can), a bucket
// rebuilt from the order gradients really arrive in (DDP does this after the first step), and
// cancelling a job already inside a collective (a peer that never comes is the MPI watchdog's).
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace tauplan::exec {

class BucketStream {
 public:
  using Clock = std::chrono::steady_clock;
  struct Bucket {
    std::size_t first = 0;           ///< the slice's first index in the flat gradient
    std::function<long long()> job;  ///< combines the slice; returns the messages it sent
  };
  struct Done {
    Clock::time_point enter, leave;
    long long messages = 0;
    bool during_backward = false;  ///< entered before step_done() was called
  };

  BucketStream();
  ~BucketStream();
  BucketStream(const BucketStream&) = delete;
  BucketStream& operator=(const BucketStream&) = delete;

  /// Starts a round: every index is not final yet, the buckets run in the order given. Call
  /// only when the previous round's buckets have all been waited for.
  void start_round(std::vector<Bucket> buckets);
  /// The gradient is final from `first` on (calls only lower it); yields the calling thread's
  /// core when the mark moved, so the stream's thread can start a bucket at once.
  void mark_ready(std::size_t first);
  /// The backward pass of this round has ended (the whole gradient is final).
  void step_done();
  /// Waits for bucket j of the round; rethrows its exception (and, after one, every later wait).
  Done wait(std::size_t j);
  /// Waits for every bucket of the round.
  void wait_all();

 private:
  void loop();

  std::mutex mutex_;
  std::condition_variable wake_;      // the stream's thread: a round, readiness, or stop
  std::condition_variable finished_;  // waiters: a bucket done
  std::vector<Bucket> buckets_;
  std::vector<Done> done_;
  std::size_t next_ = 0;  // the next bucket to run
  std::size_t finished_count_ = 0;
  std::size_t ready_from_ = 0;
  bool step_ended_ = false;
  bool stop_ = false;
  std::exception_ptr error_;
  std::thread thread_;
};

}  // namespace tauplan::exec
