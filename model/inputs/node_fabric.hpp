// node_fabric.hpp: a cluster of identical multi-GPU nodes on a non-blocking fabric, at any size.
//
// Megatron's published runs use up to 3072 GPUs (384 DGX A100 nodes on a three-level fat tree);
// a SimGrid XML of that size is impractical to route. A NodeFabric is what such a cluster looks
// like from one GPU: the node's GPU (speed, memory, props), how many share a node, the route
// between two GPUs of one node (NVLink through NVSwitch) and between GPUs of two nodes (their
// NICs through the fabric). It is read off a platform that holds at least two identical nodes
// (node_fabric_of: the routes first-GPU -> second-GPU of the first node, and first node ->
// second node) and rebuilt at any node count as a Platform (make_node_fabric_platform) with a
// private up and down link per GPU for each of the two routes (split duplex, each half the
// route's latency), so every route of the large platform equals the matching route of the
// small one. What it leaves out: oversubscribed or tapered fabrics (the fabric is assumed
// non-blocking: the fat tree of full bisection Selene has), contention between flows of one
// GPU on one link except as the analytic formulas name it, and heterogeneous nodes (refused).
#pragma once

#include <string>

#include "model/inputs/platform.hpp"

namespace tauplan::model {

struct NodeFabric {
  std::string source_file;  ///< platform it was read from
  std::string source_hash;
  int gpus_per_node = 1;
  Host gpu;          ///< the node's GPU (name and node are replaced per copy)
  Route intra_node;  ///< GPU to GPU inside a node
  Route inter_node;  ///< GPU to GPU of two nodes
};

/// Reads the node shape off a platform: worker hosts grouped by node, every node with the same
/// number of GPUs of the same speed and model. InputError naming the platform file (key
/// "node") otherwise, or when it has fewer than two nodes (no inter-node route to copy).
NodeFabric node_fabric_of(const Platform& platform);

/// `nodes` copies of the node: hosts n<K>-gpu<J>, node n<K>, role worker.
Platform make_node_fabric_platform(const NodeFabric& fabric, int nodes);

}  // namespace tauplan::model
