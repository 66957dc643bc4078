// p2p_sparknet.cpp: SparkNet's driver over point-to-point messages (a PeerGroup)
// (model/ir/collective_sparknet.cpp's and sim/lower_sparknet.cpp's "sparknet").
//
// The driver is the run's one server rank (rank K, the plan's first server host). Each call:
// every worker sends its whole vector and weight to the driver (collect), the driver averages
// the K vectors with combine_mean in worker order (the thread communicator's floats, bit for
// bit) and sends the average to every worker (broadcast); SparkNet's driver does the same
// with Spark's reduce and broadcast. It is the push and pull of `ps` with one unsharded server,
// which is what the model says SparkNet's synchronisation is. Messages: K collected and K
// broadcast per call, as the simulator's flows; the driver reports its processing per call as a
// ps server does (the row's `servers`). Leaves out: Spark's torrent broadcast and tree
// aggregation, task scheduling and serialisation.
#include "exec/p2p_collective.hpp"

namespace tauplan::exec {
namespace {

constexpr int kTagCollect = 41;
constexpr int kTagBroadcast = 42;
constexpr int kTagStop = 43;

class P2pSparkNet : public P2pCollective {
 public:
  const char* name() const override { return "sparknet"; }
  bool uses_servers() const override { return true; }
  void mean(const CollectiveRanks& ranks, PeerGroup& peers, float* data, double weight,
            std::size_t n) const override {
    // One server (model's servers_needed() is 1): its shard is the whole vector.
    push_pull_mean(ranks, peers, data, weight, n, kTagCollect, kTagBroadcast,
                   "sparknet collect and broadcast with the driver");
  }
  bool serve(const CollectiveRanks& ranks, PeerGroup& peers, ServedCall* call) const override {
    return serve_push_pull(ranks, peers, kTagCollect, kTagBroadcast, kTagStop,
                           "sparknet driver: the workers' collect", call);
  }
  void finish(const CollectiveRanks& ranks, PeerGroup& peers) const override {
    stop_servers(ranks, peers, kTagStop);
  }
};

}  // namespace

std::unique_ptr<P2pCollective> make_p2p_sparknet() {
  return std::make_unique<P2pSparkNet>();
}

}  // namespace tauplan::exec
