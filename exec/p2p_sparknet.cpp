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

std::unique_ptr<P2pCollective> make_p2p_sparknet() {
  // One server (the model's servers_needed() is 1): its shard is the whole vector.
  return make_push_pull_collective({"sparknet", 41, 42, 43,
                                    "sparknet collect and broadcast with the driver",
                                    "sparknet driver: the workers' collect"});
}

}  // namespace tauplan::exec
