// lower_ring.cpp: ring all-reduce as point-to-point flows (model/ir/collective_ring.cpp's "ring").
//
// Reduce-scatter then all-gather: 2(K-1) steps; in each, every worker sends N/K bytes to its
// right neighbour, and a step ends when all K transfers have arrived. On uncontended links this
// gives model's 2(K-1)(alpha + N/(K beta)); where hops share a link (two rings through one
// switch port) SimGrid shares its bandwidth. Across nodes, one ring per channel as the model's
// (model::ring_channel_orders), each with N/C. Leaves out: NCCL's chunk pipelining within a step
// and the reduction arithmetic.
#include "sim/collective_lowering.hpp"

#include <vector>

#include "model/ir/collective.hpp"

namespace tauplan::sim {
namespace {

class RingLowering : public CollectiveLowering {
 public:
  const char* name() const override { return "ring"; }
  FlowProgram lower(const model::CollectiveCall& call,
                    const model::Platform& platform) const override {
    FlowProgram program;
    const auto k = static_cast<long long>(call.hosts.size());
    if (k == 0) return program;
    program.coordinator_host = call.hosts.front();
    if (k < 2) return program;
    // One ring per channel (model::ring_channel_orders), 1/channels of the bytes each, the
    // channels' flows of a step together.
    const std::vector<std::vector<size_t>> channels =
        model::ring_channel_orders(call.hosts, platform);
    const double chunk =
        call.bytes / static_cast<double>(k * static_cast<long long>(channels.size()));
    for (const char* phase : {"reduce-scatter", "all-gather"}) {
      FlowStage stage;
      stage.phase = phase;
      stage.repeat = k - 1;
      for (const std::vector<size_t>& order : channels) {
        std::vector<int> ring;
        for (size_t q : order)
          ring.push_back(call.hosts[q]);
        const FlowStage channel = ring_stage(phase, ring, chunk, k - 1);
        stage.flows.insert(stage.flows.end(), channel.flows.begin(), channel.flows.end());
      }
      program.stages.push_back(std::move(stage));
    }
    return program;
  }
};

}  // namespace

std::unique_ptr<CollectiveLowering> make_ring_lowering() {
  return std::make_unique<RingLowering>();
}

}  // namespace tauplan::sim
