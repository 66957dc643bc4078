// lower_hierarchical.cpp: two-level all-reduce for multi-GPU nodes
// (model/ir/collective_hierarchical.cpp's "hierarchical").
//
// Workers are grouped by their host's `node` (first-seen order), G per node on M nodes:
// (1) a ring reduce-scatter inside every node at once, G-1 steps of N/G; (2) G rings across
// nodes at once, ring i joining the i-th worker of every node, 2(M-1) steps of N/(G M);
// (3) a ring all-gather inside every node, G-1 steps of N/G. Rings of phase (2) that cross one
// node NIC share it in SimGrid, as the analytic cost counts. Leaves out: NVLS/SHARP in-switch
// reduction and overlap between the phases. Needs the same number of workers on every node.
#include <string>

#include "sim/collective_lowering.hpp"

namespace tauplan::sim {
namespace {

void append(FlowStage& into, const FlowStage& from) {
  into.flows.insert(into.flows.end(), from.flows.begin(), from.flows.end());
}

class HierarchicalLowering : public CollectiveLowering {
 public:
  const char* name() const override { return "hierarchical"; }
  FlowProgram lower(const model::CollectiveCall& call,
                    const model::Platform& platform) const override {
    FlowProgram program;
    if (call.hosts.empty()) return program;
    program.coordinator_host = call.hosts.front();
    if (call.hosts.size() < 2) return program;
    const std::vector<std::vector<int>> nodes = model::equal_node_groups(call.hosts, platform);
    const size_t g = nodes.front().size();
    const size_t m = nodes.size();
    const auto gl = static_cast<long long>(g);
    const auto ml = static_cast<long long>(m);
    const double intra_chunk = call.bytes / static_cast<double>(g);
    const double inter_chunk = call.bytes / static_cast<double>(g * m);

    FlowStage reduce_scatter{"intra-node reduce-scatter", {}, gl - 1, 0.0, {}};
    FlowStage all_gather{"intra-node all-gather", {}, gl - 1, 0.0, {}};
    if (g > 1)
      for (const auto& node : nodes) {
        append(reduce_scatter, ring_stage("", node, intra_chunk, 1));
        append(all_gather, ring_stage("", node, intra_chunk, 1));
      }
    FlowStage inter{"inter-node all-reduce", {}, 2 * (ml - 1), 0.0, {}};
    if (m > 1)
      for (size_t i = 0; i < g; ++i) {
        std::vector<int> ring;
        for (size_t j = 0; j < m; ++j)
          ring.push_back(nodes[j][i]);
        append(inter, ring_stage("", ring, inter_chunk, 1));
      }
    for (FlowStage* stage : {&reduce_scatter, &inter, &all_gather})
      if (!stage->flows.empty()) program.stages.push_back(std::move(*stage));
    return program;
  }
};

}  // namespace

std::unique_ptr<CollectiveLowering> make_hierarchical_lowering() {
  return std::make_unique<HierarchicalLowering>();
}

}  // namespace tauplan::sim
