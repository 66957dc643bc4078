// topology_probe.hpp: the network between a set of hosts found by probing it, never by reading
// a platform file (issue 27 item 3, `tauplan calibrate --network`).
//
// What it assumes: the hosts hang off a tree of switches (one route between any two hosts, the
// same links both ways), every link carries its two directions separately (split duplex), and a
// link's latency is well above the noise of a round trip. What it does, through an
// exec::ProbeNetwork (TCP threads in the testbed's namespaces, or MPI ranks):
//   1. Round trips of every pair (the fastest of `pings` echoes: noise only adds; the estimator
//      of testbed calibrate's routes, over 30, whose MPI latency factor a probed platform takes);
//      half of it is the pair's one-way latency. On a tree these are sums of link latencies
//      along paths, an additive metric, and neighbour joining (Saitou and Nei 1987) recovers
//      the tree from it: hosts are leaves, joins are switches. Internal edges shorter than
//      `contraction_noise` x the round trips' noise (half the 90th percentile of the pairs'
//      interquartile ranges: single echoes' spread, more than the fastest's error) are
//      contracted, so hosts behind one switch share one switch node. Edge latencies are then
//      refitted by non-negative least squares over every pair.
//   2. Capacity of every directed edge (each tree edge, each direction): concurrent bulk flows
//      that all cross it (up to `max_flows`, sources spread over the branches on its tail side,
//      destinations over the branches on its head side, so that no other edge carries two of
//      them unless it must). The edge is the bottleneck when the flows' measured total falls short
//      (by more than `binding_tolerance`) of what the max-min fair share over the other edges,
//      fitted so far, lets them have without it: its capacity is then that total (every flow of
//      the probe crosses it). Otherwise it never limited a probe: it is written unbounded (10x the
//      largest total any probe put through it), marked as a lower bound. The fit sweeps the edges
//      (hosts' links first) until no capacity changes.
//   3. A check by concurrent pairs: pairs of routes that the fitted tree says share a bottleneck
//      and pairs it says do not, each route run alone and the two at once; a pair "shares" when
//      one of its routes loses more than 15% of its rate alone. The agreement is reported; it is
//      a check, not an input of the fit.
// What it leaves out: meshes, multipath routing (ECMP) and anything not a tree; links whose
// latency is below the round trips' noise (they are contracted: their capacity merges into the
// neighbouring edge's); a link shared by both directions (half duplex); host compute; a switch's
// own forwarding limit apart from its links'; TCP dynamics (the probe measures what TCP flows
// get, which is what the written platform stands for).
#pragma once

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "exec/probe_network.hpp"
#include "exec/testbed/netcal.hpp"
#include "exec/testbed/spec.hpp"

namespace tauplan::testbed {

struct TopologyProbeRequest {
  int pings = 15;                   ///< timed echoes per pair (the fastest)
  double flow_duration_s = 1.5;     ///< each concurrent-flow probe
  double flow_warmup_s = 0.5;       ///< left out at its start (slow start)
  int max_flows = 8;                ///< flows of one capacity probe
  double binding_tolerance = 0.1;   ///< measured below (1 - this) x predicted: the edge binds
  double contraction_noise = 3;     ///< internal edges below this x the latency noise merge
  double min_contraction_s = 2e-5;  ///< and below this, whatever the noise
  int check_pairs = 8;              ///< pairs of routes in the check (half predicted sharing)
};

/// A tree edge between two nodes: hosts are nodes 0 .. hosts - 1, switches the rest.
struct ProbedEdge {
  int a = 0;
  int b = 0;
  double latency_s = 0;  ///< one way, refitted
};

/// One direction of an edge: what a written link stands for.
struct ProbedLink {
  std::string name;
  int edge = 0;
  int from = 0;  ///< node the direction leaves
  int to = 0;    ///< node it enters
  double latency_s = 0;
  double bandwidth_Bps = 0;       ///< the fitted capacity, or the unbounded value written
  bool bounded = false;           ///< limited some probe (else a lower bound, never binding)
  double probed_total_Bps = 0;    ///< its own probe's measured total
  double predicted_free_Bps = 0;  ///< that probe by the fit without this link
  std::vector<std::pair<int, int>> probe_flows;
  std::vector<double> probe_rates_Bps;
};

/// A pair of routes run alone and at once.
struct PairCheck {
  std::pair<int, int> first;
  std::pair<int, int> second;
  double first_alone_Bps = 0;
  double second_alone_Bps = 0;
  double first_together_Bps = 0;
  double second_together_Bps = 0;
  double predicted_first_together_Bps = 0;
  double predicted_second_together_Bps = 0;
  bool predicted_shared = false;
  bool measured_shared = false;
};

struct ProbedTopology {
  std::vector<std::string> hosts;
  int nodes = 0;                               ///< hosts, then switches
  std::vector<std::vector<double>> one_way_s;  ///< measured (fastest round trip / 2), symmetric
  double latency_noise_s = 0;
  double contraction_s = 0;  ///< internal edges shorter than this were merged
  std::vector<ProbedEdge> edges;
  std::vector<ProbedLink> links;  ///< 2 per edge: 2e is a -> b, 2e + 1 is b -> a
  /// routes[src][dst]: the links from host src to host dst, in order (empty on the diagonal).
  std::vector<std::vector<std::vector<int>>> routes;
  std::vector<PairCheck> checks;
  int fit_sweeps = 0;
  std::vector<std::string> warnings;
  std::string method;  ///< how the probes were carried
  std::string date;
  std::string commit;
  double seconds = 0;
  TopologyProbeRequest request;

  /// Which switch (0-based among switches) host h hangs off, or -1 when its edge goes to a host.
  int switch_of(int host) const;
  /// One-way latency of the route src -> dst: the sum of its links'.
  double route_latency_s(int src, int dst) const;
  /// Links that limited their probe (the rest are written unbounded).
  int bounded_links() const;
  /// Check pairs where the measurement agreed with the tree about sharing a bottleneck.
  int agreeing_checks() const;
  /// Max-min fair rates of concurrent flows over the fitted links.
  std::vector<double> predict_rates(const std::vector<std::pair<int, int>>& flows) const;
};

/// Neighbour joining over a symmetric distance matrix of n >= 2 leaves: the edges of an
/// unrooted tree, leaves 0..n-1 and internal nodes n, n+1, ...; lengths may come out negative
/// (noise) and are clamped at 0 by the caller. Throws std::invalid_argument for a matrix that is
/// not square, symmetric and finite.
std::vector<ProbedEdge> neighbor_joining(const std::vector<std::vector<double>>& distance);

/// Merges internal nodes joined by an edge shorter than `threshold_s` (edges to hosts stay),
/// numbering the remaining switches n, n+1, ... in order of first appearance.
std::vector<ProbedEdge> contract_short_edges(const std::vector<ProbedEdge>& edges, int hosts,
                                             double threshold_s);

/// Probes the network (host indices of `network` named by `hosts`) as the file comment says.
/// `progress` gets one line per step. Throws std::invalid_argument for fewer than 2 hosts or a
/// count that differs from the network's, std::runtime_error when the probes give no finite
/// latency for a pair.
ProbedTopology probe_topology(exec::ProbeNetwork& network, const std::vector<std::string>& hosts,
                              const TopologyProbeRequest& request,
                              const std::function<void(const std::string&)>& progress);

nlohmann::json to_json(const ProbedTopology& topology);

/// The probed network as a SimGrid platform: one SHARED link per direction of every edge (its
/// fitted latency and capacity; unbounded ones marked), every ordered pair's route (Full
/// routing). Hosts: `hosts` in the probe's order, named alike (their node, role, speed and props
/// are who the hosts are, not the network: the caller says where they come from); from
/// `messages`, when set: every latency x its mpi_latency_factor (MPI messages, not TCP), the
/// rendezvous above its eager limit, and the hosts' measured compute. Throws
/// std::invalid_argument when a host of the probe is not in `hosts`.
std::string probed_platform_xml(const ProbedTopology& topology, const std::vector<SpecHost>& hosts,
                                const NetworkCalibration& messages, const std::string& hosts_from);

}  // namespace tauplan::testbed
