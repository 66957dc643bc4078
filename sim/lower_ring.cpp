// lower_ring.cpp: ring all-reduce as point-to-point flows (model/collective_ring.cpp's "ring").
//
// Reduce-scatter then all-gather: 2(K-1) steps; in each, every worker sends N/K bytes to its
// right neighbour, and a step ends when all K transfers have arrived. On uncontended links this
// gives model's 2(K-1)(alpha + N/(K beta)); where hops share a link (two rings through one
// switch port) SimGrid shares its bandwidth. Leaves out: NCCL's chunk pipelining within a step
// and the reduction arithmetic.
#include "sim/collective_lowering.hpp"

namespace tauplan::sim {
namespace {

class RingLowering : public CollectiveLowering {
 public:
  const char* name() const override { return "ring"; }
  FlowProgram lower(const model::CollectiveCall& call,
                    const model::Platform& /*platform*/) const override {
    FlowProgram program;
    const auto k = static_cast<long long>(call.hosts.size());
    if (k == 0) return program;
    program.coordinator_host = call.hosts.front();
    if (k < 2) return program;
    const double chunk = call.bytes / static_cast<double>(k);
    program.stages.push_back(ring_stage("reduce-scatter", call.hosts, chunk, k - 1));
    program.stages.push_back(ring_stage("all-gather", call.hosts, chunk, k - 1));
    return program;
  }
};

}  // namespace

std::unique_ptr<CollectiveLowering> make_ring_lowering() {
  return std::make_unique<RingLowering>();
}

}  // namespace tauplan::sim
