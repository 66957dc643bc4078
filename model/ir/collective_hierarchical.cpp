// collective_hierarchical.cpp: two-level all-reduce for multi-GPU nodes.
//
// G workers on each of M nodes: (1) reduce-scatter inside every node (ring, G-1 steps of N/G),
// (2) G parallel ring all-reduces across nodes, ring i joining the i-th worker of every node,
// each on its N/G shard (2(M-1) steps of N/(G M)), (3) all-gather inside every node. Analytic
// cost: phases (1) and (3) use the slowest intra-node hop; phase (2) counts how many of the G
// rings' flows cross each link in one step (G rings through one shared node NIC divide it),
// which the plain ring formula would miss. Leaves out: NVLS/SHARP in-switch reduction and
// overlap between phases. Needs the same number of workers on every node.
#include <algorithm>
#include <limits>
#include <map>

#include "model/ir/collective.hpp"

namespace tauplan::model {
namespace {

class HierarchicalAllReduce : public CollectiveAlgorithm {
 public:
  const char* name() const override { return "hierarchical"; }
  const char* description() const override {
    return "hierarchical: intra-node reduce-scatter, inter-node rings, intra-node all-gather";
  }
  double time_s(const CollectiveCall& call, const Platform& platform) const override {
    if (call.hosts.size() < 2) return 0;
    const std::vector<std::vector<int>> nodes = equal_node_groups(call.hosts, platform);
    const size_t g = nodes.front().size(), m = nodes.size();
    const double n = call.bytes, gd = static_cast<double>(g), md = static_cast<double>(m);

    double intra = 0;
    if (g > 1) {
      RingHop slowest;
      slowest.bandwidth_Bps = std::numeric_limits<double>::infinity();
      for (const auto& node : nodes) {
        const RingHop hop = slowest_ring_hop(node, platform);
        slowest.latency_s = std::max(slowest.latency_s, hop.latency_s);
        slowest.bandwidth_Bps = std::min(slowest.bandwidth_Bps, hop.bandwidth_Bps);
        slowest.forwarding_s_per_byte =
            std::max(slowest.forwarding_s_per_byte, hop.forwarding_s_per_byte);
      }
      intra = (gd - 1) * (hop_message_latency_s(slowest, n / gd, platform, g == 2) +
                          n / (gd * slowest.bandwidth_Bps));
    }

    double inter = 0;
    if (m > 1) {
      const double chunk = n / (gd * md);
      std::map<int, int> flows_per_link;
      double latency = 0;
      for (size_t i = 0; i < g; ++i)
        for (size_t j = 0; j < m; ++j) {
          const Route& route = platform.route(nodes[j][i], nodes[(j + 1) % m][i]);
          latency = std::max(latency, platform.message_latency_s(route, chunk, m == 2));
          for (int link : route.links)
            ++flows_per_link[link];
        }
      double step = 0;
      for (const auto& [link, count] : flows_per_link) {
        const Link& l = platform.links[static_cast<size_t>(link)];
        const double sharing = l.sharing == LinkSharing::FatPipe ? 1.0 : count;
        step = std::max(step, sharing * chunk / l.bandwidth_Bps);
      }
      inter = 2 * (md - 1) * (latency + step);
    }
    return 2 * intra + inter;
  }
};

}  // namespace

std::unique_ptr<CollectiveAlgorithm> make_hierarchical_allreduce() {
  return std::make_unique<HierarchicalAllReduce>();
}

}  // namespace tauplan::model
