// collective.cpp: the registry of collective algorithms and helpers shared by their costs.
//
// Adding an algorithm: one file with its class and factory, one line in registry() below.
#include "model/collective.hpp"

#include <algorithm>
#include <limits>

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

}  // namespace tauplan::model
