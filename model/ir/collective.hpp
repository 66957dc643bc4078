// collective.hpp: collective algorithms behind one interface, and their registry.
//
// Each algorithm is one file (collective_ring.cpp, collective_ps.cpp, ...) and one line in
// collective.cpp's registry. Here an algorithm knows its analytic alpha-beta cost over the
// platform's actual routes; sim/ lowers the same algorithm (by name) to point-to-point flows,
// and exec/ performs a real reduction. What the analytic cost leaves out: contention between
// flows that share a link (except where the formula names the shared link, as the parameter
// server's), and the reduction arithmetic itself (bandwidth-bound, ignored).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "model/inputs/platform.hpp"
#include "model/ir/plan.hpp"

namespace tauplan::model {

/// What one collective call moves: `bytes` per worker (a full gradient or parameter vector),
/// among `hosts` (platform host indices, in ring order), with `servers` for the server-based
/// algorithms (parameter server, SparkNet driver).
struct CollectiveCall {
  CollectivePayload payload = CollectivePayload::Gradients;
  double bytes = 0;
  std::vector<int> hosts;
  std::vector<int> servers;
};

class CollectiveAlgorithm {
 public:
  virtual ~CollectiveAlgorithm() = default;
  virtual const char* name() const = 0;
  virtual const char* description() const = 0;
  /// Servers the algorithm needs (0 for peer-to-peer algorithms; -1: at least one).
  virtual int servers_needed() const { return 0; }
  /// Whether `tauplan plan` searches it when an inventory lists no collectives.
  virtual bool searched_by_default() const { return true; }
  /// Analytic time of one call in seconds (alpha-beta over the routes it uses).
  virtual double time_s(const CollectiveCall& call, const Platform& platform) const = 0;
};

/// The algorithm registered under `name`; throws InputError (key "collective") if none is.
const CollectiveAlgorithm& collective_algorithm(const std::string& name,
                                                const std::string& file = "<job>");
/// All registered names, in registration order.
std::vector<std::string> collective_algorithm_names();

/// The algorithm a job gets when it names none (the first registered).
const char* default_collective();
/// The parameter server (collective_ps.cpp): the calibrated platform's reducer stands for it.
const char* parameter_server_collective();
/// The ring all-reduce (collective_ring.cpp): what a mesh layout's groups run.
const char* ring_collective();

/// The slowest hop of a ring over `hosts` (i -> i+1 mod K): latency and bandwidth of the
/// worst hop, i.e. max latency and min bandwidth over the K hops.
struct RingHop {
  double latency_s = 0;
  double bandwidth_Bps = 0;
  double forwarding_s_per_byte = 0;  ///< the most of the hops' (Route::forwarding_s_per_byte)
};
RingHop slowest_ring_hop(const std::vector<int>& hosts, const Platform& platform);
/// What a message of `bytes` over `hop` pays before its bytes flow: Platform::message_latency_s
/// of its latency plus Platform::forwarding_s of its forwarding; `two_way` as
/// MessageProtocol::latency_trips has it (a ring of 2).
double hop_message_latency_s(const RingHop& hop, double bytes, const Platform& platform,
                             bool two_way = false);

/// The rings a ring collective over `hosts` runs at once, as NCCL's channels do: a group with the
/// same number k > 1 of its hosts on each of two or more nodes is cut into k channels, channel j
/// visiting every node's hosts from its j-th on (node order and the hosts' order within a node as
/// in `hosts`), so that each channel leaves a node through a different host's links. Each channel
/// carries 1/k of the bytes. One channel (the group as given) when the group sits on one node,
/// has unequal counts per node, or when two channels' node-crossing hops would share a link that
/// is not a fat pipe (one NIC for the node: the channels would only queue on it). Returned as
/// positions into `hosts`. Leaves out: NCCL's channel count tuning, and the intra-node links the
/// channels share (the analytic costs time each channel by its slowest hop; SimGrid sees them).
std::vector<std::vector<size_t>> ring_channel_orders(const std::vector<int>& hosts,
                                                     const Platform& platform);

/// `steps` steps of a ring collective of `bytes` over `hosts`: in each, every channel's hosts
/// send bytes / (K channels) to their right neighbour. One channel: the slowest hop decides
/// (alpha + bytes/(K beta)). Several: every link carries its share of all channels' hops at once,
/// the most loaded link decides, and the slowest route adds its latency.
double ring_steps_s(double bytes, long long steps, const std::vector<int>& hosts,
                    const Platform& platform);

/// The parents of a binary heap over `members` (children of i are 2i+1 and 2i+2), grouped by
/// depth, root first: the levels of the tree algorithm.
std::vector<std::vector<size_t>> heap_parents_by_depth(size_t members);

/// `hosts` grouped by node (Host::node), nodes in first-seen order. Throws InputError (key
/// "collective") unless every node holds the same number of them (hierarchical's shape).
std::vector<std::vector<int>> equal_node_groups(const std::vector<int>& hosts,
                                                const Platform& platform);

}  // namespace tauplan::model
