// layout_cost.cpp: closed forms of a layout's traffic, its placement, and the time of one step.
#include "model/layout_cost.hpp"

#include <algorithm>
#include <cassert>
#include <functional>
#include <limits>
#include <map>
#include <set>
#include <utility>

#include <fmt/format.h>

#include "model/collective.hpp"
#include "model/compute_shapes.hpp"
#include "model/compute_source.hpp"
#include "model/error.hpp"
#include "model/layout_memory.hpp"

namespace tauplan::model {

int tensor_allreduces_per_layer(Recompute recompute) {
  return recompute == Recompute::Full ? 6 : 4;
}

double tensor_allreduce_values(const Transformer& shape, double micro_batch) {
  return micro_batch * shape.sequence * static_cast<double>(shape.hidden);
}

double ring_allreduce_bytes_per_rank(double bytes, int ranks) {
  return ranks < 2 ? 0 : 2.0 * (ranks - 1) / ranks * bytes;
}

double pipeline_bubble_fraction(int pipeline, int micro_batches, int virtual_stages) {
  const double bubble = (pipeline - 1.0) / virtual_stages;
  return bubble / (micro_batches + bubble);
}

double pipeline_message_values(const Transformer& shape, double micro_batch) {
  return micro_batch * shape.sequence * static_cast<double>(shape.hidden);
}

double data_parallel_values(double parameters, int zero_stage) {
  return (zero_stage >= 3 ? 3 : 2) * parameters;
}

LayoutTraffic layout_traffic(const Workload& workload, const Layout& layout, double batch) {
  assert(workload.transformer);
  const Transformer& shape = *workload.transformer;
  const double b = layout.micro_batch(batch), e = workload.bytes_per_parameter;
  LayoutTraffic traffic;
  traffic.tensor_allreduce_bytes = tensor_allreduce_values(shape, b) * e;
  for (int r = 0; r < layout.pipeline; ++r) {
    const StageWork work = stage_work(workload, layout, batch, r);
    traffic.tensor_allreduces =
        std::max(traffic.tensor_allreduces,
                 layout.micro_batches * (work.forward_allreduces + work.backward_allreduces));
    traffic.data_parameters = std::max(traffic.data_parameters, stage_parameters(shape, layout, r));
  }
  traffic.tensor_bytes_per_rank =
      static_cast<double>(traffic.tensor_allreduces) *
      ring_allreduce_bytes_per_rank(traffic.tensor_allreduce_bytes, layout.tensor);
  if (layout.pipeline > 1) {
    traffic.pipeline_messages = 2LL * layout.micro_batches * layout.virtual_stages;
    traffic.pipeline_message_bytes = pipeline_message_values(shape, b) * e;
  }
  if (layout.data > 1) {
    traffic.data_values = data_parallel_values(traffic.data_parameters, layout.zero_stage);
    traffic.data_bytes_per_rank = traffic.data_values * e * (layout.data - 1.0) / layout.data;
  }
  return traffic;
}

int MeshPlacement::worker(int data_index, int tensor_index, int stage) const {
  if (layout.rank_order == RankOrder::TensorPipelineData)
    return tensor_index + layout.tensor * (stage + layout.pipeline * data_index);
  return tensor_index + layout.tensor * (data_index + layout.data * stage);
}

std::vector<int> MeshPlacement::tensor_group(int data_index, int stage) const {
  std::vector<int> group;
  for (int i = 0; i < layout.tensor; ++i)
    group.push_back(hosts[static_cast<size_t>(worker(data_index, i, stage))]);
  return group;
}

std::vector<int> MeshPlacement::data_group(int tensor_index, int stage) const {
  std::vector<int> group;
  for (int i = 0; i < layout.data; ++i)
    group.push_back(hosts[static_cast<size_t>(worker(i, tensor_index, stage))]);
  return group;
}

std::vector<int> MeshPlacement::pipeline_chain(int data_index, int tensor_index) const {
  std::vector<int> chain;
  for (int r = 0; r < layout.pipeline; ++r)
    chain.push_back(hosts[static_cast<size_t>(worker(data_index, tensor_index, r))]);
  return chain;
}

MeshPlacement place_mesh(const Layout& layout, const Platform& platform,
                         const std::vector<int>& hosts, const std::string& file) {
  MeshPlacement placement;
  placement.layout = layout;
  const std::vector<int> available = hosts.empty() ? platform.worker_hosts() : hosts;
  if (static_cast<int>(available.size()) < layout.workers())
    throw InputError(
        file, "workers",
        fmt::format("at most the {} worker hosts of {}", available.size(), platform.source_file),
        std::to_string(layout.workers()));
  placement.hosts.assign(available.begin(), available.begin() + layout.workers());
  return placement;
}

std::string dimension_span(const MeshPlacement& placement, const Platform& platform,
                           const std::string& dimension) {
  const Layout& l = placement.layout;
  std::vector<std::vector<int>> groups;
  if (dimension == "tensor") {
    for (int d = 0; d < l.data; ++d)
      for (int r = 0; r < l.pipeline; ++r)
        groups.push_back(placement.tensor_group(d, r));
  } else if (dimension == "data") {
    for (int t = 0; t < l.tensor; ++t)
      for (int r = 0; r < l.pipeline; ++r)
        groups.push_back(placement.data_group(t, r));
  } else {
    for (int d = 0; d < l.data; ++d)
      for (int t = 0; t < l.tensor; ++t)
        groups.push_back(placement.pipeline_chain(d, t));
  }
  if (groups.empty() || groups.front().size() < 2) return "-";
  size_t inside = 0;
  for (const auto& group : groups) {
    std::set<std::string> nodes;
    for (int h : group)
      nodes.insert(platform.hosts[static_cast<size_t>(h)].node);
    if (nodes.size() == 1) ++inside;
  }
  if (inside == groups.size()) return "inside a node";
  return inside == 0 ? "across nodes" : "mixed";
}

double ring_half_s(double bytes, const std::vector<int>& group, const Platform& platform) {
  const double n = static_cast<double>(group.size());
  if (group.size() < 2) return 0;
  const RingHop hop = slowest_ring_hop(group, platform);
  return (n - 1) *
         (platform.message_latency_s(hop.latency_s, bytes / n) + bytes / (n * hop.bandwidth_Bps));
}

namespace {

double ring_allreduce_s(double bytes, const std::vector<int>& group, const Platform& platform) {
  return 2 * ring_half_s(bytes, group, platform);
}

/// A host's memory-bound element-wise traffic per stored activation byte, and the bandwidth
/// it streams at: its `elementwise_passes` prop and its GPU's memory bandwidth. 0 passes when
/// the prop is absent (the time is then flop / speed alone).
struct ElementwiseModel {
  double passes = 0;
  double bandwidth_Bps = 0;
};

ElementwiseModel elementwise_model(const Host& host, const Platform& platform) {
  ElementwiseModel model;
  const auto it = host.properties.find("elementwise_passes");
  if (it == host.properties.end()) return model;
  const std::string key = "host " + host.name + " prop elementwise_passes";
  if (!parse_prop_number(it->second, model.passes) || model.passes < 0)
    throw InputError(platform.source_file, key, "a number >= 0", "'" + it->second + "'");
  if (model.passes == 0) return model;
  if (host.gpu_model.empty())
    throw InputError(platform.source_file, key,
                     "a host with a gpu_model (its memory bandwidth streams the traffic)",
                     "no gpu_model");
  model.bandwidth_Bps =
      gpu_spec(host.gpu_model, platform.source_file, "host " + host.name + " prop gpu_model")
          .memory_bandwidth_Bps;
  if (model.bandwidth_Bps <= 0)
    throw InputError(platform.source_file, key,
                     "a GPU whose catalog entry gives memory_bandwidth_Bps", host.gpu_model);
  return model;
}

}  // namespace

double elementwise_seconds(const Host& host, const Platform& platform, double traffic_bytes) {
  const ElementwiseModel model = elementwise_model(host, platform);
  return model.passes > 0 ? model.passes * traffic_bytes / model.bandwidth_Bps : 0.0;
}

namespace {

/// Memory-bound traffic of one layer and micro-batch, forward + backward: its stored
/// activations, and a third of them again for what recomputation repeats of the forward.
double layer_traffic_bytes(const Transformer& shape, const Layout& layout, double b) {
  const int t = layout.tensor;
  const bool sp = layout.sequence_parallel;
  const double stored = shape.layer_activation_bytes(b, t, sp, Recompute::None);
  double traffic = stored;
  if (layout.recompute == Recompute::Full) traffic += stored / 3;
  if (layout.recompute == Recompute::Selective)
    traffic += (stored - shape.layer_activation_bytes(b, t, sp, Recompute::Selective)) / 3;
  return traffic;
}

/// A rank's compute seconds per micro-batch on a host timed by a compute profile, memoised by
/// profile (hosts of one GPU model share one).
class ProfiledSeconds {
 public:
  using Compute = std::function<double(const ComputeProfile&)>;
  explicit ProfiledSeconds(Compute compute) : compute_(std::move(compute)) {}
  double operator()(const ComputeProfile& profile) {
    const auto it = seconds_.find(&profile);
    if (it != seconds_.end()) return it->second;
    return seconds_[&profile] = compute_(profile);
  }

 private:
  Compute compute_;
  std::map<const ComputeProfile*, double> seconds_;
};

/// Times of one stage's work per micro-batch: `flop` and `traffic` per tensor group (split
/// over its t ranks) on hosts timed as flop / speed, `profiled` on hosts with a compute
/// profile; `allreduces` tensor all-reduces of `allreduce_bytes`.
StageTime stage_time(int stage, double flop, double traffic, long long allreduces,
                     double allreduce_bytes, const Layout& layout, const Platform& platform,
                     const MeshPlacement& placement, ProfiledSeconds& profiled) {
  StageTime time;
  time.stage = stage;
  double allreduce_s = 0;
  for (int i = 0; i < layout.data; ++i) {
    const std::vector<int> group = placement.tensor_group(i, stage);
    for (int h : group) {
      const Host& host = platform.hosts[static_cast<size_t>(h)];
      if (const ComputeProfile* profile = host_compute_profile(host, platform)) {
        time.compute_s = std::max(time.compute_s, profiled(*profile));
        continue;
      }
      time.compute_s = std::max(time.compute_s, flop / layout.tensor / host.speed_flops);
      time.elementwise_s =
          std::max(time.elementwise_s, elementwise_seconds(host, platform, traffic));
    }
    allreduce_s = std::max(allreduce_s, ring_allreduce_s(allreduce_bytes, group, platform));
  }
  time.tensor_s = static_cast<double>(allreduces) * allreduce_s;
  time.busy_s = time.compute_s + time.elementwise_s + time.tensor_s;
  return time;
}

}  // namespace

StageWork stage_work(const Workload& workload, const Layout& layout, double batch, int stage) {
  assert(workload.transformer);
  const Transformer& shape = *workload.transformer;
  const int t = layout.tensor, p = layout.pipeline;
  const bool sp = layout.sequence_parallel;
  const double b = layout.micro_batch(batch);
  const int n = stage_layers(shape.layers, p)[static_cast<size_t>(stage)];
  StageWork work;
  double forward = n * shape.layer_forward_flop(b);
  double training = n * shape.layer_training_flop(b, layout.recompute);
  work.traffic_bytes = n * layer_traffic_bytes(shape, layout, b);
  if (stage == 0) work.traffic_bytes += shape.embedding_activation_bytes(b, t, sp);
  if (stage == p - 1) {
    forward += shape.logits_forward_flop(b);
    training += shape.logits_training_flop(b);
    work.traffic_bytes += shape.output_activation_bytes(b, t, sp);
  }
  work.forward_flop = forward / t;
  work.backward_flop = (training - forward) / t;
  if (t > 1) {
    work.forward_allreduces = 2LL * n + (stage == 0 ? 1 : 0);
    work.backward_allreduces =
        static_cast<long long>(n) * (tensor_allreduces_per_layer(layout.recompute) - 2) +
        (stage == p - 1 ? 1 : 0);
  }
  work.allreduce_bytes = tensor_allreduce_values(shape, b) * workload.bytes_per_parameter;
  return work;
}

StageTime layer_time(const Workload& workload, const Layout& layout, double batch,
                     const Platform& platform, const MeshPlacement& placement) {
  assert(workload.transformer);
  const Transformer& shape = *workload.transformer;
  const double b = layout.micro_batch(batch);
  const long long allreduces =
      layout.tensor > 1 ? tensor_allreduces_per_layer(layout.recompute) : 0;
  ProfiledSeconds profiled([&](const ComputeProfile& profile) {
    LayerShape layer = layer_shape(shape, b, layout.tensor, layout.sequence_parallel);
    layer.element_bytes = workload.bytes_per_parameter;
    const std::vector<ComputeOp> ops = layer_ops(layer, layout.recompute);
    check_profile_covers(profile, ops);
    return ops_seconds(ops, profile).total();
  });
  return stage_time(0, shape.layer_training_flop(b, layout.recompute),
                    layer_traffic_bytes(shape, layout, b), allreduces,
                    tensor_allreduce_values(shape, b) * workload.bytes_per_parameter, layout,
                    platform, placement, profiled);
}

LayoutTime layout_time(const Workload& workload, const Layout& layout, double batch,
                       const Platform& platform, const MeshPlacement& placement,
                       const LayoutTimeOptions& options) {
  assert(workload.transformer);
  const Transformer& shape = *workload.transformer;
  const int t = layout.tensor, p = layout.pipeline, d = layout.data, v = layout.virtual_stages;
  const int m = layout.micro_batches;
  const bool sp = layout.sequence_parallel;
  const double b = layout.micro_batch(batch), e = workload.bytes_per_parameter;
  LayoutTime time;
  double slowest_busy = 0;
  for (int r = 0; r < p; ++r) {
    const StageWork work = stage_work(workload, layout, batch, r);
    ProfiledSeconds profiled([&](const ComputeProfile& profile) {
      const PassSeconds pass = stage_pass_seconds(workload, layout, batch, r, profile);
      return pass.forward + pass.backward;
    });
    StageTime stage =
        stage_time(r, (work.forward_flop + work.backward_flop) * t, work.traffic_bytes,
                   work.forward_allreduces + work.backward_allreduces, work.allreduce_bytes, layout,
                   platform, placement, profiled);
    stage.busy_s += options.step_overhead_s;
    slowest_busy = std::max(slowest_busy, stage.busy_s);
    time.stages.push_back(stage);
  }

  if (p > 1) {
    // One message each way per micro-batch and chunk: t slices of b s h e / t between the
    // matching ranks of neighbouring stages, then (without sequence parallelism) an all-gather
    // of the slices inside the receiving tensor group.
    const double slice = pipeline_message_values(shape, b) * e / t;
    double message_s = 0;
    for (int i = 0; i < d; ++i)
      for (int r = 0; r + 1 < p; ++r) {
        double send_s = 0;
        for (int k = 0; k < t; ++k) {
          const Route& route =
              platform.route(placement.hosts[static_cast<size_t>(placement.worker(i, k, r))],
                             placement.hosts[static_cast<size_t>(placement.worker(i, k, r + 1))]);
          send_s = std::max(send_s, platform.message_latency_s(route.latency_s, slice) +
                                        slice / route.bandwidth_Bps);
        }
        const double gather_s =
            t > 1 && !sp ? ring_half_s(slice * t, placement.tensor_group(i, r + 1), platform) : 0;
        message_s = std::max(message_s, send_s + gather_s);
      }
    time.pipeline_send_s = 2.0 * v * message_s;
  }
  time.slot_s = slowest_busy + time.pipeline_send_s;
  time.bubble_s = (p - 1.0) / v * time.slot_s;
  time.pipeline_s = m * time.slot_s + time.bubble_s;

  for (int r = 0; r < p; ++r) {
    const double parameters = stage_parameters(shape, layout, r);
    for (int k = 0; k < t; ++k) {
      const std::vector<int> group = placement.data_group(k, r);
      if (d > 1) {
        const double allreduce_s = ring_allreduce_s(parameters * e, group, platform);
        time.data_s = std::max(time.data_s, (layout.zero_stage >= 3 ? 1.5 : 1.0) * allreduce_s);
      }
      const double updated = parameters / (layout.zero_stage >= 1 ? d : 1);
      for (int h : group)
        time.update_s =
            std::max(time.update_s, updated * workload.update_flop_per_parameter /
                                        platform.hosts[static_cast<size_t>(h)].speed_flops);
    }
  }
  time.iteration_s = time.pipeline_s + time.data_s + time.update_s;

  time.model_flop = shape.model_flop(batch);
  time.hardware_flop = shape.layers * shape.layer_training_flop(batch, layout.recompute) +
                       shape.logits_training_flop(batch);
  const double worker_seconds = time.iteration_s * layout.workers();
  time.model_flops_per_worker = time.model_flop / worker_seconds;
  time.hardware_flops_per_worker = time.hardware_flop / worker_seconds;
  return time;
}

}  // namespace tauplan::model
