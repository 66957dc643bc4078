// collective_fan.cpp: fan-in and fan-out costs (see collective_fan.hpp).
#include "model/ir/collective_fan.hpp"

#include <algorithm>
#include <map>

namespace tauplan::model {
namespace {

// `end_link` picks the link at the shared end of a route (last for fan-in, first for fan-out).
template <typename EndLink>
double fan_time_s(const std::vector<std::pair<int, int>>& flows, double bytes,
                  const Platform& platform, EndLink end_link) {
  double latency = 0, slowest_flow = 0;
  std::map<int, int> flows_per_end_link;
  for (const auto& [src, dst] : flows) {
    if (src == dst) continue;
    const Route& route = platform.route(src, dst);
    latency = std::max(latency, platform.message_latency_s(route, bytes));
    slowest_flow = std::max(slowest_flow, bytes / route.bandwidth_Bps);
    if (!route.links.empty()) ++flows_per_end_link[end_link(route)];
  }
  double shared = 0;
  for (const auto& [link, count] : flows_per_end_link) {
    const Link& l = platform.links[static_cast<size_t>(link)];
    const double sharing = l.sharing == LinkSharing::FatPipe ? 1.0 : count;
    shared = std::max(shared, sharing * bytes / l.bandwidth_Bps);
  }
  if (flows_per_end_link.empty() && slowest_flow == 0) return 0;
  return latency + std::max(slowest_flow, shared);
}

}  // namespace

double fan_in_time_s(const std::vector<int>& sources, int destination, double bytes,
                     const Platform& platform) {
  std::vector<std::pair<int, int>> flows;
  for (int s : sources)
    flows.emplace_back(s, destination);
  return fan_time_s(flows, bytes, platform, [](const Route& r) { return r.links.back(); });
}

double fan_out_time_s(int source, const std::vector<int>& destinations, double bytes,
                      const Platform& platform) {
  std::vector<std::pair<int, int>> flows;
  for (int d : destinations)
    flows.emplace_back(source, d);
  return fan_time_s(flows, bytes, platform, [](const Route& r) { return r.links.front(); });
}

}  // namespace tauplan::model
