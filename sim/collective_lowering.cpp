// collective_lowering.cpp: the registry of lowerings, coarsening, and shared building blocks.
//
// Adding an algorithm: one lower_<name>.cpp with its class and factory, one line in registry().
#include "sim/collective_lowering.hpp"

#include <algorithm>
#include <map>
#include <utility>

#include "model/base/error.hpp"
#include "model/base/registry.hpp"

namespace tauplan::sim {

// Factories, each defined in its lowering's own file (lower_<name>.cpp).
std::unique_ptr<CollectiveLowering> make_ring_lowering();
std::unique_ptr<CollectiveLowering> make_ps_lowering();
std::unique_ptr<CollectiveLowering> make_tree_lowering();
std::unique_ptr<CollectiveLowering> make_sparknet_lowering();
std::unique_ptr<CollectiveLowering> make_hierarchical_lowering();

namespace {

const model::Registry<CollectiveLowering>& registry() {
  static const model::Registry<CollectiveLowering> lowerings("collective",
                                                             {
                                                                 make_ring_lowering,
                                                                 make_tree_lowering,
                                                                 make_hierarchical_lowering,
                                                                 make_ps_lowering,
                                                                 make_sparknet_lowering,
                                                             });
  return lowerings;
}

}  // namespace

long long FlowProgram::flow_count() const {
  long long count = 0;
  for (const FlowStage& stage : stages)
    count += stage.repeat * static_cast<long long>(stage.flows.size());
  return count;
}

const CollectiveLowering& collective_lowering(const std::string& name, const std::string& file) {
  return registry().get(name, file);
}

std::vector<std::string> collective_lowering_names() {
  return registry().names();
}

FlowStage coarsen(const FlowStage& stage, const model::Platform& platform) {
  if (stage.repeat <= 1) return stage;
  FlowStage merged;
  merged.phase = stage.phase;
  merged.repeat = 1;
  merged.work_after = stage.work_after;
  // One flow per (source, destination), in first-seen order, carrying every repeat's bytes.
  std::map<std::pair<int, int>, size_t> index;
  double latency = 0;
  const auto repeats = static_cast<double>(stage.repeat);
  for (const Flow& flow : stage.flows) {
    latency =
        std::max(latency, platform.message_latency_s(platform.route(flow.src_host, flow.dst_host),
                                                     flow.bytes, flow.two_way));
    auto [it, inserted] =
        index.emplace(std::make_pair(flow.src_host, flow.dst_host), merged.flows.size());
    if (inserted) merged.flows.push_back(Flow{flow.src_host, flow.dst_host, 0.0, flow.two_way});
    merged.flows[it->second].bytes += flow.bytes * repeats;
  }
  // The merged flow pays one message's latency (model::Platform::message_latency_s); the steps
  // it replaces paid `repeat`.
  merged.extra_latency_s = stage.extra_latency_s * repeats + (repeats - 1) * latency;
  return merged;
}

FlowProgram lower_collective(const std::string& algorithm, const model::CollectiveCall& call,
                             const model::Platform& platform, Granularity granularity,
                             const std::string& file) {
  FlowProgram program = collective_lowering(algorithm, file).lower(call, platform);
  if (granularity == Granularity::Coarse)
    for (FlowStage& stage : program.stages)
      stage = coarsen(stage, platform);
  return program;
}

FlowStage ring_stage(const std::string& phase, const std::vector<int>& hosts, double bytes,
                     long long repeat) {
  FlowStage stage;
  stage.phase = phase;
  stage.repeat = repeat;
  const size_t k = hosts.size();
  if (k < 2) return stage;
  stage.flows.reserve(k);
  for (size_t i = 0; i < k; ++i)
    stage.flows.push_back(Flow{hosts[i], hosts[(i + 1) % k], bytes, k == 2});
  return stage;
}

}  // namespace tauplan::sim
