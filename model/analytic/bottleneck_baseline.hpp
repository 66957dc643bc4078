// bottleneck_baseline.hpp: the bottleneck-link baseline, the spreadsheet model validate holds the
// engines against.
//
// What a user could compute by hand from a platform file and the flows of a collective: for each
// communication stage (flows that start together, e.g. one step of a ring or a parameter server's
// pushes), sum the bytes every flow puts on each link of its route (model::Platform routes), take
// the busiest link (the largest bytes / bandwidth), and add the longest route latency among the
// stage's flows; a stage that repeats (the 2(K-1) steps of a ring) costs that many times as much.
// A round's communication is the sum over its stages, and a round is the compute the analytic
// engine puts on the round's critical path plus that communication (round_s). The platform's
// numbers are taken as they are: nominal bandwidths and latencies, no calibration. A fat-pipe
// link gives every flow its whole bandwidth: it carries the largest of its flows' bytes, not
// their sum, and never counts as shared. Several jobs at once (concurrent_stages) put their
// flows of the same stage on the links together.
//
// A stage is contended when some link that is not a fat pipe carries more than one of its flows
// (most_flows_on_a_link below counts them): the answer then depends on how the link is shared.
//
// What it leaves out: how a link is shared over time (every flow of a stage is assumed to last
// as long as the busiest link needs, none finishing early and freeing bandwidth), the latency of
// a protocol's handshakes (one route latency per stage), flows of other stages overlapping, TCP's
// window and slow start, the reduction arithmetic, and the flows themselves (the caller lowers a
// collective to stages: sim/collective_lowering.hpp describes them, and model/ never includes
// sim/).
#pragma once

#include <string>
#include <vector>

#include "model/inputs/platform.hpp"

namespace tauplan::model {

/// One transfer between two platform hosts.
struct TrafficFlow {
  int src_host = -1;
  int dst_host = -1;
  double bytes = 0;
  /// Its receiver sends its sender a message at once, as one exchange (a ring of 2's step): sent
  /// as pieces below the eager limit, never a rendezvous (model::MessageProtocol::latency_trips).
  bool two_way = false;
};

/// Flows that start together; the stage runs `repeat` times back to back.
struct TrafficStage {
  std::string phase;  ///< "push", "reduce-scatter" ...
  std::vector<TrafficFlow> flows;
  long long repeat = 1;
};

/// What decided one stage.
struct StageBottleneck {
  std::string phase;
  long long repeat = 1;
  int link = -1;             ///< the busiest link (index into Platform::links), -1: none
  double link_bytes = 0;     ///< bytes the stage puts on it
  double bandwidth_Bps = 0;  ///< its bandwidth
  double latency_s = 0;      ///< the longest route latency among the stage's flows
  double seconds = 0;        ///< one repeat: link_bytes / bandwidth_Bps + latency_s
  /// The most flows of this stage on one link that is not a fat pipe (0 with no flow).
  int most_flows_on_a_link = 0;
};

/// The baseline of a round's communication.
struct BottleneckBaseline {
  std::vector<StageBottleneck> stages;
  double comm_s = 0;             ///< sum over stages of repeat x seconds
  int most_flows_on_a_link = 0;  ///< over every stage
  /// Some link that is not a fat pipe carries more than one flow of a stage at once.
  bool contended() const { return most_flows_on_a_link > 1; }
};

/// The baseline of `stages` over `platform`'s routes and links. A flow from a host to itself or
/// of no bytes costs nothing. Throws std::invalid_argument for a host index outside the platform,
/// negative bytes or a repeat below 1.
BottleneckBaseline bottleneck_baseline(const std::vector<TrafficStage>& stages,
                                       const Platform& platform);

/// Several jobs' stages at once: stage i of every job together (their flows in one stage, the
/// most repeats of them); a job with fewer stages adds nothing to the later ones.
std::vector<TrafficStage> concurrent_stages(const std::vector<std::vector<TrafficStage>>& jobs);

/// A round by the baseline: the analytic engine's compute on the critical path (its round less
/// its communication) plus the baseline's communication; NaN when either is not finite.
double baseline_round_s(double analytic_round_s, double analytic_comm_s, double baseline_comm_s);

}  // namespace tauplan::model
