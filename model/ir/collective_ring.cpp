// collective_ring.cpp: ring all-reduce (reduce-scatter then all-gather, as NCCL's ring).
//
// 2(K-1) steps; in each, every worker sends N/K bytes to its right neighbour. Analytic cost:
// 2(K-1)(alpha + N/(K beta)) with alpha and beta of the ring's slowest hop (all hops of a step
// run together, so the slowest decides). Across nodes with the same number of workers on each,
// NCCL runs one ring per channel, each leaving a node through another GPU's NIC
// (model/ir/collective.hpp's ring_channel_orders): N/C each, and a step takes the most loaded
// link's time. Leaves out: contention between hops of one ring that share a link (the simulator
// sees it), pipelining inside a chunk, and the reduction arithmetic.
#include "model/ir/collective.hpp"

namespace tauplan::model {
namespace {

class RingAllReduce : public CollectiveAlgorithm {
 public:
  const char* name() const override { return ring_collective(); }
  const char* description() const override {
    return "ring all-reduce: reduce-scatter + all-gather, 2(K-1) steps of N/K bytes";
  }
  double time_s(const CollectiveCall& call, const Platform& platform) const override {
    const auto k = static_cast<long long>(call.hosts.size());
    return ring_steps_s(call.bytes, 2 * (k - 1), call.hosts, platform);
  }
};

}  // namespace

const char* ring_collective() {
  return "ring";
}

std::unique_ptr<CollectiveAlgorithm> make_ring_allreduce() {
  return std::make_unique<RingAllReduce>();
}

}  // namespace tauplan::model
