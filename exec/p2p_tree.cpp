// p2p_tree.cpp: binary-tree reduce then broadcast over point-to-point messages (a PeerGroup)
// (model/ir/collective_tree.cpp's and sim/lower_tree.cpp's "tree").
//
// The workers form a binary heap in worker order, the tree of model::heap_parents_by_depth
// (children of i are 2i+1 and 2i+2). Reduce: a worker receives the partial sums
// [sum w x, sum w] (N+1 floats) of its children (both at once), adds them to its own in child
// order and sends the result to its parent; worker 0 divides by the summed weight. Broadcast:
// the mean (N floats) goes back down, each parent sending it to its children. Messages: K-1 up
// and K-1 down per call, as the simulator's flows. Leaves out: pipelining chunks down the tree.
#include <cstddef>

#include "exec/p2p_collective.hpp"
#include "model/ir/collective.hpp"

namespace tauplan::exec {
namespace {

constexpr int kTagReduce = 21;
constexpr int kTagBroadcast = 22;

class P2pTree : public P2pCollective {
 public:
  const char* name() const override { return "tree"; }
  void mean(const CollectiveRanks& ranks, PeerGroup& peers, float* data, double weight,
            std::size_t n) const override {
    const auto k = static_cast<std::size_t>(ranks.workers);
    const auto me = static_cast<std::size_t>(ranks.rank);
    std::vector<int> children;
    for (const auto& parents : model::heap_parents_by_depth(k))
      for (std::size_t parent : parents)
        if (parent == me)
          for (std::size_t child = 2 * parent + 1; child <= 2 * parent + 2 && child < k; ++child)
            children.push_back(static_cast<int>(child));
    const int parent = ranks.rank == 0 ? -1 : (ranks.rank - 1) / 2;

    float* sum = weighted_with_weight(data, weight, n);
    float* from_children = reused_floats(ReusedBuffer::Children, children.size() * (n + 1));
    {
      const PeerWaitLabel label(peers, "tree reduce: the children's sums");
      for (std::size_t c = 0; c < children.size(); ++c)
        peers.post_recv(children[c], from_children + c * (n + 1), n + 1, kTagReduce);
      peers.complete_posted();
    }
    for (std::size_t c = 0; c < children.size(); ++c)
      for (std::size_t i = 0; i <= n; ++i)
        sum[i] += from_children[c * (n + 1) + i];
    if (parent >= 0) {
      const PeerWaitLabel label(peers,
                                "tree reduce and broadcast: the sum to the parent, the mean back");
      peers.post_send(parent, sum, n + 1, kTagReduce);
      peers.complete_posted();  // a blocking send, as the flows of the simulator
      peers.recv(parent, data, n, kTagBroadcast);
    } else {
      divide_by_weight(sum, n, data);
    }
    const PeerWaitLabel label(peers, "tree broadcast: the mean to the children");
    for (int child : children)
      peers.post_send(child, data, n, kTagBroadcast);
    peers.complete_posted();
  }
};

}  // namespace

std::unique_ptr<P2pCollective> make_p2p_tree() {
  return std::make_unique<P2pTree>();
}

}  // namespace tauplan::exec
