// layout_cost.hpp: closed-form communication and time of one training step under a layout.
//
// The reference the engines must equal once layouts are Plans (on platforms without a
// pass_overhead_s prop: the Plan charges a calibrated host's pass cost, this closed form reads
// only the job's step_overhead_s). Per transformer layer and
// micro-batch, tensor parallelism all-reduces b s h values twice forward and twice backward
// (Megatron's f and g operators, Shoeybi et al. 2019, arXiv 1909.08053, Section 3), twice more
// when full recomputation repeats the forward; each all-reduce moves 2(t-1)/t of its bytes per
// rank (ring; Narayanan et al. 2021, arXiv 2104.04473, Section 3.2: 8 b s h (t-1)/t per layer
// and micro-batch); sequence parallelism turns each into a reduce-scatter and an all-gather of
// the same volume. The first stage all-reduces its vocabulary-parallel embedding output once and
// the last stage the gradient of the output projection's input once per micro-batch, and its
// vocabulary-parallel cross-entropy reduces in fp32 each token's largest logit (b s values), then
// its sum of exponentials and target logit (2 b s values, one all-reduce as exec packs them;
// Megatron's vocab_parallel_cross_entropy makes that two calls of b s). Pipeline
// stages send b s h values per micro-batch each way (as t slices of b s h / t over the rails
// and an all-gather inside the receiving node when t > 1, Narayanan Section 4.1; already split
// under sequence parallelism), v times with v interleaved chunks. The data dimension all-reduces
// each worker's gradients (2 Psi moved as reduce-scatter + all-gather for ZeRO 0-2, 3 Psi for
// ZeRO 3: Rajbhandari et al. 2019, arXiv 1910.02054, Section 7).
// Context parallelism (ring attention, Liu et al. 2023, arXiv 2310.01889, as Megatron-Core runs
// it): each of the c ranks of a sequence holds s/c of its tokens and passes its K and V block
// around the ring, c-1 sends per layer forward, 2(c-1) backward (K and V, then their gradients),
// c-1 more when recomputation repeats the attention; each send overlaps the attention over the
// block already held (Liu et al. Section 3), so only what the attention's compute does not hide
// is exposed. Dense gradients are reduced over data x context. A mixture of experts (GShard,
// Lepikhin et al. 2020, arXiv 2006.16668) all-to-alls its tokens to the experts and back, twice
// forward and twice backward per MoE layer (three times each way with full recomputation), each
// rank sending (e-1)/e of its tokens x k x h values (x the capacity factor); with tensor
// parallelism (sequence parallelism required) each tensor rank sends its own sequence shard, and
// a MoE layer's tensor collectives are the attention's (and the shared experts'); routed
// experts' gradients are reduced over the t c d / e ranks that hold the same experts.
// Time over a platform's routes: ranks are placed tensor first, then data, then pipeline
// (Megatron's order: a tensor group fills a node before anything crosses nodes); every
// collective is a ring over the hosts of its group, costed with the slowest hop of that ring
// (alpha-beta); a micro-batch slot on a stage is its compute (on a host with a compute profile,
// the profile's time of the stage's operations, model/ir/compute_source.hpp; else flop / host
// speed, plus memory-bound element-wise traffic when the host says how much: the
// `elementwise_passes` prop times the layer's stored activation bytes, at the GPU's memory
// bandwidth) and its tensor all-reduces,
// plus the stage-to-stage sends; the pipeline takes (m + (p-1)/v) slots, its bubble (p-1)/v of
// them (GPipe and 1F1B alike; Narayanan eq. 1); then the data-parallel traffic and the optimizer
// update. An all-to-all is a pairwise exchange: e-1 steps, each rank sending one share per step,
// each step as long as its slowest route. What it leaves out: overlap of
// communication with compute (none is assumed but context parallelism's), token imbalance over
// experts (routing is assumed balanced), link
// contention between concurrent groups beyond the slowest hop (rail-optimised nodes give each
// GPU its own NIC), the optimizer step's memory traffic (only update_flop_per_parameter), the
// tied-embedding all-reduce between first and last stage, and ZeRO-3's per-micro-batch gathers.
#pragma once

#include <string>
#include <vector>

#include "model/base/error.hpp"  // KeyOrigins
#include "model/inputs/platform.hpp"
#include "model/inputs/workload.hpp"
#include "model/ir/layout.hpp"

namespace tauplan::model {

// ---- Closed forms of a layout's communication (identities of the formulas they state)

/// Tensor-parallel all-reduces per transformer layer and micro-batch: 2 forward + 2 backward,
/// + 2 when full recomputation runs the forward again.
int tensor_allreduces_per_layer(Recompute recompute);
/// Values in one tensor-parallel all-reduce: b s h.
double tensor_allreduce_values(const Transformer& shape, double micro_batch);
/// Bytes a rank sends in a ring all-reduce of `bytes` over `ranks`: 2 (n-1)/n bytes.
double ring_allreduce_bytes_per_rank(double bytes, int ranks);
/// The pipeline bubble as a fraction of the step: ((p-1)/v) / (m + (p-1)/v); (p-1)/(m+p-1) for
/// GPipe and 1F1B without interleaving.
double pipeline_bubble_fraction(int pipeline, int micro_batches, int virtual_stages = 1);
/// Values one stage sends the next per micro-batch and direction: b s h.
double pipeline_message_values(const Transformer& shape, double micro_batch);
/// Tensor collectives (all-reduce equivalents) of one MoE layer and micro-batch: the attention's
/// (1 forward, 1 backward) and, with shared experts, theirs (1 + 1); repeated forward with full
/// recomputation.
int moe_tensor_allreduces_per_layer(const Transformer& shape, Recompute recompute);
/// K/V block sends of one layer and micro-batch on a context-parallel rank: (c-1) forward,
/// 2 (c-1) backward, (c-1) more when recomputation (selective or full) repeats the attention.
long long context_messages_per_layer(int context, Recompute recompute);
/// Values of one K/V block a rank sends: b (s/c) tokens x its K and V values per token (over t
/// tensor ranks, at least one K/V head's each).
double context_message_values(const Transformer& shape, double micro_batch, int tensor,
                              int context);
/// All-to-alls of one MoE layer and micro-batch: dispatch and combine, forward and backward (4),
/// and again forward with full recomputation (6).
int expert_alltoalls_per_layer(Recompute recompute);
/// Values one rank's all-to-all carries: its tokens b s / (c t) (b s / c without tensor
/// parallelism) x k x h, x the capacity factor (Transformer::moe_dispatch_values).
double expert_alltoall_values(const Transformer& shape, double micro_batch, const Layout& layout);
/// Bytes a rank sends in an all-to-all of `bytes` over `ranks`: (n-1)/n of them.
double alltoall_bytes_per_rank(double bytes, int ranks);
/// Values a worker moves through the data dimension per step for its `parameters`: 2 Psi
/// (reduce-scatter + all-gather of the gradients) for ZeRO 0-2, 3 Psi for ZeRO 3 (parameters
/// all-gathered forward and backward, gradients reduce-scattered).
double data_parallel_values(double parameters, int zero_stage);

/// A layout's traffic per step, for one worker of the stage that moves the most. The tensor counts
/// are the b s h all-reduces: the last stage's two small loss all-reduces (b s and 2 b s fp32
/// values per micro-batch) and the sums of shared K/V heads' gradients (t > kv_heads) are charged
/// in the step's time (stage_time, layout_time) but left out here.
struct LayoutTraffic {
  long long tensor_allreduces = 0;        ///< per step (all micro-batches), on the busiest stage
  double tensor_allreduce_bytes = 0;      ///< payload of one: b s h e
  double tensor_bytes_per_rank = 0;       ///< sent per rank per step (ring: 2 (t-1)/t each)
  long long pipeline_messages = 0;        ///< per stage boundary per step: 2 m v (both directions)
  double pipeline_message_bytes = 0;      ///< b s h e
  double data_parameters = 0;             ///< Psi of the worker with the most
  double data_values = 0;                 ///< 2 Psi or 3 Psi
  double data_bytes_per_rank = 0;         ///< data_values x e x (d-1)/d (ring; d c with context)
  long long context_messages = 0;         ///< K/V block sends per step on the busiest stage
  double context_message_bytes = 0;       ///< one block
  double context_bytes_per_rank = 0;      ///< sent per rank per step
  long long expert_alltoalls = 0;         ///< per step on the stage with the most MoE layers
  double expert_alltoall_bytes = 0;       ///< one rank's payload of one
  double expert_bytes_per_rank = 0;       ///< sent per rank per step: (e-1)/e of each
  double expert_data_parameters = 0;      ///< routed-expert parameters of the worker with the most
  double expert_data_bytes_per_rank = 0;  ///< their gradient reduction over t c d / e ranks
};
LayoutTraffic layout_traffic(const Workload& workload, const Layout& layout, double batch);

/// The work of one micro-batch on pipeline stage `stage`, for one rank of its tensor group:
/// what layout_time costs and the layout strategy's Plan runs op by op.
struct StageWork {
  double forward_flop = 0;            ///< the stage's layers (+ logits on the last), / t
  double backward_flop = 0;           ///< backward, with what recomputation repeats, / t
  double traffic_bytes = 0;           ///< memory-bound element-wise traffic, forward + backward
  long long forward_allreduces = 0;   ///< tensor all-reduces: 2 per layer, + the embedding's
  long long backward_allreduces = 0;  ///< 2 per layer (4 with full recomputation), + output's
  double allreduce_bytes = 0;         ///< b s h e / c each
  /// The last stage's vocabulary-parallel cross-entropy (t > 1), forward: the tokens' largest
  /// logit, then their sum of exponentials with the target's logit, one all-reduce each, fp32
  /// (bytes each: 4 b s / c, then 8 b s / c).
  std::vector<double> loss_allreduce_bytes;
  long long context_messages = 0;  ///< K/V block sends (context parallelism)
  double context_message_bytes = 0;
  double attention_flop = 0;         ///< the attention core's training flop on one rank
  long long expert_alltoalls = 0;    ///< MoE all-to-alls
  double expert_alltoall_bytes = 0;  ///< one rank's payload of one
};
StageWork stage_work(const Workload& workload, const Layout& layout, double batch, int stage);

/// Seconds of `traffic_bytes` of element-wise memory traffic on `host`: its
/// `elementwise_passes` prop times the traffic over its GPU's memory bandwidth (0 without the
/// prop). InputError naming the platform file and the host's prop when the prop is not a number
/// >= 0 or the GPU's bandwidth is unknown.
double elementwise_seconds(const Host& host, const Platform& platform, double traffic_bytes);

/// Ring reduce-scatter (or all-gather) of `bytes` over `hosts`: (n-1)(alpha + bytes/(n beta))
/// on the ring's slowest hop; a ring all-reduce is two of them.
double ring_half_s(double bytes, const std::vector<int>& hosts, const Platform& platform);

/// All-to-all of `bytes` per rank over `hosts` as a pairwise exchange: n-1 steps, in step s rank
/// q sends its bytes/n share to rank q+s (one message per port at a time), each step as long as
/// its slowest message (latency and bandwidth of its route).
double alltoall_s(double bytes, const std::vector<int>& hosts, const Platform& platform);

// ---- Placement of the mesh on hosts

struct MeshPlacement {
  Layout layout;
  /// Platform host of worker w = t_i + t (c_i + c (d_i + d p_i)) (rank order tp-dp-pp, context
  /// ranks next to the tensor ranks as Megatron-Core's tp-cp-ep-dp-pp), or
  /// t_i + t (c_i + c (p_i + p d_i)) (tp-pp-dp).
  std::vector<int> hosts;
  int worker(int data_index, int tensor_index, int stage, int context_index = 0) const;
  std::vector<int> tensor_group(int data_index, int stage, int context_index = 0) const;
  /// The ranks that reduce the dense gradients: every data and context index (context fastest).
  std::vector<int> data_group(int tensor_index, int stage) const;
  std::vector<int> context_group(int data_index, int tensor_index, int stage) const;
  std::vector<int> pipeline_chain(int data_index, int tensor_index, int context_index = 0) const;
  /// The expert groups of a stage: e consecutive ranks of its t c d (tensor fastest).
  std::vector<std::vector<int>> expert_groups(int stage) const;
  /// The ranks that hold the same experts and reduce their gradients: every e-th of t c d.
  std::vector<std::vector<int>> expert_data_groups(int stage) const;
};

/// Places the layout's workers on `hosts` (platform host indices; empty: the platform's worker
/// hosts in order). InputError(origins.of("workers"), ...) when there are fewer hosts than workers.
MeshPlacement place_mesh(const Layout& layout, const Platform& platform,
                         const std::vector<int>& hosts, const KeyOrigins& origins);

/// Where the groups of a mesh dimension ("tensor", "data", "pipeline", "context", "expert") lie:
/// "inside a node" when every group is within one node, "across nodes" when none is, "mixed"
/// otherwise, and
/// "-" for a dimension of size 1.
std::string dimension_span(const MeshPlacement& placement, const Platform& platform,
                           const std::string& dimension);

// ---- Time of one step over the platform

struct LayoutTimeOptions {
  double step_overhead_s = 0;  ///< fixed cost of every step, once (the job's step_overhead_s)
};

struct StageTime {
  int stage = 0;
  /// Per micro-batch: the compute profile's time of the stage's operations on hosts that have
  /// one (model/ir/compute_source.hpp), else GEMM flop / host speed.
  double compute_s = 0;
  /// Memory-bound traffic / memory bandwidth, per micro-batch, on hosts timed as flop / speed
  /// (a profile's time already holds the memory-bound operations).
  double elementwise_s = 0;
  double tensor_s = 0;  ///< tensor-parallel all-reduces, per micro-batch
  /// Context parallelism's K/V ring, per micro-batch: what the attention's compute does not hide.
  double context_s = 0;
  double expert_s = 0;  ///< MoE all-to-alls, per micro-batch
  /// compute + element-wise + tensor + context + expert, per micro-batch
  double busy_s = 0;
};

struct LayoutTime {
  std::vector<StageTime> stages;
  double pipeline_send_s = 0;  ///< stage-to-stage sends of one micro-batch slot (2 v messages)
  double slot_s = 0;           ///< the slowest stage's busy time + the sends
  double pipeline_s = 0;       ///< (m + (p-1)/v) slots
  double bubble_s = 0;         ///< (p-1)/v slots
  double data_s = 0;           ///< gradient all-reduce or ZeRO traffic over the data dimension
  double update_s = 0;         ///< the step overhead, then the optimizer step (or ZeRO shard's)
  double iteration_s = 0;      ///< pipeline_s + data_s + update_s
  double model_flop = 0;       ///< per step, whole job, without recomputation
  double hardware_flop = 0;    ///< per step, whole job, with recomputation
  /// Model flop per second per worker (what Megatron reports as TFLOP/s per GPU uses
  /// hardware_flop instead).
  double model_flops_per_worker = 0;
  double hardware_flops_per_worker = 0;
};

LayoutTime layout_time(const Workload& workload, const Layout& layout, double batch,
                       const Platform& platform, const MeshPlacement& placement,
                       const LayoutTimeOptions& options = {});

/// One transformer layer's forward + backward on one micro-batch, on the slowest tensor group
/// of the first stage: its compute, element-wise traffic and tensor all-reduces (no overhead,
/// embedding or logits). What Korthikanti et al. 2022 Table 4 measures.
StageTime layer_time(const Workload& workload, const Layout& layout, double batch,
                     const Platform& platform, const MeshPlacement& placement);

}  // namespace tauplan::model
