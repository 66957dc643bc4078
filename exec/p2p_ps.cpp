// p2p_ps.cpp: parameter server over point-to-point messages, a PeerGroup
// (model/ir/collective_ps.cpp's and sim/lower_ps.cpp's "ps").
//
// The run has K worker ranks and s server ranks (K..K+s-1, the plan's server hosts). Each call:
// every worker pushes [shard j of x (N/s floats), w] to server j and waits for shard j's mean
// (pull); each server receives the K shards, combine_mean()s them in worker order (so the floats
// are the thread communicator's, bit for bit) and sends the result to every worker. A server
// rank serves call after call until every worker has sent it a stop message at the end of the
// run. Messages: K s pushes and K s pulls per call, as the simulator's flows. Each server reports
// its own processing per call (ServedCall: from the K pushes in to the K replies posted, 2K
// messages, K x its shard's floats x 4 bytes), which measure gathers as the row's `servers`
// (model/ir/server_work.hpp's per-message and per-byte work is fitted to it). Leaves out:
// asynchronous or stale updates, and server-side optimizers (the server only averages).
#include "exec/p2p_collective.hpp"

namespace tauplan::exec {
namespace {

constexpr int kTagPush = 31;
constexpr int kTagPull = 32;
constexpr int kTagStop = 33;

class P2pParameterServer : public P2pCollective {
 public:
  const char* name() const override { return "ps"; }
  bool uses_servers() const override { return true; }
  void mean(const CollectiveRanks& ranks, PeerGroup& peers, float* data, double weight,
            std::size_t n) const override {
    push_pull_mean(ranks, peers, data, weight, n, kTagPush, kTagPull,
                   "ps push and pull with the server ranks");
  }
  bool serve(const CollectiveRanks& ranks, PeerGroup& peers, ServedCall* call) const override {
    return serve_push_pull(ranks, peers, kTagPush, kTagPull, kTagStop,
                           "ps server: the workers' push", call);
  }
  void finish(const CollectiveRanks& ranks, PeerGroup& peers) const override {
    stop_servers(ranks, peers, kTagStop);
  }
};

}  // namespace

std::unique_ptr<P2pCollective> make_p2p_ps() {
  return std::make_unique<P2pParameterServer>();
}

}  // namespace tauplan::exec
