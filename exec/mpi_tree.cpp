// mpi_tree.cpp: binary-tree reduce then broadcast over MPI point-to-point messages
// (model/ir/collective_tree.cpp's and sim/lower_tree.cpp's "tree").
//
// The workers form a binary heap in worker order, the tree of model::heap_parents_by_depth
// (children of i are 2i+1 and 2i+2). Reduce: a worker receives the partial sums
// [sum w x, sum w] (N+1 floats) of its children (both at once), adds them to its own in child
// order and sends the result to its parent; worker 0 divides by the summed weight. Broadcast:
// the mean (N floats) goes back down, each parent sending it to its children. Messages: K-1 up
// and K-1 down per call, as the simulator's flows. Leaves out: pipelining chunks down the tree.
#include <cstddef>

#include "exec/mpi_algorithm.hpp"
#include "model/ir/collective.hpp"

namespace tauplan::exec {
namespace {

constexpr int kTagReduce = 21;
constexpr int kTagBroadcast = 22;

class MpiTree : public MpiAlgorithm {
 public:
  const char* name() const override { return "tree"; }
  void mean(const MpiLayout& layout, MpiMessages& messages, float* data, double weight,
            std::size_t n) const override {
    const auto k = static_cast<std::size_t>(layout.workers);
    const auto me = static_cast<std::size_t>(layout.rank);
    std::vector<int> children;
    for (const auto& parents : model::heap_parents_by_depth(k))
      for (std::size_t parent : parents)
        if (parent == me)
          for (std::size_t child = 2 * parent + 1; child <= 2 * parent + 2 && child < k; ++child)
            children.push_back(static_cast<int>(child));
    const int parent = layout.rank == 0 ? -1 : (layout.rank - 1) / 2;

    std::vector<float> sum = weighted_with_weight(data, weight, n);
    std::vector<std::vector<float>> from_children(children.size(), std::vector<float>(n + 1));
    for (std::size_t c = 0; c < children.size(); ++c)
      messages.post_recv(from_children[c].data(), n + 1, children[c], kTagReduce);
    messages.wait_all("tree reduce: the children's sums");
    for (const auto& partial : from_children)
      for (std::size_t i = 0; i <= n; ++i)
        sum[i] += partial[i];
    if (parent >= 0) {
      messages.send(sum.data(), n + 1, parent, kTagReduce, "tree reduce: the sum to the parent");
      messages.recv(data, n, parent, kTagBroadcast, "tree broadcast: the mean from the parent");
    } else {
      divide_by_weight(sum.data(), n, data);
    }
    for (int child : children)
      messages.post_send(data, n, child, kTagBroadcast);
    messages.wait_all("tree broadcast: the mean to the children");
  }
};

}  // namespace

std::unique_ptr<MpiAlgorithm> make_mpi_tree() {
  return std::make_unique<MpiTree>();
}

}  // namespace tauplan::exec
