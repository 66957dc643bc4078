// p2p_hierarchical.cpp: two-level all-reduce over point-to-point messages (a PeerGroup)
// (model/ir/collective_hierarchical.cpp's and sim/lower_hierarchical.cpp's "hierarchical").
//
// Workers are grouped by their host's node (Host::node; G per node on M nodes, checked when the
// run's layout is made). On [w x, w] (N+1 floats): (1) a ring reduce-scatter inside every node
// (G-1 steps of N/G), after which the node's i-th worker holds the node's sum of chunk
// (i+1) mod G; (2) G rings across nodes, ring i joining the i-th worker of every node, each a
// ring all-reduce (reduce-scatter then all-gather, 2(M-1) steps of N/(G M)) of that chunk;
// (3) a ring all-gather inside every node; then every worker divides by the summed weight.
// Messages: K (2(G-1) + 2(M-1)) per call, as the simulator's flows. With one worker per node it
// is the ring of p2p_ring.cpp. Leaves out: NVLS/SHARP in-switch reduction, overlap of phases.
#include "exec/p2p_collective.hpp"
#include "model/ir/collective.hpp"

namespace tauplan::exec {
namespace {

constexpr int kTagIntraReduceScatter = 11;
constexpr int kTagInterReduceScatter = 13;
constexpr int kTagInterAllGather = 14;
constexpr int kTagIntraAllGather = 12;

class P2pHierarchical : public P2pCollective {
 public:
  const char* name() const override { return "hierarchical"; }
  void check(const std::vector<int>& worker_hosts, const model::Platform& platform) const override {
    model::equal_node_groups(worker_hosts, platform);  // throws on unequal nodes
  }
  void mean(const CollectiveRanks& ranks, PeerGroup& peers, float* data, double weight,
            std::size_t n) const override {
    const auto& nodes = ranks.nodes;
    const int g = static_cast<int>(nodes.front().size());
    // This worker's node j and index i in it.
    int j = 0, i = 0;
    for (std::size_t a = 0; a < nodes.size(); ++a)
      for (std::size_t b = 0; b < nodes[a].size(); ++b)
        if (nodes[a][b] == ranks.rank) {
          j = static_cast<int>(a);
          i = static_cast<int>(b);
        }
    const std::vector<int>& node = nodes[static_cast<std::size_t>(j)];
    std::vector<int> across;  // the i-th worker of every node
    for (const auto& other : nodes)
      across.push_back(other[static_cast<std::size_t>(i)]);

    float* sum = weighted_with_weight(data, weight, n);
    const std::size_t count = n + 1;
    ring_reduce_scatter(peers, node, i, sum, count, kTagIntraReduceScatter,
                        "hierarchical intra-node reduce-scatter");
    const auto [begin, end] = chunk_range(count, g, (i + 1) % g);
    ring_reduce_scatter(peers, across, j, sum + begin, end - begin, kTagInterReduceScatter,
                        "hierarchical inter-node reduce-scatter");
    ring_all_gather(peers, across, j, sum + begin, end - begin, 1, kTagInterAllGather,
                    "hierarchical inter-node all-gather");
    ring_all_gather(peers, node, i, sum, count, 1, kTagIntraAllGather,
                    "hierarchical intra-node all-gather");
    divide_by_weight(sum, n, data);
  }
};

}  // namespace

std::unique_ptr<P2pCollective> make_p2p_hierarchical() {
  return std::make_unique<P2pHierarchical>();
}

}  // namespace tauplan::exec
