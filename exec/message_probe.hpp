// message_probe.hpp: point-to-point message times between ranks, as training sends them.
//
// What a training run sends over MPI is not what a TCP flow gets: OpenMPI's ob1 sends a message
// above the TCP transport's eager limit (64 KiB by default, `ompi_info --param btl tcp --level 9`:
// btl_tcp_eager_limit) as a rendezvous: a first fragment with a request, the receiver's
// acknowledgement, then the rest; so a large message costs about three one-way latencies before
// its bytes flow at the route's rate. This probe measures that cost on a pair of ranks at a time
// over a PeerGroup (MpiPeers under `tauplan testbed run`; ThreadPeers in tests): the fastest
// round trip of small messages (noise only adds), then one-way transfers of each size, each
// answered by a small message, in passes over all sizes (a warm-up pass, then one per repeat),
// timed at the sender on the wall clock (steady_clock); one-way time = the exchange less half
// the small round trip. Fitted per pair by least squares to t = alpha + S / beta (reported;
// `testbed calibrate --mpi` refits the samples: exec/testbed/netcal.hpp, fit_messages).
// Every other rank waits at a barrier while a pair measures, so pairs never share a link: the
// PeerGroup's own (MPI_Barrier busy-polls) or one the caller gives (MpiPeers::barrier_asleep,
// so that the waiting ranks leave the cores to the pair timed).
// What it leaves out: concurrent messages (sharing is what the engines model from the links),
// sizes below the eager limit in the fit (the caller chooses the sizes), and message
// sizes above 2^31 floats.
#pragma once

#include <functional>
#include <utility>
#include <vector>

#include "exec/peer_group.hpp"
#include "model/inputs/calibration.hpp"

namespace tauplan::exec {

struct MessageProbeRequest {
  std::vector<std::pair<int, int>> pairs;  ///< (sender, receiver) ranks, measured in this order
  std::vector<double> sizes_bytes;         ///< one-way message sizes (multiples of 4 bytes)
  int repeats = 3;                         ///< timed passes over the sizes (after one warm-up)
  int pings = 20;                          ///< timed small round trips (after 3 warm-up)
  int ping_bytes = 8;
  /// The barrier every rank passes before each pair and after the last; empty: peers.barrier().
  std::function<void()> barrier;
};

struct MessageProbeRoute {
  int src = 0;
  int dst = 0;
  double small_round_trip_s = 0;                   ///< the fastest
  std::vector<std::pair<double, double>> samples;  ///< (bytes, one-way seconds)
  model::LinearFit fit;                            ///< seconds against bytes
  double alpha_s = 0;                              ///< fit intercept (>= 0)
  double beta_Bps = 0;                             ///< 1 / fit slope
};

/// Runs the probe on every rank of `peers` (collective: every rank calls it with the same
/// request). Returns every pair's measurement on rank 0, nothing on the others. Throws
/// std::invalid_argument for a pair with a rank out of range or twice the same rank, no sizes,
/// a size that is not a positive multiple of 4 bytes, or repeats, pings < 1.
std::vector<MessageProbeRoute> run_message_probe(PeerGroup& peers,
                                                 const MessageProbeRequest& request);

}  // namespace tauplan::exec
