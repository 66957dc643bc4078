// mpi_peers.hpp: a PeerGroup over MPI_COMM_WORLD, one rank per process (exec/peer_group.hpp).
//
// send() copies the floats into a buffer of its own (send_message takes the caller's) and posts
// MPI_Isend, so that two stages can
// send to each other before either receives (1F1B does: stage r sends an activation forward while
// stage r + 1 sends a gradient back); completed sends are reclaimed on later calls and all are
// waited for in complete_sends() and barrier(). Floats travel as MPI_FLOAT (send, then recv:
// MPI_Recv of n floats with the tag), byte messages as MPI_BYTE (send_message, then recv_any:
// MPI_Probe, MPI_ANY_SOURCE / MPI_ANY_TAG where asked, for the size, then MPI_Recv); each is
// received as it was sent. The collective algorithms' forms copy nothing: post_send is MPI_Isend
// of the caller's buffer, post_recv MPI_Irecv, both completed by complete_posted (MPI_Waitall),
// send_recv is MPI_Sendrecv, except between two ranks that send each other (to == from, a ring of
// 2's step) more than kExchangePieceFloats: then each way goes as pieces of that many floats, all
// posted at once. Under OpenMPI's TCP transport a message above the eager limit (64 KiB) waits for
// its receiver's clear-to-send, which leaves on the same connection behind that rank's own
// message once the two ranks are out of phase: the two directions then take turns, a step twice
// as long (experiments/testbed/README.md, "The ring of 2, both ways at once"); pieces below the
// limit need no answer. The engines charge such a message as eager (one route latency, not
// three). Every blocking call runs inside an MpiWait named by wait_label()
// (the job's mpi_timeout_s bounds it, exec/mpi_watchdog.hpp). MPI keeps messages from one rank in
// order, as PeerGroup promises. The ranks are MPI_COMM_WORLD's or those of a communicator given
// (a collective's subgroup). Needs an MpiSession alive (exec/mpi_communicator.hpp); in a build
// without MPI constructing one throws.
// What it leaves out: GPU buffers, and messages above 2^31 floats (refused).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "exec/peer_group.hpp"

#ifdef TAUPLAN_HAVE_MPI
#include <mpi.h>
#endif

namespace tauplan::exec {

class MpiPeers final : public PeerGroup {
 public:
  /// The ranks of MPI_COMM_WORLD.
  MpiPeers();
#ifdef TAUPLAN_HAVE_MPI
  /// The ranks of `comm` (not owned: it must outlive this object).
  explicit MpiPeers(MPI_Comm comm);
#endif
  ~MpiPeers() override;

  std::string name() const override {
    return "mpi";
  }
  int rank() const override {
    return rank_;
  }
  int size() const override {
    return size_;
  }
  void send(int to, const float* data, std::size_t n, int tag) override;
  void recv(int from, float* data, std::size_t n, int tag) override;
  void send_message(int to, std::vector<char> message, int tag) override;
  PeerEnvelope recv_any(int from, int tag, std::vector<char>& message) override;
  void complete_sends() override {
    reclaim(true);
  }
  void barrier() override;
  /// barrier(), waiting asleep: MPI_Ibarrier tested every 200 us (wait_asleep), for a rank
  /// that waits while others are timed and would take their cores if it busy-polled.
  void barrier_asleep();
  void post_send(int to, const float* data, std::size_t n, int tag) override;
  void post_recv(int from, float* data, std::size_t n, int tag) override;
  void complete_posted() override;
  void send_recv(int to, const float* send_data, std::size_t send_n, int from, float* recv_data,
                 std::size_t recv_n, int tag) override;
  /// A piece of a two-way exchange: 64,000 bytes, below OpenMPI's TCP eager limit of 65,536
  /// bytes with its headers (`ompi_info --param btl tcp --level 9`: btl_tcp_eager_limit, which
  /// counts the header) and below the engines' eager_limit_bytes on the testbed.
  static constexpr std::size_t kExchangePieceFloats = 16000;
  PeerEnvelope probe(int from, int tag) override;
  long long messages_sent() const override {
    return sent_;
  }

 private:
  struct Pending;
  struct Comm;
  /// Completed sends leave the queue: all of them (waited for), or those done so far.
  void reclaim(bool wait);
  void exchange_in_pieces(int peer, const float* send_data, std::size_t send_n, float* recv_data,
                          std::size_t recv_n, int tag);
  /// MPI_Isend of `count` floats or bytes from `data` into the newest pending send's request.
  void post(const void* data, std::size_t count, bool floats, int to, int tag);
  std::unique_ptr<Comm> comm_;
  int rank_ = 0;
  int size_ = 1;
  long long sent_ = 0;
};

#ifdef TAUPLAN_HAVE_MPI
/// Completes `request` by testing it every 200 us and sleeping in between (errors name `call`):
/// for waits outside the timed part of a probe, where a rank that busy-polled, as OpenMPI's
/// blocking calls do, would take CPU from the ranks timed.
void wait_asleep(MPI_Request& request, const char* call);
#endif

}  // namespace tauplan::exec
