// collective_ps.cpp: parameter server (push to the servers, pull back), sharded over servers.
//
// With s servers each worker pushes N/s bytes to every server, the servers combine, and every
// worker pulls N/s bytes back from each (as in MXNet/TensorFlow PS with sharded variables).
// Analytic cost per phase: the fan-in (push) or fan-out (pull) bound of collective_fan.hpp for
// each server, and no less than one worker's whole N through its own first link; between them
// the servers' own processing of the call (model/ir/server_work.hpp: 2K messages and K shards
// combined, at the server host's speed; the slowest server). Leaves out: asynchronous or stale
// updates, and sharing elsewhere.
#include <algorithm>

#include "model/ir/collective.hpp"
#include "model/ir/collective_fan.hpp"
#include "model/ir/server_work.hpp"

namespace tauplan::model {
namespace {

double worker_link_time_s(const std::vector<int>& workers, const std::vector<int>& servers,
                          double bytes, const Platform& platform, bool push) {
  // All of a worker's shards cross its own NIC: N bytes through the first (push) or last (pull)
  // link of its routes to the servers.
  double worst = 0;
  for (int w : workers) {
    const Route& route =
        push ? platform.route(w, servers.front()) : platform.route(servers.front(), w);
    if (route.links.empty()) continue;
    const Link& link =
        platform.links[static_cast<size_t>(push ? route.links.front() : route.links.back())];
    // Each of its messages carries one shard.
    const double shard = bytes / static_cast<double>(servers.size());
    worst = std::max(worst, platform.message_latency_s(route, shard) + bytes / link.bandwidth_Bps);
  }
  return worst;
}

class ParameterServer : public CollectiveAlgorithm {
 public:
  const char* name() const override { return "ps"; }
  const char* description() const override {
    return "parameter server: push N/s to each of s servers, pull N/s back";
  }
  int servers_needed() const override { return -1; }
  double time_s(const CollectiveCall& call, const Platform& platform) const override {
    if (call.servers.empty() || call.hosts.empty()) return 0;
    const double shard = call.bytes / static_cast<double>(call.servers.size());
    double push = worker_link_time_s(call.hosts, call.servers, call.bytes, platform, true);
    double pull = worker_link_time_s(call.hosts, call.servers, call.bytes, platform, false);
    double combine = 0;
    const ServerLoad load = sync_server_load(static_cast<int>(call.hosts.size()), shard);
    for (int server : call.servers) {
      push = std::max(push, fan_in_time_s(call.hosts, server, shard, platform));
      pull = std::max(pull, fan_out_time_s(server, call.hosts, shard, platform));
      combine = std::max(combine, server_seconds(platform, server, load));
    }
    return push + combine + pull;
  }
};

}  // namespace

std::unique_ptr<CollectiveAlgorithm> make_parameter_server() {
  return std::make_unique<ParameterServer>();
}

const char* parameter_server_collective() {
  return collective_algorithm(ParameterServer().name()).name();
}

}  // namespace tauplan::model
