// collective_tree.cpp: binary-tree reduce to the first worker, then broadcast back down.
//
// Workers form a binary heap in group order (children of i are 2i+1 and 2i+2). Reduce: level
// by level from the leaves, each parent receives N from each child; broadcast: the reverse.
// Analytic cost: the sum over levels of the slowest parent's fan-in (then fan-out), each bounded
// by the parent's link, so two children into one parent cost 2N/beta there. Leaves out:
// pipelining of chunks down the tree (NCCL's tree pipelines), which the simulator also omits.
#include <algorithm>

#include "model/ir/collective.hpp"
#include "model/ir/collective_fan.hpp"

namespace tauplan::model {
namespace {

class TreeAllReduce : public CollectiveAlgorithm {
 public:
  const char* name() const override { return "tree"; }
  const char* description() const override {
    return "binary tree: reduce to the root level by level, then broadcast back";
  }
  double time_s(const CollectiveCall& call, const Platform& platform) const override {
    const size_t k = call.hosts.size();
    if (k < 2) return 0;
    const auto parents_by_depth = heap_parents_by_depth(k);
    double total = 0;
    for (const auto& parents : parents_by_depth) {
      double reduce_level = 0, broadcast_level = 0;
      for (size_t parent : parents) {
        std::vector<int> children;
        for (size_t c = 2 * parent + 1; c <= 2 * parent + 2 && c < k; ++c)
          children.push_back(call.hosts[c]);
        const int p = call.hosts[parent];
        reduce_level = std::max(reduce_level, fan_in_time_s(children, p, call.bytes, platform));
        broadcast_level =
            std::max(broadcast_level, fan_out_time_s(p, children, call.bytes, platform));
      }
      total += reduce_level + broadcast_level;
    }
    return total;
  }
};

}  // namespace

std::unique_ptr<CollectiveAlgorithm> make_tree_allreduce() {
  return std::make_unique<TreeAllReduce>();
}

}  // namespace tauplan::model
