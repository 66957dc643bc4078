// lower_sparknet.cpp: SparkNet's broadcast + collect (model/ir/collective_sparknet.cpp).
//
// The driver (first server host) sends the averaged parameters, N bytes, to every worker at
// once, then every worker sends its N bytes of parameters back to the driver. The driver's link
// carries K flows in each stage. Leaves out: Spark's torrent broadcast and tree aggregation,
// task scheduling and serialisation (give the job's comm_s to model those).
#include "sim/collective_lowering.hpp"

namespace tauplan::sim {
namespace {

class SparkNetLowering : public CollectiveLowering {
 public:
  const char* name() const override { return "sparknet"; }
  FlowProgram lower(const model::CollectiveCall& call,
                    const model::Platform& /*platform*/) const override {
    FlowProgram program;
    if (call.servers.empty() || call.hosts.empty()) return program;
    const int driver = call.servers.front();
    program.coordinator_host = driver;
    FlowStage broadcast{"broadcast", {}, 1, 0.0, {}};
    FlowStage collect{"collect", {}, 1, 0.0, {}};
    for (int worker : call.hosts) {
      if (worker == driver) continue;
      broadcast.flows.push_back(Flow{driver, worker, call.bytes});
      collect.flows.push_back(Flow{worker, driver, call.bytes});
    }
    program.stages.push_back(std::move(broadcast));
    program.stages.push_back(std::move(collect));
    return program;
  }
};

}  // namespace

std::unique_ptr<CollectiveLowering> make_sparknet_lowering() {
  return std::make_unique<SparkNetLowering>();
}

}  // namespace tauplan::sim
