// node_fabric.cpp: reading a node's shape off a platform, and rebuilding it at any size.
#include "model/inputs/node_fabric.hpp"

#include <limits>
#include <map>

#include <fmt/format.h>

#include "model/base/error.hpp"

namespace tauplan::model {
namespace {

/// Routes of a node fabric: inside a node, up(src) then down(dst) of the NVLink pair; across
/// nodes, up(src) then down(dst) of the NIC pair.
class NodeFabricRoutes : public RouteOracle {
 public:
  NodeFabricRoutes(std::vector<Link> links, int gpus_per_node)
      : links_(std::move(links)), gpus_per_node_(gpus_per_node) {}

  Route route(int src_host, int dst_host) const override {
    Route route;
    route.bandwidth_Bps = std::numeric_limits<double>::infinity();
    if (src_host == dst_host) return route;
    const bool same_node = src_host / gpus_per_node_ == dst_host / gpus_per_node_;
    const int base = same_node ? 0 : 2;  // each host: intra up, intra down, inter up, inter down
    route.links = {4 * src_host + base, 4 * dst_host + base + 1};
    total_route(route, links_);
    return route;
  }

 private:
  std::vector<Link> links_;
  int gpus_per_node_;
};

}  // namespace

NodeFabric node_fabric_of(const Platform& platform) {
  const std::string& file = platform.source_file;
  std::map<std::string, std::vector<int>> by_node;
  std::vector<std::string> order;
  for (int h : platform.worker_hosts()) {
    const std::string& node = platform.hosts[static_cast<size_t>(h)].node;
    if (!by_node.count(node)) order.push_back(node);
    by_node[node].push_back(h);
  }
  if (order.size() < 2)
    throw InputError(file, "node",
                     "at least two nodes of worker hosts (their routes describe the fabric)",
                     fmt::format("{}", order.size()));
  const std::vector<int>& first = by_node[order[0]];
  const Host& gpu = platform.hosts[static_cast<size_t>(first[0])];
  for (const std::string& node : order) {
    const std::vector<int>& hosts = by_node[node];
    if (hosts.size() != first.size())
      throw InputError(file, "node",
                       fmt::format("nodes of equal size ({} GPUs as {})", first.size(), order[0]),
                       fmt::format("{} GPUs in {}", hosts.size(), node));
    for (int h : hosts) {
      const Host& host = platform.hosts[static_cast<size_t>(h)];
      if (host.speed_flops != gpu.speed_flops || host.gpu_model != gpu.gpu_model)
        throw InputError(
            file, "node",
            fmt::format("identical GPUs ({} at {:g} flop/s)", gpu.gpu_model, gpu.speed_flops),
            fmt::format("{} ({} at {:g})", host.name, host.gpu_model, host.speed_flops));
    }
  }
  NodeFabric fabric;
  fabric.source_file = file;
  fabric.source_hash = platform.source_hash;
  fabric.gpus_per_node = static_cast<int>(first.size());
  fabric.gpu = gpu;
  fabric.inter_node = platform.route(first[0], by_node[order[1]][0]);
  if (first.size() > 1) fabric.intra_node = platform.route(first[0], first[1]);
  return fabric;
}

Platform make_node_fabric_platform(const NodeFabric& fabric, int nodes) {
  Platform platform;
  platform.source_file = fmt::format("{} nodes like those of {}", nodes, fabric.source_file);
  platform.source_hash = fabric.source_hash;
  auto add_pair = [&platform](const std::string& host, const char* what, const Route& route) {
    for (const char* direction : {"_UP", "_DOWN"}) {
      Link link;
      link.name = host + "-" + what + direction;
      link.bandwidth_Bps = route.bandwidth_Bps;
      link.latency_s = route.latency_s / 2;
      link.sharing = LinkSharing::SplitDuplex;
      platform.links.push_back(link);
    }
  };
  for (int n = 0; n < nodes; ++n)
    for (int g = 0; g < fabric.gpus_per_node; ++g) {
      Host host = fabric.gpu;
      host.name = fmt::format("n{}-gpu{}", n, g);
      host.node = fmt::format("n{}", n);
      host.role = HostRole::Worker;
      platform.hosts.push_back(host);
      add_pair(host.name, "intra", fabric.intra_node);
      add_pair(host.name, "inter", fabric.inter_node);
    }
  platform.routes = std::make_shared<NodeFabricRoutes>(platform.links, fabric.gpus_per_node);
  return platform;
}

}  // namespace tauplan::model
