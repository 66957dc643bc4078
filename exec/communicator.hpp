// communicator.hpp: how K workers combine their flat vectors, behind one interface.
//
// A communicator spans `workers()` workers (K) spread over `size()` processes; this process
// holds `local_workers()` of them, with global indices first_local_worker() onwards. combine()
// takes one buffer per local worker and leaves the combined vector (weighted mean or Adasum,
// see combine.hpp) in every one of them, across all processes. Buffers live in host memory or
// device memory, as memory() says; the trainer checks that its replicas agree.
// Implementations: thread_communicator (K replicas in one process, shared memory),
// thread_message_communicator (K replicas in one process, the plan's collective algorithm as
// messages between threads), mpi_communicator (one worker per rank, the plan's collective algorithm
// as point-to-point messages, server ranks for ps and sparknet), and in exec/cuda/ the device
// communicator (K logical workers on one GPU) and the NCCL communicator (one rank per GPU). The
// defaults below suit a communicator that lives in one process. combine_group() combines over a
// subgroup of the workers (a Plan's collective whose `group` is not all K): the thread and MPI
// communicators run it (runs_subgroups()); the CUDA ones do not, and the trainer refuses such a
// plan on them before it starts. agree_round_start() gives every worker process one instant to
// start a round at (the MPI one estimates each rank's clock offset to rank 0 when the run starts
// and has rank 0 name a start time just ahead of the slowest rank's arrival), instead of the moment
// a barrier releases it. The MPI communicator's combine() may run on a second thread while the
// first waits (combines_from_second_thread(): the trainer's overlap of gradient buckets with the
// backward pass). What it leaves out: non-blocking collectives (two in flight at once), and clock
// drift during a run.
#pragma once

#include <chrono>
#include <cstddef>
#include <stdexcept>
#include <string>
#include <vector>

#include "exec/combine.hpp"

namespace tauplan::exec {

enum class MemorySpace { Host, Device };

class Communicator {
 public:
  virtual ~Communicator() = default;
  Communicator() = default;
  Communicator(const Communicator&) = delete;
  Communicator& operator=(const Communicator&) = delete;

  /// "threads", "thread-messages", "mpi", "device", "nccl".
  virtual std::string name() const = 0;
  /// This process's rank and the number of processes.
  virtual int rank() const = 0;
  virtual int size() const = 0;
  /// K, over all processes.
  virtual int workers() const = 0;
  virtual int local_workers() const = 0;
  virtual int first_local_worker() const = 0;
  virtual MemorySpace memory() const = 0;
  /// Combines, over all K workers, one `n`-float buffer per local worker (weights: the
  /// samples behind each); the result is written into every local buffer.
  virtual void combine(const std::vector<float*>& local_buffers,
                       const std::vector<double>& local_weights, std::size_t n,
                       CombineRule rule) = 0;
  /// Whether combine() does its work on the calling thread (so that thread's CPU clock times it
  /// in lockstep); false when other threads do it (thread-messages: the wall clock times it).
  virtual bool combines_on_calling_thread() const { return true; }
  /// Whether combine() may be called from a second thread while the thread that made the
  /// communicator calls nothing of it (bucket_stream.hpp's overlap; MPI: MPI_THREAD_SERIALIZED).
  virtual bool combines_from_second_thread() const { return false; }
  /// Whether combine_group() runs groups other than all K workers.
  virtual bool runs_subgroups() const { return false; }
  /// Combines over the workers of `group` (indices of the K workers, each once, in the
  /// collective's order) as combine() does over all of them: `member_buffers` holds one buffer
  /// per member of the group that lives in this process, in group order (none: the call returns
  /// at once, this process takes no part). Every member ends with the group's combined vector.
  /// The default runs the group 0, 1, ..., K-1 through combine() and throws std::logic_error
  /// for any other (runs_subgroups() false).
  virtual void combine_group(const std::vector<int>& group,
                             const std::vector<float*>& member_buffers,
                             const std::vector<double>& member_weights, std::size_t n,
                             CombineRule rule) {
    for (std::size_t i = 0; i < group.size(); ++i)
      if (group[i] != static_cast<int>(i) || static_cast<int>(group.size()) != workers())
        throw std::logic_error("the " + name() + " communicator runs no collective over a " +
                               std::to_string(group.size()) + "-worker subgroup");
    combine(member_buffers, member_weights, n, rule);
  }
  /// Returns when every process has reached it.
  virtual void barrier() = 0;
  /// Maximum of `value` over all processes (for the lockstep clock and the stop decision).
  virtual double max_all(double value) = 0;

  /// Every process's `values` (the same count on each), concatenated in process order.
  virtual std::vector<double> all_gather(const std::vector<double>& values) { return values; }
  /// A barrier over every process of the run, servers included; each takes its clock's zero
  /// right after it (the start of training, which aligns the processes' clocks).
  virtual void align_start() { barrier(); }
  /// Concurrent rounds: the instant, on this process's steady clock, at which every worker
  /// process starts the next round, agreed on a clock all of them share; the caller waits until
  /// it. The default is a barrier's release (one process: at once; the NCCL communicator keeps
  /// it), and agrees_round_start() says which.
  virtual std::chrono::steady_clock::time_point agree_round_start() {
    barrier();
    return std::chrono::steady_clock::now();
  }
  /// True when agree_round_start() names an instant agreed on a shared clock (MPI).
  virtual bool agrees_round_start() const { return false; }
  /// Ends the run's collectives: server processes leave their serving loop.
  virtual void finish() {}
  /// On the first process: every process's `text` (servers included), in process order; an
  /// empty list elsewhere.
  virtual std::vector<std::string> gather_to_first(const std::string& text) { return {text}; }
  /// Point-to-point messages this process has sent so far (0 without a network).
  virtual long long messages_sent() const { return 0; }
  /// The host each process runs on (TAUPLAN_TESTBED_HOST, else the machine's name), in
  /// process order; empty when unknown.
  virtual std::vector<std::string> process_hosts() const { return {}; }
};

/// A communicator of host buffers that runs collectives over subgroups: the threads and MPI ones.
class HostCommunicator : public Communicator {
 public:
  MemorySpace memory() const final { return MemorySpace::Host; }
  bool runs_subgroups() const final { return true; }
};

/// A host communicator whose K workers all live in this one process (threads, thread-messages).
class InProcessCommunicator : public HostCommunicator {
 public:
  explicit InProcessCommunicator(int workers) : workers_(workers) {}
  int rank() const final { return 0; }
  int size() const final { return 1; }
  int workers() const final { return workers_; }
  int local_workers() const final { return workers_; }
  int first_local_worker() const final { return 0; }
  void barrier() final {}
  double max_all(double value) final { return value; }

 private:
  int workers_;
};

}  // namespace tauplan::exec
