// collective.cpp: the registry of collective algorithms and helpers shared by their costs.
//
// Adding an algorithm: one file with its class and factory, one line in registry() below.
#include "model/collective.hpp"

#include <algorithm>
#include <limits>
#include <map>

#include "model/error.hpp"
#include "model/registry.hpp"

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
  }
  return hop;
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
  std::map<std::string, size_t> node_index;
  for (int host : hosts) {
    const std::string& node = platform.hosts[static_cast<size_t>(host)].node;
    auto [it, inserted] = node_index.emplace(node, nodes.size());
    if (inserted) nodes.emplace_back();
    nodes[it->second].push_back(host);
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
