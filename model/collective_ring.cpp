// collective_ring.cpp: ring all-reduce (reduce-scatter then all-gather, as NCCL's ring).
//
// 2(K-1) steps; in each, every worker sends N/K bytes to its right neighbour. Analytic cost:
// 2(K-1)(alpha + N/(K beta)) with alpha and beta of the ring's slowest hop (all hops of a step
// run together, so the slowest decides). Leaves out: contention between hops that share a link
// (the simulator sees it), pipelining inside a chunk, and the reduction arithmetic.
#include "model/collective.hpp"

namespace tauplan::model {
namespace {

class RingAllReduce : public CollectiveAlgorithm {
 public:
  const char* name() const override { return ring_collective(); }
  const char* description() const override {
    return "ring all-reduce: reduce-scatter + all-gather, 2(K-1) steps of N/K bytes";
  }
  double time_s(const CollectiveCall& call, const Platform& platform) const override {
    const double k = static_cast<double>(call.hosts.size());
    if (k < 2) return 0;
    const RingHop hop = slowest_ring_hop(call.hosts, platform);
    const double chunk = call.bytes / k;
    return 2 * (k - 1) *
           (platform.message_latency_s(hop.latency_s, chunk) + chunk / hop.bandwidth_Bps);
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
