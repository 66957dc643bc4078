// mpi_peers.hpp: a PeerGroup over MPI_COMM_WORLD, one rank per process (exec/peer_group.hpp).
//
// send() copies the floats into a buffer of its own (send_message takes the caller's) and posts
// MPI_Isend, so that two stages can
// send to each other before either receives (1F1B does: stage r sends an activation forward while
// stage r + 1 sends a gradient back); completed sends are reclaimed on later calls and all are
// waited for in complete_sends() and barrier(). Floats travel as MPI_FLOAT (send, then recv:
// MPI_Recv of n floats with the tag), byte messages as MPI_BYTE (send_message, then recv_any:
// MPI_Probe, MPI_ANY_SOURCE / MPI_ANY_TAG where asked, for the size, then MPI_Recv); each is
// received as it was sent. MPI keeps messages from one rank in order, as PeerGroup promises. Needs
// an MpiSession alive (exec/mpi_communicator.hpp); in a build without MPI constructing one throws.
// What it leaves out: GPU buffers, communicators other than the world, and messages above 2^31
// floats (refused).
#pragma once

#include <deque>
#include <memory>
#include <string>
#include <vector>

#include "exec/peer_group.hpp"

namespace tauplan::exec {

class MpiPeers final : public PeerGroup {
 public:
  MpiPeers();
  ~MpiPeers() override;

  std::string name() const override { return "mpi"; }
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  void send(int to, const float* data, std::size_t n, int tag) override;
  void recv(int from, float* data, std::size_t n, int tag) override;
  void send_message(int to, std::vector<char> message, int tag) override;
  PeerEnvelope recv_any(int from, int tag, std::vector<char>& message) override;
  void complete_sends() override { reclaim(true); }
  void barrier() override;

 private:
  struct Pending;
  void reclaim(bool wait);
  int rank_ = 0;
  int size_ = 1;
  std::deque<std::unique_ptr<Pending>> pending_;
};

}  // namespace tauplan::exec
