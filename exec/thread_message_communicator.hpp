// thread_message_communicator.hpp: K workers in one process combining by the plan's collective
// algorithm, executed as messages between threads (communicator `thread-messages`).
//
// Where ThreadCommunicator reduces the K buffers in shared memory (a central reducer, whatever
// the plan's collective), this one runs exactly what the MPI communicator runs: the plan's
// algorithm (exec/p2p_collective.hpp: ring, ps, tree, sparknet, hierarchical) over a
// ThreadPeerHub of K worker ranks and, for the server algorithms, s server ranks. combine() runs
// the K workers' sides at once on a pool of K threads; each server rank is a thread of its own
// that serves call after call from construction until finish() (or destruction, which aborts the
// hub first). A rank that fails aborts its hub, so that no other rank waits for it, and the first
// error (its cause) is what combine() or finish() throws. A collective over a subgroup runs on a
// hub of its own, as MPI splits a communicator for it. Adasum all-gathers the [x, w] blocks around
// a ring, as under MPI. The floats are the MPI communicator's (bit for bit through the servers; to
// float rounding around a ring or tree). What it leaves out: a network (the messages are copies
// through memory: its time is the algorithm's memory traffic and thread hand-offs on this machine),
// and the servers' processing report (measure's `servers`, MPI only).
#pragma once

#include <exception>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "exec/communicator.hpp"
#include "exec/p2p_collective.hpp"
#include "exec/peer_group.hpp"
#include "exec/worker_pool.hpp"
#include "model/base/error.hpp"  // KeyOrigins

namespace tauplan::exec {

class ThreadMessageCommunicator final : public InProcessCommunicator {
 public:
  /// Throws InputError(origins.of(key), ...) when exec has no such algorithm or the plan does not
  /// fit it (hierarchical's nodes, a server algorithm over a subgroup).
  ThreadMessageCommunicator(const model::Plan& plan, const model::Platform& platform,
                            const KeyOrigins& origins);
  ~ThreadMessageCommunicator() override;

  std::string name() const override { return "thread-messages"; }
  void combine(const std::vector<float*>& local_buffers, const std::vector<double>& local_weights,
               std::size_t n, CombineRule rule) override;
  void combine_group(const std::vector<int>& group, const std::vector<float*>& member_buffers,
                     const std::vector<double>& member_weights, std::size_t n,
                     CombineRule rule) override;
  /// The K workers' sides run on a pool: lockstep times a combine by the wall clock.
  bool combines_on_calling_thread() const override { return false; }
  /// Stops the server threads (their stop messages) and rethrows a server's error.
  void finish() override;
  /// Every message sent between the ranks so far, servers' replies included.
  long long messages_sent() const override;

 private:
  struct Group {
    CollectiveRanks ranks;  // rank: unused (each worker thread has its own)
    std::unique_ptr<ThreadPeerHub> hub;
    std::vector<std::vector<float>> scratch;  // Adasum's gathered blocks, per member
  };
  void run_workers(Group& group, const std::vector<float*>& buffers,
                   const std::vector<double>& weights, std::size_t n, CombineRule rule);
  /// Aborts the hub unless finished and joins the server threads.
  void stop_servers();
  /// From a rank's catch: keeps the first error (the cause) and aborts `hub`.
  void fail(ThreadPeerHub& hub);
  void rethrow_first_error();

  const P2pCollective* algorithm_ = nullptr;
  CollectiveRanks ranks_;
  Group all_;
  std::map<std::vector<int>, Group> subgroups_;
  WorkerPool pool_;
  std::vector<std::thread> servers_;
  std::mutex error_mutex_;
  std::exception_ptr first_error_;  // the first rank's error (worker or server)
  bool finished_ = false;
};

}  // namespace tauplan::exec
