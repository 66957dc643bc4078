// peer_group.hpp: point-to-point messages between the ranks of a model-parallel job.
//
// Tensor and pipeline parallelism need what the Communicator (one combine over all K workers)
// does not give: messages from one rank to another (activations and their gradients between
// pipeline stages) and sums over subgroups of the mesh (a tensor group's partial outputs, a
// data group's gradients). A PeerGroup is one rank's end: send() copies the floats and returns
// at once (so two ranks may send to each other before either receives), recv() blocks until the
// message from that rank with that tag arrives; messages between two ranks with one tag arrive
// in the order they were sent. allreduce_sum() sums a buffer over a list of member ranks on top
// of them as the ring all-reduce the Plan names for a layout's tensor and data groups
// (model/ir/collective.hpp's ring: reduce-scatter, then all-gather, 2 (g - 1) steps of chunks of
// n / g): each chunk is summed once, along the ring, and copied to the others, so every member
// holds the same bits; allreduce_max() takes the element-wise maximum by every member sending its
// buffer to every other and folding them in member order (a vocabulary-parallel softmax);
// ring_allgather() completes a buffer whose slices the members hold (a pipeline message sent as
// tensor slices). Besides floats, a rank may send bytes (a header and floats, a record) and
// receive the oldest message from any rank or with any tag, whatever its size (recv_any: a
// parameter server takes its workers' pushes in arrival order).
// Implementations: ThreadPeerHub's ends (ranks are threads of one process, messages are copies into
// mailboxes, abort() wakes every waiting rank with an error) and MpiPeers (exec/mpi_peers.hpp:
// ranks are MPI processes of the world or of a communicator split off; MPI_Isend, MPI_Recv,
// MPI_Irecv and MPI_Waitall, MPI_Sendrecv, MPI_Probe). The MPI and thread-messages
// communicators run their collective algorithms on it (exec/p2p_collective.hpp).
// What it leaves out: other algorithms for a group's sum (the Plan's layouts name the ring),
// GPU memory, and overlap.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

namespace tauplan::exec {

/// What recv_any received: from which rank, with which tag, how many bytes.
struct PeerEnvelope {
  int from = -1;
  int tag = -1;
  std::size_t bytes = 0;
};

class PeerGroup {
 public:
  static constexpr int kAnySource = -1;
  static constexpr int kAnyTag = -1;

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
  /// Sends `message` to rank `to`, taking it over (no copy: move a buffer in); returns at once.
  virtual void send_message(int to, std::vector<char> message, int tag) = 0;
  /// Sends `bytes` bytes to rank `to`; copied, so the call returns at once.
  void send_bytes(int to, const void* data, std::size_t bytes, int tag) {
    const char* first = static_cast<const char*>(data);
    send_message(to, std::vector<char>(first, first + bytes), tag);
  }
  /// Receives the oldest message to this rank from `from` (kAnySource: any rank) with `tag`
  /// (kAnyTag: any tag) into `message`, resized to its bytes; blocks. Messages from one rank
  /// arrive in the order they were sent. Pairs with send_message / send_bytes (not send's floats).
  virtual PeerEnvelope recv_any(int from, int tag, std::vector<char>& message) = 0;
  /// Returns when every message this rank has sent has left its buffer (MPI: each pending send
  /// waited for, as a blocking send would; threads: at once, a send is a copy).
  virtual void complete_sends() {}
  /// Returns when every rank has called it (and this rank's sends have completed).
  virtual void barrier() = 0;

  // The collective algorithms' forms (exec/p2p_collective.hpp): no copy where the transport can
  // avoid one, and receives posted before the sends they answer (MPI's rendezvous needs them).
  /// Sends `n` floats from `data` without copying where the transport can (MPI: MPI_Isend of
  /// the caller's buffer); `data` must stay unchanged until complete_posted() returns.
  /// Threads: copied at once.
  virtual void post_send(int to, const float* data, std::size_t n, int tag) {
    send(to, data, n, tag);
  }
  /// Posts a receive of `n` floats from `from` with `tag` into `data`, done by complete_posted()
  /// (MPI: MPI_Irecv; the default receives in posting order inside complete_posted()).
  virtual void post_recv(int from, float* data, std::size_t n, int tag) {
    posted_recvs_.push_back(PostedRecv{from, data, n, tag});
  }
  /// Completes every posted receive and send.
  virtual void complete_posted();
  /// Sends `send_n` floats to `to` while receiving `recv_n` from `from`, one tag (MPI:
  /// MPI_Sendrecv; the default sends a copy, then receives).
  virtual void send_recv(int to, const float* send_data, std::size_t send_n, int from,
                         float* recv_data, std::size_t recv_n, int tag) {
    send(to, send_data, send_n, tag);
    recv(from, recv_data, recv_n, tag);
  }
  /// Waits for the oldest message from `from` with `tag` (kAnyTag: any) and returns its
  /// envelope (bytes: its size) without receiving it.
  virtual PeerEnvelope probe(int from, int tag) = 0;
  /// Messages this rank has sent so far.
  virtual long long messages_sent() const = 0;

  /// What this rank waits for, named in the error when a wait outlives its deadline (MPI's
  /// watchdog, exec/mpi_watchdog.hpp); a string literal, kept by pointer. PeerWaitLabel sets it.
  const char* wait_label() const { return wait_label_; }
  void set_wait_label(const char* what) { wait_label_ = what; }

 private:
  struct PostedRecv {
    int from;
    float* data;
    std::size_t n;
    int tag;
  };
  std::vector<PostedRecv> posted_recvs_;
  const char* wait_label_ = "a message between ranks";
};

/// Names what `peers` waits for inside a scope (PeerGroup::wait_label), then restores the name.
class PeerWaitLabel {
 public:
  PeerWaitLabel(PeerGroup& peers, const char* what) : peers_(peers), previous_(peers.wait_label()) {
    peers.set_wait_label(what);
  }
  ~PeerWaitLabel() { peers_.set_wait_label(previous_); }
  PeerWaitLabel(const PeerWaitLabel&) = delete;
  PeerWaitLabel& operator=(const PeerWaitLabel&) = delete;

 private:
  PeerGroup& peers_;
  const char* previous_;
};

/// Sums `data` (n floats) over `members` (ranks, the caller among them) into every member's
/// buffer by a ring over `members` in their order: reduce-scatter then all-gather, chunk i the
/// floats [i n / g, (i + 1) n / g). With fewer floats than members, every member sends its buffer
/// to every other and adds them in member order. std::invalid_argument when the caller is not a
/// member.
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

/// Ranks that are threads of this process: one mailbox per (receiver, sender, tag), each message
/// stamped with its place in the hub's order of sends (recv_any takes the oldest that matches).
class ThreadPeerHub {
 public:
  explicit ThreadPeerHub(int ranks);
  ~ThreadPeerHub();
  /// The end of rank `rank` (owned by the hub; use it from that rank's thread).
  PeerGroup& peer(int rank);
  int ranks() const { return static_cast<int>(ends_.size()); }
  /// Wakes every rank waiting in a receive or the barrier, and every later one, with a
  /// std::runtime_error: a rank that failed must not leave the others waiting for it.
  void abort();

 private:
  friend class ThreadPeer;
  struct Stamped {
    long long order = 0;
    std::vector<char> bytes;
  };
  using Key = std::tuple<int, int, int>;  // receiver, sender, tag
  void deliver(int from, int to, int tag, std::vector<char> message);
  /// The oldest message to `to` matching `from` and `tag` (either may be "any").
  std::pair<Key, std::vector<char>> take(int from, int to, int tag);
  /// take()'s message, left in its mailbox: its key and size.
  std::pair<Key, std::size_t> peek(int from, int to, int tag);
  void arrive_at_barrier();
  void throw_if_aborted() const;

  std::mutex mutex_;
  std::condition_variable changed_;
  /// The oldest message matching (under the lock, waiting until one exists or abort()).
  std::pair<Key, std::deque<Stamped>*> wait_for_oldest(std::unique_lock<std::mutex>& lock, int from,
                                                       int to, int tag);
  std::map<Key, std::deque<Stamped>> mailboxes_;
  long long sent_ = 0;
  bool aborted_ = false;
  int barrier_waiting_ = 0;
  long long barrier_generation_ = 0;
  std::vector<std::unique_ptr<PeerGroup>> ends_;
};

}  // namespace tauplan::exec
