// server_probe.hpp: a parameter server's own processing, timed on the rank that serves.
//
// Before a testbed run, the configuration's server ranks time what they will compute per call,
// with the same code exec's servers run: sync ps, the weighted mean of K pushed shards
// (mean_of_pushes: the weights' list and combine_mean into a mean's buffer kept from call to call,
// as the server keeps it);
// async-ps, one SGD apply of a pushed shard to the server's shard (the loop of async_ranks'
// ServerRank::apply). Each is timed on the wall clock at three shard sizes (half, once and twice
// the run's) while the worker ranks wait in a barrier (OpenMPI polls: they compete for the cores
// as the waiting workers of a round do), and fitted through the origin to seconds = a x messages
// + b x bytes, the loads of model/ir/server_work.hpp (sync: 2K messages and K shards per call;
// async: 2 messages and one shard per update). A server's props are then a and b times its
// host's speed (flop). What it leaves out: the MPI library's own CPU per message (the network
// calibration's latency holds it), and processing that overlaps the transfers.
#pragma once

#include <cstddef>
#include <vector>

#include "exec/peer_group.hpp"

namespace tauplan::exec {

enum class ServerProbeKind { Combine, Apply };

struct ServerProbeRequest {
  ServerProbeKind kind = ServerProbeKind::Combine;
  int workers = 1;               ///< K: the pushes a sync call combines
  std::size_t shard_floats = 0;  ///< floats of one server's shard in the run (>= 1)
  int repeats = 15;              ///< timings per size (their median is the point)
};

/// One timed size: the load (model::ServerLoad's) and the median seconds.
struct ServerProbePoint {
  double messages = 0;
  double bytes = 0;
  double seconds = 0;
};

/// One server rank's points and their fit seconds = a x messages + b x bytes (a, b >= 0).
struct ServerProbeFit {
  int rank = -1;
  std::vector<ServerProbePoint> points;
  double seconds_per_message = 0;
  double seconds_per_byte = 0;
};

/// Fits seconds = a x messages + b x bytes through the origin by least squares, a and b clamped
/// at 0 (the other refitted alone); throws std::invalid_argument without two distinct ratios of
/// bytes to messages.
ServerProbeFit fit_server_points(const std::vector<ServerProbePoint>& points);

/// A server's fit as work at its host's speed: model/ir/server_work.hpp's props, in flop.
struct ServerWork {
  double flop_per_message = 0;
  double flop_per_byte = 0;
};

/// The fit's seconds per message and per byte at `speed_flops`, less `optimizer_flop_per_byte`
/// per byte: the optimizer's arithmetic per byte of an asynchronous apply
/// (model::server_apply_flop over the gradient's bytes), which the engines charge every apply
/// already and the timed apply includes (0 for a sync combine, which applies nothing). The
/// per-byte work is never below 0.
ServerWork server_work_at(const ServerProbeFit& fit, double speed_flops,
                          double optimizer_flop_per_byte);

/// Times `request` on this rank (no communication).
std::vector<ServerProbePoint> time_server_processing(const ServerProbeRequest& request);

/// Collective over `peers`: ranks >= `workers` time their processing while ranks < workers wait
/// in a barrier; rank 0 returns one fit per server rank, in rank order, the others nothing.
std::vector<ServerProbeFit> probe_server_processing(PeerGroup& peers, int workers,
                                                    const ServerProbeRequest& request);

}  // namespace tauplan::exec
