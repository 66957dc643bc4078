// layout_cost.cpp: closed forms of a layout's traffic, its placement, and the time of one step.
#include "model/ir/layout_cost.hpp"

#include <algorithm>
#include <cassert>
#include <functional>
#include <limits>
#include <map>
#include <set>
#include <utility>

#include <fmt/format.h>

#include "model/base/error.hpp"
#include "model/ir/collective.hpp"
#include "model/ir/compute_shapes.hpp"
#include "model/ir/compute_source.hpp"
#include "model/ir/layout_memory.hpp"

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

int moe_tensor_allreduces_per_layer(const Transformer& shape, Recompute recompute) {
  const int forward = 1 + (shape.moe.shared_experts > 0 ? 1 : 0);
  return (recompute == Recompute::Full ? 3 : 2) * forward;
}

long long context_messages_per_layer(int context, Recompute recompute) {
  const long long passes = recompute == Recompute::None ? 3 : 4;
  return (context - 1LL) * passes;
}

double context_message_values(const Transformer& shape, double micro_batch, int tensor,
                              int context) {
  const double tokens = micro_batch * shape.sequence / context;
  const double per_token = shape.kv_values_per_token();
  // Grouped-query attention over more tensor ranks than K/V heads: each rank holds one K/V head.
  const double per_rank =
      !shape.mla.enabled() && tensor > shape.kv_heads ? 2.0 * shape.head_dim() : per_token / tensor;
  return tokens * per_rank;
}

int expert_alltoalls_per_layer(Recompute recompute) {
  return recompute == Recompute::Full ? 6 : 4;
}

double expert_alltoall_values(const Transformer& shape, double micro_batch, const Layout& layout) {
  const double shards =
      static_cast<double>(layout.context) * (layout.sequence_parallel ? layout.tensor : 1);
  return shape.moe_dispatch_values(micro_batch * shape.sequence / shards);
}

double alltoall_bytes_per_rank(double bytes, int ranks) {
  return ranks < 2 ? 0 : (ranks - 1.0) / ranks * bytes;
}

LayoutTraffic layout_traffic(const Workload& workload, const Layout& layout, double batch) {
  assert(workload.transformer);
  const Transformer& shape = *workload.transformer;
  const double b = layout.micro_batch(batch), e = workload.bytes_per_parameter;
  LayoutTraffic traffic;
  traffic.tensor_allreduce_bytes = tensor_allreduce_values(shape, b) * e;
  for (int r = 0; r < layout.pipeline; ++r) {
    const StageWork work = stage_work(workload, layout, batch, r);
    const double experts = stage_expert_parameters(shape, layout, r);
    traffic.tensor_allreduces =
        std::max(traffic.tensor_allreduces,
                 layout.micro_batches * (work.forward_allreduces + work.backward_allreduces));
    // Dense gradients are reduced over d c ranks; the routed experts' over t c d / e.
    traffic.data_parameters =
        std::max(traffic.data_parameters, stage_parameters(shape, layout, r) - experts);
    traffic.expert_data_parameters = std::max(traffic.expert_data_parameters, experts);
    traffic.context_messages =
        std::max(traffic.context_messages, layout.micro_batches * work.context_messages);
    traffic.context_message_bytes =
        std::max(traffic.context_message_bytes, work.context_message_bytes);
    traffic.expert_alltoalls =
        std::max(traffic.expert_alltoalls, layout.micro_batches * work.expert_alltoalls);
    traffic.expert_alltoall_bytes =
        std::max(traffic.expert_alltoall_bytes, work.expert_alltoall_bytes);
  }
  traffic.tensor_bytes_per_rank =
      static_cast<double>(traffic.tensor_allreduces) *
      ring_allreduce_bytes_per_rank(traffic.tensor_allreduce_bytes, layout.tensor);
  if (layout.pipeline > 1) {
    traffic.pipeline_messages = 2LL * layout.micro_batches * layout.virtual_stages;
    traffic.pipeline_message_bytes = pipeline_message_values(shape, b) * e;
  }
  const int reducers = layout.data * layout.context;
  if (reducers > 1) {
    traffic.data_values = data_parallel_values(traffic.data_parameters, layout.zero_stage);
    traffic.data_bytes_per_rank = traffic.data_values * e * (reducers - 1.0) / reducers;
  }
  traffic.context_bytes_per_rank =
      static_cast<double>(traffic.context_messages) * traffic.context_message_bytes;
  traffic.expert_bytes_per_rank =
      static_cast<double>(traffic.expert_alltoalls) *
      alltoall_bytes_per_rank(traffic.expert_alltoall_bytes, layout.expert);
  const int expert_reducers = expert_data_size(layout);
  if (expert_reducers > 1)
    traffic.expert_data_bytes_per_rank =
        data_parallel_values(traffic.expert_data_parameters, layout.zero_stage) * e *
        (expert_reducers - 1.0) / expert_reducers;
  return traffic;
}

int MeshPlacement::worker(int data_index, int tensor_index, int stage, int context_index) const {
  const int t = layout.tensor, c = layout.context;
  if (layout.rank_order == RankOrder::TensorPipelineData)
    return tensor_index + t * (context_index + c * (stage + layout.pipeline * data_index));
  return tensor_index + t * (context_index + c * (data_index + layout.data * stage));
}

std::vector<int> MeshPlacement::tensor_group(int data_index, int stage, int context_index) const {
  std::vector<int> group;
  for (int i = 0; i < layout.tensor; ++i)
    group.push_back(hosts[static_cast<size_t>(worker(data_index, i, stage, context_index))]);
  return group;
}

std::vector<int> MeshPlacement::data_group(int tensor_index, int stage) const {
  std::vector<int> group;
  for (int i = 0; i < layout.data; ++i)
    for (int c = 0; c < layout.context; ++c)
      group.push_back(hosts[static_cast<size_t>(worker(i, tensor_index, stage, c))]);
  return group;
}

std::vector<int> MeshPlacement::context_group(int data_index, int tensor_index, int stage) const {
  std::vector<int> group;
  for (int c = 0; c < layout.context; ++c)
    group.push_back(hosts[static_cast<size_t>(worker(data_index, tensor_index, stage, c))]);
  return group;
}

std::vector<int> MeshPlacement::pipeline_chain(int data_index, int tensor_index,
                                               int context_index) const {
  std::vector<int> chain;
  for (int r = 0; r < layout.pipeline; ++r)
    chain.push_back(hosts[static_cast<size_t>(worker(data_index, tensor_index, r, context_index))]);
  return chain;
}

namespace {

/// The hosts of a stage's t c d ranks, tensor fastest, then context, then data: the order in
/// which Megatron-Core's MoE folding carves expert groups.
std::vector<int> stage_ranks(const MeshPlacement& placement, int stage) {
  const Layout& l = placement.layout;
  std::vector<int> ranks;
  for (int d = 0; d < l.data; ++d)
    for (int c = 0; c < l.context; ++c)
      for (int t = 0; t < l.tensor; ++t)
        ranks.push_back(placement.hosts[static_cast<size_t>(placement.worker(d, t, stage, c))]);
  return ranks;
}

}  // namespace

std::vector<std::vector<int>> MeshPlacement::expert_groups(int stage) const {
  const std::vector<int> ranks = stage_ranks(*this, stage);
  const size_t e = static_cast<size_t>(layout.expert);
  std::vector<std::vector<int>> groups;
  for (size_t first = 0; first + e <= ranks.size(); first += e)
    groups.emplace_back(ranks.begin() + static_cast<std::ptrdiff_t>(first),
                        ranks.begin() + static_cast<std::ptrdiff_t>(first + e));
  return groups;
}

std::vector<std::vector<int>> MeshPlacement::expert_data_groups(int stage) const {
  const std::vector<int> ranks = stage_ranks(*this, stage);
  const size_t e = static_cast<size_t>(layout.expert);
  std::vector<std::vector<int>> groups(e);
  for (size_t i = 0; i < ranks.size(); ++i)
    groups[i % e].push_back(ranks[i]);
  return groups;
}

MeshPlacement place_mesh(const Layout& layout, const Platform& platform,
                         const std::vector<int>& hosts, const KeyOrigins& origins) {
  MeshPlacement placement;
  placement.layout = layout;
  const std::vector<int> available = hosts.empty() ? platform.worker_hosts() : hosts;
  if (static_cast<int>(available.size()) < layout.workers())
    throw InputError(
        origins.of("workers"),
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
        for (int c = 0; c < l.context; ++c)
          groups.push_back(placement.tensor_group(d, r, c));
  } else if (dimension == "context") {
    for (int d = 0; d < l.data; ++d)
      for (int t = 0; t < l.tensor; ++t)
        for (int r = 0; r < l.pipeline; ++r)
          groups.push_back(placement.context_group(d, t, r));
  } else if (dimension == "expert") {
    for (int r = 0; r < l.pipeline; ++r)
      for (const std::vector<int>& group : placement.expert_groups(r))
        groups.push_back(group);
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
         (hop_message_latency_s(hop, bytes / n, platform) + bytes / (n * hop.bandwidth_Bps));
}

double alltoall_s(double bytes, const std::vector<int>& group, const Platform& platform) {
  const size_t n = group.size();
  if (n < 2) return 0;
  const double share = bytes / static_cast<double>(n);
  double total = 0;
  for (size_t step = 1; step < n; ++step) {
    double slowest = 0;
    for (size_t q = 0; q < n; ++q) {
      const Route& route = platform.route(group[q], group[(q + step) % n]);
      slowest =
          std::max(slowest, platform.message_latency_s(route, share) + share / route.bandwidth_Bps);
    }
    total += slowest;
  }
  return total;
}

namespace {

/// The ring all-reduce of model/ir/collective_ring.cpp (in channels across nodes).
double ring_allreduce_s(double bytes, const std::vector<int>& group, const Platform& platform) {
  return ring_steps_s(bytes, 2 * (static_cast<long long>(group.size()) - 1), group, platform);
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
double layer_traffic_bytes(const Transformer& shape, const Layout& layout, double b,
                           LayerKind kind) {
  const int t = layout.tensor;
  const bool sp = layout.sequence_parallel;
  const double stored = shape.layer_activation_bytes(b, t, sp, Recompute::None, kind);
  double traffic = stored;
  if (layout.recompute == Recompute::Full) traffic += stored / 3;
  if (layout.recompute == Recompute::Selective)
    traffic += (stored - shape.layer_activation_bytes(b, t, sp, Recompute::Selective, kind)) / 3;
  return traffic / layout.context;
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

/// Times of one stage's work per micro-batch: `work`'s flop and traffic per tensor group (split
/// over its t ranks) on hosts timed as flop / speed, `profiled` on hosts with a compute profile
/// (`attention` the attention's part of that, which hides context parallelism's ring); the
/// tensor all-reduces, the context ring and the MoE all-to-alls over the placement's groups.
StageTime stage_time(int stage, const StageWork& work, const Layout& layout,
                     const Platform& platform, const MeshPlacement& placement,
                     ProfiledSeconds& profiled, ProfiledSeconds& attention) {
  StageTime time;
  time.stage = stage;
  const double flop = work.forward_flop + work.backward_flop;
  const long long allreduces = work.forward_allreduces + work.backward_allreduces;
  double allreduce_s = 0, loss_allreduces_s = 0, ring_s = 0, attention_s = 0;
  for (int i = 0; i < layout.data; ++i)
    for (int c = 0; c < layout.context; ++c) {
      const std::vector<int> group = placement.tensor_group(i, stage, c);
      for (int h : group) {
        const Host& host = platform.hosts[static_cast<size_t>(h)];
        if (const ComputeProfile* profile = host_compute_profile(host, platform)) {
          time.compute_s = std::max(time.compute_s, profiled(*profile));
          attention_s = std::max(attention_s, attention(*profile));
          continue;
        }
        time.compute_s = std::max(time.compute_s, flop / host.speed_flops);
        attention_s = std::max(attention_s, work.attention_flop / host.speed_flops);
        time.elementwise_s =
            std::max(time.elementwise_s, elementwise_seconds(host, platform, work.traffic_bytes));
      }
      allreduce_s = std::max(allreduce_s, ring_allreduce_s(work.allreduce_bytes, group, platform));
      double loss_s = 0;
      for (double bytes : work.loss_allreduce_bytes)
        loss_s += ring_allreduce_s(bytes, group, platform);
      loss_allreduces_s = std::max(loss_allreduces_s, loss_s);
    }
  time.tensor_s = static_cast<double>(allreduces) * allreduce_s + loss_allreduces_s;
  if (work.context_messages > 0) {
    for (int i = 0; i < layout.data; ++i)
      for (int k = 0; k < layout.tensor; ++k) {
        const std::vector<int> ring = placement.context_group(i, k, stage);
        const RingHop hop = slowest_ring_hop(ring, platform);
        ring_s = std::max(ring_s, hop_message_latency_s(hop, work.context_message_bytes, platform) +
                                      work.context_message_bytes / hop.bandwidth_Bps);
      }
    time.context_s =
        std::max(0.0, static_cast<double>(work.context_messages) * ring_s - attention_s);
  }
  if (work.expert_alltoalls > 0) {
    double exchange_s = 0;
    for (const std::vector<int>& group : placement.expert_groups(stage))
      exchange_s = std::max(exchange_s, alltoall_s(work.expert_alltoall_bytes, group, platform));
    time.expert_s = static_cast<double>(work.expert_alltoalls) * exchange_s;
  }
  time.busy_s =
      time.compute_s + time.elementwise_s + time.tensor_s + time.context_s + time.expert_s;
  return time;
}

}  // namespace

namespace {

/// The work of `n` layers of `kind` on one rank per micro-batch of `b` sequences, without the
/// embedding or the logits: every rank of a tensor x context group does 1 / (t c) of it (the
/// causal attention is balanced over the context ranks by the 2c-chunk split).
StageWork layers_work(const Workload& workload, const Layout& layout, double b, LayerKind kind,
                      int n) {
  const Transformer& shape = *workload.transformer;
  const int t = layout.tensor, c = layout.context;
  const double e = workload.bytes_per_parameter, ranks = static_cast<double>(t) * c;
  StageWork work;
  if (n == 0) return work;
  const double forward = n * shape.layer_forward_flop(b, kind);
  work.forward_flop = forward / ranks;
  work.backward_flop = (n * shape.layer_training_flop(b, layout.recompute, kind) - forward) / ranks;
  // The attention core's training flop: forward, backward (2x) and what recomputation repeats.
  work.attention_flop = n * shape.attention_core_forward_flop(b) *
                        (layout.recompute == Recompute::None ? 3 : 4) / ranks;
  work.traffic_bytes = n * layer_traffic_bytes(shape, layout, b, kind);
  if (t > 1) {
    const long long all = kind == LayerKind::Moe
                              ? moe_tensor_allreduces_per_layer(shape, layout.recompute)
                              : tensor_allreduces_per_layer(layout.recompute);
    const long long forward_calls = all / (layout.recompute == Recompute::Full ? 3 : 2);
    work.forward_allreduces = n * forward_calls;
    work.backward_allreduces = n * (all - forward_calls);
  }
  work.allreduce_bytes = tensor_allreduce_values(shape, b) * e / c;
  if (c > 1) {
    work.context_messages = n * context_messages_per_layer(c, layout.recompute);
    work.context_message_bytes = context_message_values(shape, b, t, c) * e;
  }
  if (layout.expert > 1 && kind == LayerKind::Moe && shape.is_moe()) {
    work.expert_alltoalls =
        static_cast<long long>(n) * expert_alltoalls_per_layer(layout.recompute);
    work.expert_alltoall_bytes = expert_alltoall_values(shape, b, layout) * e;
  }
  return work;
}

/// `to` plus `more` (the sizes of one message stay: they are the same for every layer).
void add_work(StageWork& to, const StageWork& more) {
  to.forward_flop += more.forward_flop;
  to.backward_flop += more.backward_flop;
  to.attention_flop += more.attention_flop;
  to.traffic_bytes += more.traffic_bytes;
  to.forward_allreduces += more.forward_allreduces;
  to.backward_allreduces += more.backward_allreduces;
  to.allreduce_bytes = std::max(to.allreduce_bytes, more.allreduce_bytes);
  to.context_messages += more.context_messages;
  to.context_message_bytes = std::max(to.context_message_bytes, more.context_message_bytes);
  to.expert_alltoalls += more.expert_alltoalls;
  to.expert_alltoall_bytes = std::max(to.expert_alltoall_bytes, more.expert_alltoall_bytes);
}

}  // namespace

StageWork stage_work(const Workload& workload, const Layout& layout, double batch, int stage) {
  assert(workload.transformer);
  const Transformer& shape = *workload.transformer;
  const int t = layout.tensor, p = layout.pipeline, c = layout.context;
  const bool sp = layout.sequence_parallel;
  const double b = layout.micro_batch(batch), ranks = static_cast<double>(t) * c;
  const StageLayerKinds kinds = stage_layer_kinds(shape, p, stage);
  StageWork work = layers_work(workload, layout, b, LayerKind::Dense, kinds.dense);
  add_work(work, layers_work(workload, layout, b, LayerKind::Moe, kinds.moe));
  work.allreduce_bytes = tensor_allreduce_values(shape, b) * workload.bytes_per_parameter / c;
  if (stage == 0) {
    work.traffic_bytes += shape.embedding_activation_bytes(b, t, sp) / c;
    if (t > 1) ++work.forward_allreduces;  // the vocabulary-parallel embedding's output
  }
  if (stage == p - 1) {
    const double forward = shape.logits_forward_flop(b);
    work.forward_flop += forward / ranks;
    work.backward_flop += (shape.logits_training_flop(b) - forward) / ranks;
    work.traffic_bytes += shape.output_activation_bytes(b, t, sp) / c;
    if (t > 1) {
      ++work.backward_allreduces;  // the output projection's input gradient
      // Megatron's vocab_parallel_cross_entropy in fp32: a maximum over the tokens, then their
      // sums of exponentials and target logits. Megatron reduces the last two in two calls;
      // exec's head (exec/transformer_block.hpp) packs them in one, and this counts exec's.
      const double tokens = b * shape.sequence / c;
      work.loss_allreduce_bytes = {4 * tokens, 8 * tokens};
    }
  }
  return work;
}

StageTime layer_time(const Workload& workload, const Layout& layout, double batch,
                     const Platform& platform, const MeshPlacement& placement) {
  assert(workload.transformer);
  const Transformer& shape = *workload.transformer;
  const double b = layout.micro_batch(batch);
  const LayerKind kind = shape.layer_kind(0);
  LayerShape layer = layer_shape(shape, b, layout.tensor, layout.sequence_parallel, kind,
                                 layout.context, layout.expert);
  layer.element_bytes = workload.bytes_per_parameter;
  ProfiledSeconds profiled([&](const ComputeProfile& profile) {
    const std::vector<ComputeOp> ops = layer_ops(layer, layout.recompute);
    check_profile_covers(profile, ops);
    return ops_seconds(ops, profile).total();
  });
  ProfiledSeconds attention([&](const ComputeProfile& profile) {
    return ops_seconds(layer_ops(layer, layout.recompute), profile).attention_s;
  });
  // One layer of the first stage's kind, as stage_work counts it, without embedding or logits.
  const StageWork work = layers_work(workload, layout, b, kind, 1);
  return stage_time(0, work, layout, platform, placement, profiled, attention);
}

LayoutTime layout_time(const Workload& workload, const Layout& layout, double batch,
                       const Platform& platform, const MeshPlacement& placement,
                       const LayoutTimeOptions& options) {
  assert(workload.transformer);
  const Transformer& shape = *workload.transformer;
  const int t = layout.tensor, p = layout.pipeline, d = layout.data, v = layout.virtual_stages;
  const int m = layout.micro_batches, c = layout.context;
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
    ProfiledSeconds attention([&](const ComputeProfile& profile) {
      return stage_pass_seconds(workload, layout, batch, r, profile).split.attention_s;
    });
    StageTime stage = stage_time(r, work, layout, platform, placement, profiled, attention);
    slowest_busy = std::max(slowest_busy, stage.busy_s);
    time.stages.push_back(stage);
  }

  if (p > 1) {
    // One message each way per micro-batch and chunk: t slices of b s h e / (t c) between the
    // matching ranks of neighbouring stages, then (without sequence parallelism) an all-gather
    // of the slices inside the receiving tensor group.
    const double slice = pipeline_message_values(shape, b) * e / (t * c);
    double message_s = 0;
    for (int i = 0; i < d; ++i)
      for (int j = 0; j < c; ++j)
        for (int r = 0; r + 1 < p; ++r) {
          double send_s = 0;
          for (int k = 0; k < t; ++k) {
            const Route& route = platform.route(
                placement.hosts[static_cast<size_t>(placement.worker(i, k, r, j))],
                placement.hosts[static_cast<size_t>(placement.worker(i, k, r + 1, j))]);
            send_s = std::max(
                send_s, platform.message_latency_s(route, slice) + slice / route.bandwidth_Bps);
          }
          const double gather_s =
              t > 1 && !sp ? ring_half_s(slice * t, placement.tensor_group(i, r + 1, j), platform)
                           : 0;
          message_s = std::max(message_s, send_s + gather_s);
        }
    time.pipeline_send_s = 2.0 * v * message_s;
  }
  time.slot_s = slowest_busy + time.pipeline_send_s;
  time.bubble_s = (p - 1.0) / v * time.slot_s;
  time.pipeline_s = m * time.slot_s + time.bubble_s;

  // Gradients: the dense ones over data x context, the routed experts' over t c d / e; the
  // update on what a worker holds (its ZeRO shard of each).
  const int reducers = d * c, expert_reducers = expert_data_size(layout);
  const double zero3 = layout.zero_stage >= 3 ? 1.5 : 1.0;
  for (int r = 0; r < p; ++r) {
    const double experts = stage_expert_parameters(shape, layout, r);
    const double dense = stage_parameters(shape, layout, r) - experts;
    double dense_s = 0, experts_s = 0;
    for (int k = 0; k < t; ++k) {
      const std::vector<int> group = placement.data_group(k, r);
      if (reducers > 1) dense_s = std::max(dense_s, ring_allreduce_s(dense * e, group, platform));
    }
    if (experts > 0 && expert_reducers > 1)
      for (const std::vector<int>& group : placement.expert_data_groups(r))
        experts_s = std::max(experts_s, ring_allreduce_s(experts * e, group, platform));
    // Ranks sharing a K/V head (t > kv_heads) first sum its gradients, t / kv_heads at a time.
    double shared_kv_s = 0;
    if (const double kv = stage_shared_kv_parameters(shape, layout, r); kv > 0) {
      const size_t share = static_cast<size_t>(t / shape.kv_heads);
      for (int i = 0; i < d; ++i)
        for (int j = 0; j < c; ++j) {
          const std::vector<int> tensor = placement.tensor_group(i, r, j);
          for (size_t first = 0; first < tensor.size(); first += share)
            shared_kv_s =
                std::max(shared_kv_s,
                         ring_allreduce_s(
                             kv * e,
                             std::vector<int>(tensor.begin() + static_cast<long>(first),
                                              tensor.begin() + static_cast<long>(first + share)),
                             platform));
        }
    }
    time.data_s = std::max(time.data_s, shared_kv_s + zero3 * (dense_s + experts_s));
    const double updated = dense / (layout.zero_stage >= 1 ? reducers : 1) +
                           experts / (layout.zero_stage >= 1 ? expert_reducers : 1);
    for (int k = 0; k < t; ++k)
      for (int h : placement.data_group(k, r))
        time.update_s =
            std::max(time.update_s, options.step_overhead_s +
                                        updated * workload.update_flop_per_parameter /
                                            platform.hosts[static_cast<size_t>(h)].speed_flops);
  }
  time.iteration_s = time.pipeline_s + time.data_s + time.update_s;

  time.model_flop = shape.model_flop(batch);
  time.hardware_flop = shape.logits_training_flop(batch);
  for (int r = 0; r < p; ++r) {
    const StageLayerKinds kinds = stage_layer_kinds(shape, p, r);
    time.hardware_flop +=
        kinds.dense * shape.layer_training_flop(batch, layout.recompute, LayerKind::Dense) +
        kinds.moe * shape.layer_training_flop(batch, layout.recompute, LayerKind::Moe);
  }
  const double worker_seconds = time.iteration_s * layout.workers();
  time.model_flops_per_worker = time.model_flop / worker_seconds;
  time.hardware_flops_per_worker = time.hardware_flop / worker_seconds;
  return time;
}

}  // namespace tauplan::model
