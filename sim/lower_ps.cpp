// lower_ps.cpp: parameter server as point-to-point flows (model/ir/collective_ps.cpp's "ps").
//
// With s servers, every worker pushes N/s bytes to each server at once (push stage), the
// servers combine, then each server sends N/s bytes back to every worker (pull stage). The
// server actor that drives both stages lives on the first server's host. Flows a host would
// send to itself (a worker that is also a server) are left out, as in the analytic cost.
// SimGrid shares each server's link among the K pushes, and any link on the way too (a
// backbone the analytic fan-in bound does not name). Between the stages each server processes
// the call on its host (model/ir/server_work.hpp: 2K messages, K shards combined), as work after
// the push stage. Leaves out: asynchronous or stale updates.
#include "model/ir/server_work.hpp"
#include "sim/collective_lowering.hpp"

namespace tauplan::sim {
namespace {

class ParameterServerLowering : public CollectiveLowering {
 public:
  const char* name() const override { return "ps"; }
  FlowProgram lower(const model::CollectiveCall& call,
                    const model::Platform& platform) const override {
    FlowProgram program;
    if (call.servers.empty() || call.hosts.empty()) return program;
    program.coordinator_host = call.servers.front();
    const double shard = call.bytes / static_cast<double>(call.servers.size());
    FlowStage push{"push", {}, 1, 0.0, {}};
    FlowStage pull{"pull", {}, 1, 0.0, {}};
    for (int worker : call.hosts)
      for (int server : call.servers) {
        if (worker == server) continue;
        push.flows.push_back(Flow{worker, server, shard});
        pull.flows.push_back(Flow{server, worker, shard});
      }
    const model::ServerLoad load =
        model::sync_server_load(static_cast<int>(call.hosts.size()), shard);
    for (int server : call.servers) {
      const double flop = model::server_flop(model::server_work_of(platform, server), load);
      if (flop > 0) push.work_after.push_back(HostWork{server, flop});
    }
    program.stages.push_back(std::move(push));
    program.stages.push_back(std::move(pull));
    return program;
  }
};

}  // namespace

std::unique_ptr<CollectiveLowering> make_ps_lowering() {
  return std::make_unique<ParameterServerLowering>();
}

}  // namespace tauplan::sim
