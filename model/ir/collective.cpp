// collective.cpp: the registry of collective algorithms and helpers shared by their costs.
//
// Adding an algorithm: one file with its class and factory, one line in registry() below.
#include "model/ir/collective.hpp"

#include <algorithm>
#include <limits>
#include <map>
#include <set>
#include <string>

#include "model/base/error.hpp"
#include "model/base/registry.hpp"

namespace tauplan::model {

// Factories, each defined in its algorithm's own file (collective_<name>.cpp).
std::unique_ptr<CollectiveAlgorithm> make_ring_allreduce();
std::unique_ptr<CollectiveAlgorithm> make_parameter_server();
std::unique_ptr<CollectiveAlgorithm> make_tree_allreduce();
std::unique_ptr<CollectiveAlgorithm> make_sparknet_broadcast_collect();
std::unique_ptr<CollectiveAlgorithm> make_hierarchical_allreduce();

namespace {

// The first registered algorithm is the default of the `collective` key.
const Registry<CollectiveAlgorithm>& registry() {
  static const Registry<CollectiveAlgorithm> algorithms("collective",
                                                        {
                                                            make_ring_allreduce,
                                                            make_tree_allreduce,
                                                            make_hierarchical_allreduce,
                                                            make_parameter_server,
                                                            make_sparknet_broadcast_collect,
                                                        });
  return algorithms;
}

}  // namespace

const CollectiveAlgorithm& collective_algorithm(const std::string& name, const std::string& file) {
  return registry().get(name, file);
}

std::vector<std::string> collective_algorithm_names() {
  return registry().names();
}

const char* default_collective() {
  return registry().items().front()->name();
}

RingHop slowest_ring_hop(const std::vector<int>& hosts, const Platform& platform) {
  RingHop hop;
  hop.bandwidth_Bps = std::numeric_limits<double>::infinity();
  const size_t k = hosts.size();
  for (size_t i = 0; i < k && k > 1; ++i) {
    const Route& route = platform.route(hosts[i], hosts[(i + 1) % k]);
    hop.latency_s = std::max(hop.latency_s, route.latency_s);
    hop.bandwidth_Bps = std::min(hop.bandwidth_Bps, route.bandwidth_Bps);
    hop.forwarding_s_per_byte = std::max(hop.forwarding_s_per_byte, route.forwarding_s_per_byte);
  }
  return hop;
}

double hop_message_latency_s(const RingHop& hop, double bytes, const Platform& platform,
                             bool two_way) {
  return platform.message_latency_s(hop.latency_s, bytes, two_way) +
         platform.forwarding_s(hop.forwarding_s_per_byte, bytes);
}

namespace {

/// `hosts` positions grouped by node, nodes in first-seen order.
std::vector<std::vector<size_t>> positions_by_node(const std::vector<int>& hosts,
                                                   const Platform& platform) {
  std::vector<std::vector<size_t>> nodes;
  std::map<std::string, size_t> node_index;
  for (size_t q = 0; q < hosts.size(); ++q) {
    const std::string& node = platform.hosts[static_cast<size_t>(hosts[q])].node;
    auto [it, inserted] = node_index.emplace(node, nodes.size());
    if (inserted) nodes.emplace_back();
    nodes[it->second].push_back(q);
  }
  return nodes;
}

/// Whether the node-crossing hops of the channels use no shared (non-fat-pipe) link twice.
bool crossings_disjoint(const std::vector<std::vector<size_t>>& channels,
                        const std::vector<int>& hosts, size_t per_node, const Platform& platform) {
  std::set<int> used;
  for (const std::vector<size_t>& order : channels)
    for (size_t q = per_node - 1; q < order.size(); q += per_node) {
      const Route& route = platform.route(hosts[order[q]], hosts[order[(q + 1) % order.size()]]);
      for (int link : route.links) {
        if (platform.links[static_cast<size_t>(link)].sharing == LinkSharing::FatPipe) continue;
        if (!used.insert(link).second) return false;
      }
    }
  return true;
}

}  // namespace

std::vector<std::vector<size_t>> ring_channel_orders(const std::vector<int>& hosts,
                                                     const Platform& platform) {
  std::vector<size_t> given(hosts.size());
  for (size_t q = 0; q < given.size(); ++q)
    given[q] = q;
  const std::vector<std::vector<size_t>> nodes = positions_by_node(hosts, platform);
  const size_t per_node = nodes.empty() ? 0 : nodes.front().size();
  if (nodes.size() < 2 || per_node < 2) return {given};
  for (const auto& node : nodes)
    if (node.size() != per_node) return {given};
  std::vector<std::vector<size_t>> channels(per_node);
  for (size_t j = 0; j < per_node; ++j)
    for (const auto& node : nodes)
      for (size_t q = 0; q < per_node; ++q)
        channels[j].push_back(node[(j + q) % per_node]);
  if (!crossings_disjoint(channels, hosts, per_node, platform)) return {given};
  return channels;
}

double ring_steps_s(double bytes, long long steps, const std::vector<int>& hosts,
                    const Platform& platform) {
  const size_t k = hosts.size();
  if (k < 2 || steps <= 0) return 0;
  const std::vector<std::vector<size_t>> channels = ring_channel_orders(hosts, platform);
  const double chunk = bytes / static_cast<double>(k * channels.size());
  if (channels.size() == 1) {
    const RingHop hop = slowest_ring_hop(hosts, platform);
    const bool two_way = k == 2;  // each step: the two send each other their chunks
    return static_cast<double>(steps) *
           (hop_message_latency_s(hop, chunk, platform, two_way) + chunk / hop.bandwidth_Bps);
  }
  std::map<int, double> load;
  double latency = 0;
  for (const std::vector<size_t>& order : channels)
    for (size_t q = 0; q < k; ++q) {
      const Route& route = platform.route(hosts[order[q]], hosts[order[(q + 1) % k]]);
      latency = std::max(latency, platform.message_latency_s(route, chunk));
      for (int link : route.links) {
        double& bytes_on_link = load[link];
        bytes_on_link = platform.links[static_cast<size_t>(link)].sharing == LinkSharing::FatPipe
                            ? std::max(bytes_on_link, chunk)
                            : bytes_on_link + chunk;
      }
    }
  double slowest = 0;
  for (const auto& [link, bytes_on_link] : load)
    slowest =
        std::max(slowest, bytes_on_link / platform.links[static_cast<size_t>(link)].bandwidth_Bps);
  return static_cast<double>(steps) * (latency + slowest);
}

std::vector<std::vector<size_t>> heap_parents_by_depth(size_t members) {
  std::vector<std::vector<size_t>> parents_by_depth;
  for (size_t parent = 0; 2 * parent + 1 < members; ++parent) {
    size_t depth = 0;
    for (size_t i = parent + 1; i > 1; i /= 2)
      ++depth;
    if (parents_by_depth.size() <= depth) parents_by_depth.resize(depth + 1);
    parents_by_depth[depth].push_back(parent);
  }
  return parents_by_depth;
}

std::vector<std::vector<int>> equal_node_groups(const std::vector<int>& hosts,
                                                const Platform& platform) {
  std::vector<std::vector<int>> nodes;
  for (const std::vector<size_t>& positions : positions_by_node(hosts, platform)) {
    nodes.emplace_back();
    for (size_t q : positions)
      nodes.back().push_back(hosts[q]);
  }
  for (const auto& node : nodes)
    if (node.size() != nodes.front().size())
      throw InputError(platform.source_file, "collective",
                       "hierarchical: the same number of workers on every node",
                       "nodes with " + std::to_string(nodes.front().size()) + " and " +
                           std::to_string(node.size()) + " workers");
  return nodes;
}

}  // namespace tauplan::model
