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

std::unique_ptr<P2pCollective> make_p2p_ps() {
  return make_push_pull_collective(
      {"ps", 31, 32, 33, "ps push and pull with the server ranks", "ps server: the workers' push"});
}

}  // namespace tauplan::exec
