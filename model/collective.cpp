// collective.cpp: the registry of collective algorithms and helpers shared by their costs.
//
// Adding an algorithm: one file with its class and factory, one line in registry() below.
#include "model/collective.hpp"

#include <algorithm>
#include <limits>
#include <map>

#include "model/error.hpp"

namespace tauplan::model {
namespace {

const std::vector<std::unique_ptr<CollectiveAlgorithm>>& registry() {
  static const std::vector<std::unique_ptr<CollectiveAlgorithm>> algorithms = [] {
    std::vector<std::unique_ptr<CollectiveAlgorithm>> all;
    all.push_back(make_ring_allreduce());
    all.push_back(make_parameter_server());
    all.push_back(make_tree_allreduce());
    all.push_back(make_sparknet_broadcast_collect());
    all.push_back(make_hierarchical_allreduce());
    return all;
  }();
  return algorithms;
}

}  // namespace

const CollectiveAlgorithm& collective_algorithm(const std::string& name, const std::string& file) {
  for (const auto& algorithm : registry())
    if (name == algorithm->name()) return *algorithm;
  std::string names;
  for (const auto& n : collective_algorithm_names())
    names += (names.empty() ? "" : ", ") + n;
  throw InputError(file, "collective", "one of " + names, "'" + name + "'");
}

std::vector<std::string> collective_algorithm_names() {
  std::vector<std::string> names;
  for (const auto& algorithm : registry())
    names.emplace_back(algorithm->name());
  return names;
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
