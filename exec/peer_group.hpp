// peer_group.hpp: point-to-point messages between the ranks of a model-parallel job.
//
// Tensor and pipeline parallelism need what the Communicator (one combine over all K workers)
// does not give: messages from one rank to another (activations and their gradients between
// pipeline stages) and sums over subgroups of the mesh (a tensor group's partial outputs, a
// data group's gradients). A PeerGroup is one rank's end: send() copies the floats and returns
// at once (so two ranks may send to each other before either receives), recv() blocks until the
// message from that rank with that tag arrives; messages between two ranks with one tag arrive
// in the order they were sent. allreduce_sum() sums a buffer over a list of member ranks on top
// of them: every member sends its buffer to every other and adds the members' buffers in member
// order, so every member holds the same bits (no reduction tree whose order differs by rank);
// allreduce_max() takes the element-wise maximum the same way (a vocabulary-parallel softmax);
// ring_allgather() completes a buffer whose slices the members hold (a pipeline message sent as
// tensor slices).
// Implementations: ThreadPeers (ranks are threads of one process, messages are copies into
// mailboxes) and MpiPeers (exec/mpi_peers.hpp: ranks are MPI processes, MPI_Isend/MPI_Recv).
// What it leaves out: bandwidth-optimal collectives (the all-gather-and-add moves (g - 1) x the
// buffer per member instead of a ring's 2 (g - 1)/g: the groups here are 2 to 4 ranks of an
// MLP), GPU memory, and overlap.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <tuple>
#include <vector>

namespace tauplan::exec {

class PeerGroup {
 public:
  virtual ~PeerGroup() = default;
  PeerGroup() = default;
  PeerGroup(const PeerGroup&) = delete;
  PeerGroup& operator=(const PeerGroup&) = delete;

  /// "threads" or "mpi".
  virtual std::string name() const = 0;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  /// Sends `n` floats to rank `to`; the data is copied, so the call returns at once.
  virtual void send(int to, const float* data, std::size_t n, int tag) = 0;
  /// Receives `n` floats from rank `from` (the oldest message with `tag`); blocks.
  virtual void recv(int from, float* data, std::size_t n, int tag) = 0;
  /// Returns when every rank has called it (and this rank's sends have completed).
  virtual void barrier() = 0;
};

/// Sums `data` (n floats) over `members` (ranks, the caller among them) into every member's
/// buffer, adding the members' buffers in the order of `members`.
void allreduce_sum(PeerGroup& peers, const std::vector<int>& members, float* data, std::size_t n,
                   int tag);
/// The element-wise maximum of `data` over `members`, into every member's buffer (the same way:
/// every member sends its buffer to every other).
void allreduce_max(PeerGroup& peers, const std::vector<int>& members, float* data, std::size_t n,
                   int tag);

/// Gathers `data` (n floats; member i of `members` holds slice i, floats [i n/g, (i+1) n/g)) on
/// every member, in a ring: g - 1 steps, each sending one slice to the next member and taking
/// one from the previous. Returns the messages this member sent. std::invalid_argument unless g
/// divides n and the caller is a member.
int ring_allgather(PeerGroup& peers, const std::vector<int>& members, float* data, std::size_t n,
                   int tag);

/// Ranks that are threads of this process: one mailbox per (sender, receiver, tag).
class ThreadPeerHub {
 public:
  explicit ThreadPeerHub(int ranks);
  ~ThreadPeerHub();
  /// The end of rank `rank` (owned by the hub; use it from that rank's thread).
  PeerGroup& peer(int rank);
  int ranks() const { return static_cast<int>(ends_.size()); }

 private:
  friend class ThreadPeer;
  void deliver(int from, int to, int tag, std::vector<float> message);
  std::vector<float> take(int from, int to, int tag);
  void arrive_at_barrier();

  std::mutex mutex_;
  std::condition_variable changed_;
  std::map<std::tuple<int, int, int>, std::deque<std::vector<float>>> mailboxes_;
  int barrier_waiting_ = 0;
  long long barrier_generation_ = 0;
  std::vector<std::unique_ptr<PeerGroup>> ends_;
};

}  // namespace tauplan::exec
