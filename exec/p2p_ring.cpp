// p2p_ring.cpp: ring all-reduce over point-to-point messages, a PeerGroup
// (model/ir/collective_ring.cpp's and sim/lower_ring.cpp's "ring").
//
// The K workers form a ring in worker order. Each sums [w_k x_k, w_k] (N+1 floats, in K chunks
// of about N/K): K-1 reduce-scatter steps, each a send_recv (MPI_Sendrecv under MPI) of one chunk
// to the right neighbour while receiving one from the left, then K-1 all-gather steps; every worker
// then divides by the summed weight. Messages: 2(K-1) per worker, 2K(K-1) in all, as the
// simulator's flows. Leaves out: chunk pipelining inside a step (NCCL's), and overlap with the
// backward pass.
#include <numeric>

#include "exec/p2p_collective.hpp"

namespace tauplan::exec {
namespace {

constexpr int kTagReduceScatter = 11;
constexpr int kTagAllGather = 12;

class P2pRing : public P2pCollective {
 public:
  const char* name() const override { return "ring"; }
  void mean(const CollectiveRanks& ranks, PeerGroup& peers, float* data, double weight,
            std::size_t n) const override {
    std::vector<int> ring(static_cast<std::size_t>(ranks.workers));
    std::iota(ring.begin(), ring.end(), 0);
    float* sum = weighted_with_weight(data, weight, n);
    const std::size_t count = n + 1;
    ring_reduce_scatter(peers, ring, ranks.rank, sum, count, kTagReduceScatter,
                        "ring reduce-scatter");
    ring_all_gather(peers, ring, ranks.rank, sum, count, 1, kTagAllGather, "ring all-gather");
    divide_by_weight(sum, n, data);
  }
};

}  // namespace

std::unique_ptr<P2pCollective> make_p2p_ring() {
  return std::make_unique<P2pRing>();
}

}  // namespace tauplan::exec
