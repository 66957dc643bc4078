// lower_tree.cpp: binary-tree reduce then broadcast (model/ir/collective_tree.cpp's "tree").
//
// Workers form a binary heap in group order (children of i are 2i+1 and 2i+2). Reduce: one
// stage per depth, deepest parents first, in which every child at that depth sends N bytes to
// its parent; broadcast: the same stages in reverse order and direction. A parent with two
// children receives 2N through its link, as the analytic fan-in bound says. Leaves out: NCCL's
// pipelined (chunked) trees and the reduction arithmetic.
#include "sim/collective_lowering.hpp"

#include <string>

namespace tauplan::sim {
namespace {

class TreeLowering : public CollectiveLowering {
 public:
  const char* name() const override { return "tree"; }
  FlowProgram lower(const model::CollectiveCall& call,
                    const model::Platform& /*platform*/) const override {
    FlowProgram program;
    const size_t k = call.hosts.size();
    if (k == 0) return program;
    program.coordinator_host = call.hosts.front();
    if (k < 2) return program;
    const auto parents_by_depth = model::heap_parents_by_depth(k);
    auto level = [&](size_t depth, bool up) {
      FlowStage stage;
      stage.phase = (up ? "reduce depth " : "broadcast depth ") + std::to_string(depth);
      for (size_t parent : parents_by_depth[depth])
        for (size_t child = 2 * parent + 1; child <= 2 * parent + 2 && child < k; ++child) {
          const int p = call.hosts[parent];
          const int c = call.hosts[child];
          if (p == c) continue;
          stage.flows.push_back(up ? Flow{c, p, call.bytes} : Flow{p, c, call.bytes});
        }
      return stage;
    };
    for (size_t d = parents_by_depth.size(); d-- > 0;)
      program.stages.push_back(level(d, true));
    for (size_t d = 0; d < parents_by_depth.size(); ++d)
      program.stages.push_back(level(d, false));
    return program;
  }
};

}  // namespace

std::unique_ptr<CollectiveLowering> make_tree_lowering() {
  return std::make_unique<TreeLowering>();
}

}  // namespace tauplan::sim
