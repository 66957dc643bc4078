// strategy_mesh.cpp: a transformer or an MLP trained under a Mesh-TensorFlow layout
// (model/inputs/mesh.hpp), lowered op by op into a Plan that the analytic and SimGrid engines run
// like any other. What follows is the transformer's; an MLP (model/ir/mlp_layout.hpp) is lowered
// the same way with its own per-stage work: one all-reduce per split pair of layers and direction
// (sizes differ pair by pair), whole-width sends from each tensor rank to the same rank of the next
// stage (no all-gather), no element-wise traffic, and no memory check.
//
// Workers are placed as model/ir/layout_cost.hpp places them (tensor first, then context, then
// data, then pipeline; or tensor, context, pipeline, data with rank_order tp-pp-dp). A lane is one
// (replica, context index): per lane, stage and micro-batch, in the stage's schedule order (GPipe:
// every forward, then every backward; 1F1B: p - r - 1 forwards of warm-up on stage r, then one
// forward and one backward alternately, then the remaining backwards), each tensor rank runs one
// Compute op (its 1/t of the stage's forward or backward flop, plus its element-wise memory time
// and a host's pass_overhead_s in the rank's share of the parameters; the step overhead is the
// update's, once a step), then the tensor group runs its all-reduces of
// that pass as one ring Collective op repeated `count` times (with context parallelism, after the
// K/V ring: per replica and tensor rank, c - 1 steps of Transfers between the c lanes, each
// repeated once per layer and direction of the data, beside an Attention compute op that holds the
// attention core's share of the pass: the ring costs what the attention does not hide, as
// model/ir/layout_cost.hpp says; with expert parallelism, after the tensor all-reduces, each expert
// group's all-to-alls of the pass as a pairwise exchange of e - 1 steps of Transfers, each repeated
// once per all-to-all, every step ended by a Barrier) (2 per layer forward and backward, 2 more
// backward with full recomputation, the embedding's on the first stage forward and the output
// projection's on the last stage backward, each of b s h values; and on the last stage forward the
// vocabulary-parallel cross-entropy's two, of b s and 2 b s fp32 values, as ring Collectives of
// their own; model/ir/layout_cost.hpp). Between stages, each rank sends its 1/t slice of the b s h
// activations (forward) or gradients (backward) to the matching rank of the next (previous)
// stage as a Transfer (Op::pass sliced), and without sequence parallelism the receiving tensor
// group all-gathers the slices: a ring of Transfers, t - 1 steps each ended by a Barrier, marked
// as the receiving pass's (Op::pass gather: exec runs them, exec/layout_program.hpp). The
// receiver's pass waits for its input; a sender does not wait for its send (the network carries it
// while the stage computes: non-blocking point-to-point). After its last backward, each data group
// (same tensor rank and stage, one per lane) all-reduces its stage's dense gradients, then each
// group of ranks holding the same experts (every e-th of the stage's t c d) its routed experts'
// gradients with a ring Collective (ZeRO 0-2: reduce-scatter + all-gather), and under ZeRO 3
// all-gathers the parameters once more (a ring of Transfers as above: three ring halves in all,
// model/ir/layout_cost.hpp's 1.5 all-reduces); then every rank updates its parameters (its 1/d
// shard from ZeRO 1). With uniform stages and free sends the longest path is (m + p - 1)(forward +
// backward) [identity of the schedules: the bubble (p - 1)/(m + p - 1)]. Interleaved 1F1B
// (virtual_stages v > 1): stage r runs model chunks r, r + p, ..., each the work of that stage of a
// pipeline of p v stages, in Megatron-LM's order (stage_schedule below); a chunk's sends go to the
// next chunk's stage (the last stage's to the first), and with uniform chunks and free sends the
// longest path is (m + (p - 1)/v)(forward + backward). What it leaves out: ZeRO 3's per-micro-batch
// parameter gathers (one gather per step is charged, as the closed form does), overlap of tensor
// all-reduces with compute, the tied embedding's all-reduce between first and last stage, and the
// what-if C(b) and S overrides. `tauplan measure` trains an MLP's layout and exec's decoder
// block's for real from this Plan (exec/pipeline_parallel.hpp, exec/transformer_trainer.hpp).
#include <algorithm>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "model/base/error.hpp"
#include "model/base/limits.hpp"
#include "model/base/machine_memory.hpp"
#include "model/ir/collective.hpp"
#include "model/ir/compute_source.hpp"
#include "model/ir/layout_cost.hpp"
#include "model/ir/layout_memory.hpp"
#include "model/ir/mlp_layout.hpp"
#include "model/ir/strategy.hpp"

namespace tauplan::model {
namespace {

/// Ops of the Plan LayoutLowering builds (an upper bound for an MLP, whose messages are not
/// sliced): per pass of a replica's stage, t computes and (t > 1) a tensor all-reduce; per
/// crossing of a stage boundary, t sends and either a barrier (sequence parallel) or the
/// receivers' ring all-gather (t - 1 steps of t transfers and a barrier, after a start barrier);
/// per tensor rank and stage, the data group's all-reduce (d > 1), ZeRO 3's ring all-gather, and
/// d updates; per lane's last-stage forward, the loss's two all-reduces (t > 1); per lane and
/// stage, at most t groups sharing K/V heads.
double mesh_plan_ops(const Layout& layout) {
  const double t = layout.tensor, p = layout.pipeline, m = layout.micro_batches;
  const double c = layout.context, e = layout.expert, d = layout.data * c;  // lanes
  const double v = layout.virtual_stages;
  const double passes = 2 * d * p * m * v;
  const double crossings = 2 * d * (p * v - 1) * m;
  const double arrival = layout.sequence_parallel ? 1 : 1 + (t - 1) * (t + 1);
  const double data_group = d > 1 ? 1 + (layout.zero_stage >= 3 ? 1 + (d - 1) * (d + 1) : 0) : 0;
  // Per pass of a lane's tensor rank: its attention op and its share of the K/V ring (c - 1
  // steps of c transfers and a barrier per replica and tensor rank, plus two barriers); per
  // pass of a stage: each expert group's e - 1 steps of e transfers and a barrier.
  const double ring = c > 1 ? passes * t * (1 + ((c - 1) * (c + 1) + 2) / c) : 0;
  const double alltoall = e > 1 ? 2 * p * m * (d * t / e) * ((e - 1) * (e + 1) + 1) : 0;
  const double loss_and_kv = t > 1 ? 2 * d * m + p * d * t : 0;
  return passes * (t + (t > 1 ? 1 : 0)) + crossings * (t + arrival) + p * t * (data_group + d) +
         ring + alltoall + (e > 1 ? p * d * t * 2 : 0) + loss_and_kv;
}

/// Refuses a layout whose Plan exceeds kMaxMeshPlanOps or this machine's available memory at
/// kMeshPlanBytesPerOp (a simulation of it adds little: sim/README.md, "At scale").
void check_plan_fits(const Layout& layout, const KeyOrigins& origins) {
  const double ops = mesh_plan_ops(layout);
  const double bytes = ops * kMeshPlanBytesPerOp;
  const double available = available_memory_bytes();
  const std::string what =
      fmt::format("about {:.3g} ops ({:.3g} GB) for {}", ops, bytes / 1e9, layout.label());
  if (ops > kMaxMeshPlanOps)
    throw InputError(origins.of("micro_batches"),
                     fmt::format("a layout whose Plan has at most {:g} ops: fewer micro_batches "
                                 "or workers (`tauplan layout` evaluates larger ones in closed "
                                 "form)",
                                 kMaxMeshPlanOps),
                     what);
  if (available >= 0 && bytes > available)
    throw InputError(origins.of("micro_batches"),
                     fmt::format("a layout whose Plan fits in this machine's {:.3g} GB of "
                                 "available memory: fewer micro_batches or workers (`tauplan "
                                 "layout` evaluates it in closed form)",
                                 available / 1e9),
                     what);
}

/// One pass of a stage's schedule: forward or backward of micro-batch `micro_batch` through the
/// stage's model chunk `chunk` (0 without interleaving).
struct Pass {
  bool forward = true;
  int micro_batch = 0;
  int chunk = 0;
};

/// The passes of one stage in schedule order. GPipe: every forward, then every backward; 1F1B:
/// p - r - 1 forwards of warm-up on stage r, then one forward and one backward alternately,
/// then the remaining backwards; interleaved 1F1B (v chunks per stage; Narayanan et al. 2021,
/// arXiv 2104.04473, Section 2.2.2, as Megatron-LM's schedules.py orders it): the k-th forward
/// runs chunk (k mod p v) / p on micro-batch (k / p v) p + k mod p (the k-th backward the chunks
/// in reverse), with 2 (p - r - 1) + (v - 1) p forwards of warm-up.
std::vector<Pass> stage_schedule(const Layout& layout, int stage) {
  const int p = layout.pipeline, m = layout.micro_batches, v = layout.virtual_stages;
  std::vector<Pass> order;
  if (layout.schedule == PipelineSchedule::GPipe) {
    for (int j = 0; j < m; ++j)
      order.push_back({true, j, 0});
    for (int j = 0; j < m; ++j)
      order.push_back({false, j, 0});
    return order;
  }
  const int total = m * v;
  const auto pass = [&](int k, bool forward) {
    const int chunk = (k % (p * v)) / p;
    return Pass{forward, (k / (p * v)) * p + k % p, forward ? chunk : v - 1 - chunk};
  };
  const int warmup = std::min(v == 1 ? p - stage - 1 : 2 * (p - stage - 1) + (v - 1) * p, total);
  int forwards = 0, backwards = 0;
  while (forwards < warmup)
    order.push_back(pass(forwards++, true));
  while (forwards < total) {
    order.push_back(pass(forwards++, true));
    order.push_back(pass(backwards++, false));
  }
  while (backwards < total)
    order.push_back(pass(backwards++, false));
  return order;
}

/// What one tensor rank of a stage does per micro-batch, for a transformer
/// (model/ir/layout_cost.hpp) or an MLP (model/ir/mlp_layout.hpp): the lowering below is the same
/// for both.
struct StageCosts {
  double forward_flop = 0, backward_flop = 0;
  double traffic_bytes = 0;  ///< element-wise memory traffic, forward + backward
  /// Tensor all-reduces of a pass: (bytes of one, how many of that size).
  std::vector<std::pair<double, long long>> forward_allreduces, backward_allreduces;
  double forward_message_bytes = 0;   ///< to the next stage, per micro-batch
  double backward_message_bytes = 0;  ///< to the previous stage, per micro-batch
  /// Transformers send 1/t slices that the receivers all-gather (unless sequence parallel); an
  /// MLP stage sends its whole output from every tensor rank to the same rank of the next.
  bool sliced_messages = true;
  double parameters = 0;         ///< held by one tensor rank (its routed experts included)
  double expert_parameters = 0;  ///< of those, the routed experts
  /// Of those, a shared K/V head's projections (t > kv_heads), summed over its sharers.
  double shared_kv_parameters = 0;
  /// The attention core's flop of a pass (what hides context parallelism's ring).
  double attention_forward_flop = 0, attention_backward_flop = 0;
  /// Context parallelism: K/V blocks of `context_block_bytes` sent per ring step of a pass
  /// (the ring has c - 1 steps; one block per layer and direction of the data).
  long long context_forward_repeat = 0, context_backward_repeat = 0;
  double context_block_bytes = 0;
  /// Expert parallelism: the pass's all-to-alls, each `expert_alltoall_bytes` per rank.
  long long expert_forward_alltoalls = 0, expert_backward_alltoalls = 0;
  double expert_alltoall_bytes = 0;
};

/// The forward pass's share of a pass pair's attention core: 1/3 (backward is twice the
/// forward), 1/4 when recomputation repeats the forward in backward.
double attention_forward_share(Recompute recompute) {
  return recompute == Recompute::None ? 1.0 / 3 : 1.0 / 4;
}

StageCosts stage_costs(const Workload& workload, const Layout& layout, double batch, int stage) {
  StageCosts costs;
  const double e = workload.bytes_per_parameter;
  if (workload.transformer) {
    const StageWork work = stage_work(workload, layout, batch, stage);
    costs.forward_flop = work.forward_flop;
    costs.backward_flop = work.backward_flop;
    costs.traffic_bytes = work.traffic_bytes;
    if (work.forward_allreduces > 0)
      costs.forward_allreduces.emplace_back(work.allreduce_bytes, work.forward_allreduces);
    for (double bytes : work.loss_allreduce_bytes)
      costs.forward_allreduces.emplace_back(bytes, 1);
    if (work.backward_allreduces > 0)
      costs.backward_allreduces.emplace_back(work.allreduce_bytes, work.backward_allreduces);
    costs.forward_message_bytes = costs.backward_message_bytes =
        pipeline_message_values(*workload.transformer, layout.micro_batch(batch)) * e /
        layout.context;
    costs.parameters = stage_parameters(*workload.transformer, layout, stage);
    costs.expert_parameters = stage_expert_parameters(*workload.transformer, layout, stage);
    costs.shared_kv_parameters = stage_shared_kv_parameters(*workload.transformer, layout, stage);
    const double forward_share = attention_forward_share(layout.recompute);
    costs.attention_forward_flop = work.attention_flop * forward_share;
    costs.attention_backward_flop = work.attention_flop - costs.attention_forward_flop;
    if (work.context_messages > 0) {
      const long long per_step = work.context_messages / (layout.context - 1);
      const long long layers = per_step / (layout.recompute == Recompute::None ? 3 : 4);
      costs.context_forward_repeat = layers;
      costs.context_backward_repeat = per_step - layers;
      costs.context_block_bytes = work.context_message_bytes;
    }
    if (work.expert_alltoalls > 0) {
      const long long forward =
          work.expert_alltoalls / (layout.recompute == Recompute::Full ? 3 : 2);
      costs.expert_forward_alltoalls = forward;
      costs.expert_backward_alltoalls = work.expert_alltoalls - forward;
      costs.expert_alltoall_bytes = work.expert_alltoall_bytes;
    }
    return costs;
  }
  const MlpStageWork work = mlp_stage_work(workload, layout, batch, stage);
  costs.forward_flop = work.forward_flop;
  costs.backward_flop = work.backward_flop;
  for (double values : work.forward_allreduce_values)
    costs.forward_allreduces.emplace_back(values * e, 1);
  for (double values : work.backward_allreduce_values)
    costs.backward_allreduces.emplace_back(values * e, 1);
  costs.forward_message_bytes = work.output_values * e;
  costs.backward_message_bytes = work.input_values * e;
  costs.sliced_messages = false;
  costs.parameters = work.parameters;
  return costs;
}

/// Builds the layout's Plan: the ops of every rank, chained in schedule order. A lane is one
/// (replica, context index) pair: its tensor ranks run one stage's passes together; the c lanes
/// of a replica exchange K/V blocks, and a stage's expert groups span lanes.
class LayoutLowering {
 public:
  LayoutLowering(const StrategyOptions& options, const Workload& workload, const Platform& platform,
                 MeshPlacement placement, Plan& plan)
      : options_(options),
        workload_(workload),
        platform_(platform),
        layout_(placement.layout),
        placement_(std::move(placement)),
        plan_(plan),
        last_(static_cast<size_t>(layout_.workers()), kNone) {}

  void build() {
    const int t = layout_.tensor, p = layout_.pipeline, v = layout_.virtual_stages;
    const int m = layout_.micro_batches, lanes = layout_.data * layout_.context;
    // Arrival of micro-batch j's input at chunk c of stage r of lane l:
    // forward_in_[l][r][j v + c] (from the previous model chunk) and backward_in_ (from the next).
    forward_in_.assign(
        static_cast<size_t>(lanes),
        std::vector<std::vector<OpId>>(static_cast<size_t>(p),
                                       std::vector<OpId>(static_cast<size_t>(m * v), kNone)));
    backward_in_ = forward_in_;
    // Model chunk c of stage r is chunk c p + r of a pipeline of p v stages (Megatron's
    // interleaving): its work is that stage's; a stage's parameters are its chunks'.
    Layout chunked = layout_;
    chunked.pipeline = p * v;
    chunked.virtual_stages = 1;
    std::vector<StageCosts> work(static_cast<size_t>(p));
    chunk_work_.assign(static_cast<size_t>(p), {});
    for (int r = 0; r < p; ++r)
      for (int c = 0; c < v; ++c) {
        const StageCosts costs = v == 1
                                     ? stage_costs(workload_, layout_, options_.batch, r)
                                     : stage_costs(workload_, chunked, options_.batch, c * p + r);
        chunk_work_[static_cast<size_t>(r)].push_back(costs);
        work[static_cast<size_t>(r)].parameters += costs.parameters;
        work[static_cast<size_t>(r)].expert_parameters += costs.expert_parameters;
        work[static_cast<size_t>(r)].shared_kv_parameters += costs.shared_kv_parameters;
      }
    std::vector<std::vector<Pass>> order;
    for (int r = 0; r < p; ++r)
      order.push_back(stage_schedule(layout_, r));
    // A pass waits for its input (a neighbouring stage's send), so the ops are emitted stage by
    // stage, each stage as far as its inputs exist, sweeping the stages again until every pass
    // is placed; a schedule that deadlocked would stop the sweeps early (logic_error below).
    // Every lane follows the same schedule, so a pass is emitted for all lanes at once (the
    // context ring and the expert all-to-alls couple them).
    std::vector<size_t> next(static_cast<size_t>(p), 0);
    bool progress = true;
    while (progress) {
      progress = false;
      for (int r = 0; r < p; ++r) {
        auto& cursor = next[static_cast<size_t>(r)];
        while (cursor < order[static_cast<size_t>(r)].size()) {
          const Pass pass = order[static_cast<size_t>(r)][cursor];
          if (!first_in(r, pass) && input_of(0, r, pass) == kNone) break;  // not built yet
          add_pass(r, pass, chunk_work_[static_cast<size_t>(r)][static_cast<size_t>(pass.chunk)]);
          ++cursor;
          progress = true;
        }
      }
    }
    for (int r = 0; r < p; ++r)
      if (next[static_cast<size_t>(r)] != order[static_cast<size_t>(r)].size())
        throw std::logic_error("layout lowering: a pipeline schedule waits on itself");
    for (int r = 0; r < p; ++r) {
      add_shared_kv_reductions(r, work[static_cast<size_t>(r)]);
      for (int k = 0; k < t; ++k)
        add_dense_reduction(k, r, work[static_cast<size_t>(r)]);
      add_expert_reductions_and_updates(r, work[static_cast<size_t>(r)]);
    }
  }

 private:
  static constexpr OpId kNone = static_cast<OpId>(-1);

  int lanes() const { return layout_.data * layout_.context; }
  int worker(int lane, int k, int r) const {
    return placement_.worker(lane / layout_.context, k, r, lane % layout_.context);
  }
  /// Whether a pass takes its input from no other stage: the first model chunk's forward, the
  /// last model chunk's backward.
  bool first_in(int r, const Pass& pass) const {
    const int p = layout_.pipeline, v = layout_.virtual_stages;
    return pass.forward ? r == 0 && pass.chunk == 0 : r == p - 1 && pass.chunk == v - 1;
  }
  OpId& arrival(int lane, int r, int j, int chunk, bool forward) {
    return (forward ? forward_in_ : backward_in_)[static_cast<size_t>(lane)][static_cast<size_t>(
        r)][static_cast<size_t>(j * layout_.virtual_stages + chunk)];
  }
  OpId input_of(int lane, int r, const Pass& pass) {
    return arrival(lane, r, pass.micro_batch, pass.chunk, pass.forward);
  }
  /// A stage's (or, interleaved, a chunk's) pass times on hosts of one compute profile,
  /// computed once.
  const PassSeconds& profiled_pass(int stage, int chunk, const ComputeProfile& profile) {
    const auto key = std::make_pair(chunk * layout_.pipeline + stage, &profile);
    const auto it = profiled_.find(key);
    if (it != profiled_.end()) return it->second;
    if (layout_.virtual_stages == 1)
      return profiled_[key] =
                 stage_pass_seconds(workload_, layout_, options_.batch, stage, profile);
    Layout chunked = layout_;
    chunked.pipeline = layout_.pipeline * layout_.virtual_stages;
    chunked.virtual_stages = 1;
    return profiled_[key] =
               stage_pass_seconds(workload_, chunked, options_.batch, key.first, profile);
  }
  int host(int w) const { return placement_.hosts[static_cast<size_t>(w)]; }

  OpId add(Op op, const std::vector<OpId>& after) {
    const OpId id = plan_.add(std::move(op));
    for (OpId before : after)
      if (before != kNone) plan_.depend(before, id);
    return id;
  }

  /// The compute of worker w's pass: its flop (or its profile's time) and element-wise memory
  /// time (the step overhead is on the update, once a step). With context parallelism the attention
  /// core is split off (`attention` receives its flop or seconds) to run beside the K/V ring.
  Op compute_op(int w, int r, const Pass& step, const StageCosts& work, Op& attention) {
    const Host& h = platform_.hosts[static_cast<size_t>(host(w))];
    const int j = step.micro_batch;
    const bool forward = step.forward;
    const std::string pass =
        std::string(forward ? "forward" : "backward") +
        (layout_.virtual_stages > 1 ? fmt::format(" chunk {}", step.chunk) : std::string());
    const double elementwise = elementwise_seconds(h, platform_, work.traffic_bytes);
    const bool split = layout_.context > 1;
    Op op;
    op.kind = OpKind::Compute;
    op.label = fmt::format("w{} stage {} {} mb {}", w, r, pass, j);
    op.worker = w;
    op.samples = layout_.micro_batch(options_.batch);
    op.pass = LayoutPass{r, step.chunk, j, forward};
    const double attention_flop =
        split ? (forward ? work.attention_forward_flop : work.attention_backward_flop) : 0;
    op.flop = (forward ? work.forward_flop : work.backward_flop) - attention_flop;
    // Element-wise traffic and a pass's own cost beyond its flop (the pass_overhead_s prop, of
    // a pass of the whole model: adding the weight gradients of a small micro-batch moves the
    // gradient through memory, so a rank pays it in the share of the parameters it holds) split
    // as the flop are (a third forward). The step's fixed cost is on each rank's Update op.
    const double pass_s = workload_.parameters > 0 ? pass_overhead_on(platform_, host(w)) *
                                                         work.parameters / workload_.parameters
                                                   : 0.0;
    const double fixed = elementwise + pass_s;
    op.overhead_s = forward ? fixed / 3 : fixed * 2 / 3;
    attention = Op{};
    attention.kind = OpKind::Compute;
    attention.label = fmt::format("w{} stage {} {} mb {} attention", w, r, pass, j);
    attention.worker = w;
    attention.samples = 0;
    attention.pass = op.pass;
    attention.flop = attention_flop;
    attention.step_fraction = 0;
    // A host with a compute profile: the profile's time of the stage's operations, a fixed
    // time whatever the host's speed (the op's flop then count nothing).
    if (const ComputeProfile* profile =
            workload_.transformer ? host_compute_profile(h, platform_) : nullptr) {
      const PassSeconds& seconds = profiled_pass(r, step.chunk, *profile);
      const double share = attention_forward_share(layout_.recompute);
      const double attention_s =
          split ? seconds.split.attention_s * (forward ? share : 1 - share) : 0;
      op.flop = 0;
      op.overhead_s = forward ? seconds.forward : seconds.backward;
      op.overhead_s = std::max(0.0, op.overhead_s - attention_s);
      attention.flop = 0;
      attention.overhead_s = attention_s;
    }
    // A training step ends with the last micro-batch's backward on the first stage.
    op.step_fraction = 0;
    return op;
  }

  /// One forward or backward pass of micro-batch j on stage r of every lane, then its sends.
  void add_pass(int r, const Pass& step, const StageCosts& work) {
    const int t = layout_.tensor, c = layout_.context;
    const int j = step.micro_batch;
    const bool forward = step.forward;
    const char* pass = forward ? "forward" : "backward";
    // done[lane][k]: the op after which worker (lane, k) has finished this pass so far.
    std::vector<std::vector<OpId>> done(static_cast<size_t>(lanes()));
    std::vector<std::vector<OpId>> attention(static_cast<size_t>(lanes()));
    for (int l = 0; l < lanes(); ++l) {
      const OpId input = first_in(r, step) ? kNone : input_of(l, r, step);
      for (int k = 0; k < t; ++k) {
        const int w = worker(l, k, r);
        Op core;
        const OpId computed =
            add(compute_op(w, r, step, work, core), {last_[static_cast<size_t>(w)], input});
        done[static_cast<size_t>(l)].push_back(computed);
        if (c > 1) attention[static_cast<size_t>(l)].push_back(add(core, {computed}));
      }
    }
    if (c > 1) add_context_ring(r, j, forward, work, done, attention);
    for (int l = 0; l < lanes(); ++l)
      add_tensor_collectives(l, r, step, work, done[static_cast<size_t>(l)]);
    const long long alltoalls =
        forward ? work.expert_forward_alltoalls : work.expert_backward_alltoalls;
    if (alltoalls > 0) add_expert_alltoalls(r, j, pass, alltoalls, work, done);
    for (int l = 0; l < lanes(); ++l) {
      for (int k = 0; k < t; ++k)
        last_[static_cast<size_t>(worker(l, k, r))] =
            done[static_cast<size_t>(l)][static_cast<size_t>(k)];
      add_sends(l, r, step, work, done[static_cast<size_t>(l)]);
    }
  }

  /// Context parallelism: for each replica and tensor rank, the c - 1 ring steps passing K/V
  /// blocks between the c lanes (each step `repeat` blocks, one per layer and direction),
  /// beside the attention core's compute; both end before the pass's collectives.
  void add_context_ring(int r, int j, bool forward, const StageCosts& work,
                        std::vector<std::vector<OpId>>& done,
                        const std::vector<std::vector<OpId>>& attention) {
    const int c = layout_.context;
    const long long repeat = forward ? work.context_forward_repeat : work.context_backward_repeat;
    for (int i = 0; i < layout_.data; ++i)
      for (int k = 0; k < layout_.tensor; ++k) {
        std::vector<int> members;
        std::vector<OpId> started, ends;
        for (int q = 0; q < c; ++q) {
          const size_t lane = static_cast<size_t>(i * c + q);
          members.push_back(worker(static_cast<int>(lane), k, r));
          started.push_back(done[lane][static_cast<size_t>(k)]);
          ends.push_back(attention[lane][static_cast<size_t>(k)]);
        }
        const std::string label =
            fmt::format("replica {} tensor rank {} stage {} {} mb {} K/V ring", i, k, r,
                        forward ? "forward" : "backward", j);
        const OpId step_done = exchange_steps(members, work.context_block_bytes, repeat, true,
                                              CollectivePayload::Parameters, started, label);
        ends.push_back(step_done);
        const OpId finished = barrier(label + " and attention done", ends);
        for (int q = 0; q < c; ++q)
          done[static_cast<size_t>(i * c + q)][static_cast<size_t>(k)] = finished;
      }
  }

  /// The tensor group of lane l: one ring Collective per size of all-reduce, in the pass's order
  /// (a transformer's are all one size, repeated; an MLP's pairs each have their own width).
  void add_tensor_collectives(int l, int r, const Pass& step, const StageCosts& work,
                              std::vector<OpId>& done) {
    const int t = layout_.tensor, j = step.micro_batch;
    const bool forward = step.forward;
    for (const auto& [bytes, count] :
         forward ? work.forward_allreduces : work.backward_allreduces) {
      if (t == 1 || count == 0) continue;
      Op op;
      op.kind = OpKind::Collective;
      op.label = fmt::format("lane {} stage {} {} mb {} tensor all-reduce x{}", l, r,
                             forward ? "forward" : "backward", j, count);
      op.algorithm = ring_collective();
      op.payload = CollectivePayload::Gradients;
      op.bytes = bytes;
      op.repeat = static_cast<int>(count);
      op.pass = LayoutPass{r, step.chunk, j, forward};
      for (int k = 0; k < t; ++k)
        op.group.push_back(worker(l, k, r));
      op.worker = op.group.front();
      const OpId collective = add(op, done);
      done.assign(static_cast<size_t>(t), collective);
    }
  }

  /// The workers of stage r's expert groups: e consecutive ranks of its t c d, tensor fastest
  /// (MeshPlacement::expert_groups), as (lane, tensor rank) pairs.
  std::vector<std::vector<std::pair<int, int>>> expert_groups() const {
    std::vector<std::pair<int, int>> ranks;
    for (int l = 0; l < lanes(); ++l)
      for (int k = 0; k < layout_.tensor; ++k)
        ranks.emplace_back(l, k);
    std::vector<std::vector<std::pair<int, int>>> groups;
    const size_t e = static_cast<size_t>(layout_.expert);
    for (size_t first = 0; first + e <= ranks.size(); first += e)
      groups.emplace_back(ranks.begin() + static_cast<std::ptrdiff_t>(first),
                          ranks.begin() + static_cast<std::ptrdiff_t>(first + e));
    return groups;
  }

  /// Expert parallelism: each expert group's `count` all-to-alls of the pass as a pairwise
  /// exchange (e - 1 steps; in step s rank q sends its 1/e share to rank q + s), every transfer
  /// repeated `count` times, each step ended by a barrier.
  void add_expert_alltoalls(int r, int j, const char* pass, long long count, const StageCosts& work,
                            std::vector<std::vector<OpId>>& done) {
    const int e = layout_.expert;
    const double share = work.expert_alltoall_bytes / e;
    int g = 0;
    for (const auto& group : expert_groups()) {
      std::vector<OpId> started;
      std::vector<int> members;
      for (const auto& [l, k] : group) {
        started.push_back(done[static_cast<size_t>(l)][static_cast<size_t>(k)]);
        members.push_back(worker(l, k, r));
      }
      const std::string label =
          fmt::format("stage {} expert group {} {} mb {} all-to-all x{}", r, g++, pass, j, count);
      const OpId step_done = exchange_steps(members, share, count, false,
                                            CollectivePayload::Gradients, started, label);
      for (const auto& [l, k] : group)
        done[static_cast<size_t>(l)][static_cast<size_t>(k)] = step_done;
    }
  }

  /// Lane l's sends of pass (r, j) to the stage of the next (previous) model chunk: each rank's
  /// 1/t slice, then (without sequence parallelism) the receivers' ring all-gather.
  void add_sends(int l, int r, const Pass& step, const StageCosts& work,
                 const std::vector<OpId>& done) {
    const int t = layout_.tensor, p = layout_.pipeline, v = layout_.virtual_stages;
    const int j = step.micro_batch;
    const bool forward = step.forward;
    const char* pass = forward ? "forward" : "backward";
    // Model chunk q = c p + r: forward to q + 1, backward to q - 1.
    const int q = step.chunk * p + r + (forward ? 1 : -1);
    if (q < 0 || q >= p * v) return;
    const int to = q % p, to_chunk = q / p;
    const double message = forward ? work.forward_message_bytes : work.backward_message_bytes;
    const bool gathered = work.sliced_messages && !layout_.sequence_parallel;
    const double slice = work.sliced_messages ? message / t : message;
    std::vector<OpId> sends;
    for (int k = 0; k < t; ++k) {
      Op op;
      op.kind = OpKind::Transfer;
      op.label = fmt::format("lane {} stage {} -> {} {} mb {} slice {}", l, r, to, pass, j, k);
      op.worker = worker(l, k, r);
      op.source = Endpoint::worker(worker(l, k, r));
      op.destination = Endpoint::worker(worker(l, k, to));
      op.payload = forward ? CollectivePayload::Parameters : CollectivePayload::Gradients;
      op.bytes = slice;
      op.pass = LayoutPass{r, step.chunk, j, forward};
      op.pass.sliced = work.sliced_messages && t > 1;
      sends.push_back(add(op, {done[static_cast<size_t>(k)]}));
    }
    std::vector<int> receivers;
    for (int k = 0; k < t; ++k)
      receivers.push_back(worker(l, k, to));
    LayoutPass receiving{to, to_chunk, j, forward};
    receiving.gather = true;
    arrival(l, to, j, to_chunk, forward) =
        gathered
            ? ring_allgather(receivers, slice * t, sends,
                             fmt::format("lane {} stage {} {} mb {} all-gather", l, to, pass, j),
                             receiving)
            : barrier(fmt::format("lane {} stage {} {} mb {} arrived", l, to, pass, j), sends);
  }

  OpId barrier(const std::string& label, const std::vector<OpId>& after) {
    Op op;
    op.kind = OpKind::Barrier;
    op.label = label;
    return add(op, after);
  }

  /// n - 1 steps of Transfers among `members` (worker indices), each step ended by a Barrier,
  /// starting after `after`; in step s member q sends `bytes` (`repeat` times back to back) to
  /// member q + 1 (a ring) or q + s (a pairwise exchange); every Transfer carries `pass`.
  /// Returns the last Barrier.
  OpId exchange_steps(const std::vector<int>& members, double bytes, long long repeat, bool ring,
                      CollectivePayload payload, const std::vector<OpId>& after,
                      const std::string& label, const LayoutPass& pass = {}) {
    OpId step_done = barrier(label + " start", after);
    const int n = static_cast<int>(members.size());
    for (int s = 1; s < n; ++s) {
      std::vector<OpId> transfers;
      for (int q = 0; q < n; ++q) {
        Op op;
        op.kind = OpKind::Transfer;
        op.label = fmt::format("{} step {} rank {}", label, s, q);
        op.worker = members[static_cast<size_t>(q)];
        op.source = Endpoint::worker(members[static_cast<size_t>(q)]);
        op.destination = Endpoint::worker(members[static_cast<size_t>((q + (ring ? 1 : s)) % n)]);
        op.payload = payload;
        op.bytes = bytes;
        op.repeat = static_cast<int>(repeat);
        op.pass = pass;
        transfers.push_back(add(op, {step_done}));
      }
      step_done = barrier(fmt::format("{} step {} done", label, s), transfers);
    }
    return step_done;
  }

  /// A ring all-gather of `bytes` over `members`: n - 1 ring steps of bytes / n.
  OpId ring_allgather(const std::vector<int>& members, double bytes, const std::vector<OpId>& after,
                      const std::string& label, const LayoutPass& pass = {}) {
    return exchange_steps(members, bytes / static_cast<double>(members.size()), 1, true,
                          CollectivePayload::Parameters, after, label, pass);
  }

  /// A gradient all-reduce of `bytes` over `members` after their last ops, and under ZeRO 3
  /// (unless !zero3_gather) a parameter all-gather after it; each member's last op becomes its
  /// end.
  void reduce_over(const std::vector<int>& members, double bytes, const std::string& label,
                   bool zero3_gather = true) {
    if (members.size() < 2 || bytes <= 0) return;
    std::vector<OpId> ends;
    for (int w : members)
      ends.push_back(last_[static_cast<size_t>(w)]);
    Op op;
    op.kind = OpKind::Collective;
    op.label = label + " gradient all-reduce";
    op.algorithm = ring_collective();
    op.payload = CollectivePayload::Gradients;
    op.bytes = bytes;
    op.group = members;
    op.worker = members.front();
    OpId end = add(op, ends);
    if (layout_.zero_stage >= 3 && zero3_gather)
      end = ring_allgather(members, bytes, {end}, label + " ZeRO-3 parameter all-gather");
    for (int w : members)
      last_[static_cast<size_t>(w)] = end;
  }

  /// Tensor rank k of stage r: the dense gradients' all-reduce over its data x context group.
  void add_dense_reduction(int k, int r, const StageCosts& work) {
    std::vector<int> members;
    for (int l = 0; l < lanes(); ++l)
      members.push_back(worker(l, k, r));
    reduce_over(members, (work.parameters - work.expert_parameters) * workload_.bytes_per_parameter,
                fmt::format("stage {} tensor rank {}", r, k));
  }

  /// Stage r with t > kv_heads: per lane, each group of tensor ranks that share a K/V head sums
  /// its projections' gradients (t / kv_heads consecutive tensor ranks), before the data group's
  /// reduction.
  void add_shared_kv_reductions(int r, const StageCosts& work) {
    if (work.shared_kv_parameters <= 0) return;
    const int share = layout_.tensor / workload_.transformer->kv_heads;
    for (int l = 0; l < lanes(); ++l)
      for (int first = 0; first < layout_.tensor; first += share) {
        std::vector<int> members;
        for (int k = first; k < first + share; ++k)
          members.push_back(worker(l, k, r));
        reduce_over(members, work.shared_kv_parameters * workload_.bytes_per_parameter,
                    fmt::format("lane {} stage {} shared K/V heads of ranks {}-{}", l, r, first,
                                first + share - 1),
                    false);
      }
  }

  /// Stage r: the routed experts' gradients over each group of ranks that hold the same experts
  /// (every e-th of the stage's t c d), then every rank's update of its (ZeRO) shard.
  void add_expert_reductions_and_updates(int r, const StageCosts& work) {
    const int e = layout_.expert;
    std::vector<std::pair<int, int>> ranks;
    for (int l = 0; l < lanes(); ++l)
      for (int k = 0; k < layout_.tensor; ++k)
        ranks.emplace_back(l, k);
    if (work.expert_parameters > 0)
      for (int position = 0; position < e; ++position) {
        std::vector<int> members;
        for (size_t q = static_cast<size_t>(position); q < ranks.size();
             q += static_cast<size_t>(e))
          members.push_back(worker(ranks[q].first, ranks[q].second, r));
        reduce_over(members, work.expert_parameters * workload_.bytes_per_parameter,
                    fmt::format("stage {} expert shard {}", r, position));
      }
    const bool sharded = layout_.zero_stage >= 1;
    const double updated =
        (work.parameters - work.expert_parameters) / (sharded ? lanes() : 1) +
        work.expert_parameters / (sharded ? std::max(1, expert_data_size(layout_)) : 1);
    for (const auto& [l, k] : ranks) {
      const int w = worker(l, k, r);
      Op op;
      op.kind = OpKind::Update;
      op.label = fmt::format("w{} update", w);
      op.worker = w;
      op.flop = updated * workload_.update_flop_per_parameter;
      // The step's fixed cost (step_overhead_s: a calibrated C(b)'s intercept, which holds the
      // update when the workload folds it in) once per step on every rank, whatever its
      // micro-batches: exec's layout trainer updates once a step, and a micro-batch's pass adds
      // next to nothing (experiments/parallelism/README.md, 2026-12-01).
      op.overhead_s = step_overhead_on(options_, platform_, host(w));
      // The step ends here for the first stage's first rank (one step per round).
      op.step_fraction = r == 0 && l == 0 && k == 0 ? 1.0 : 0.0;
      last_[static_cast<size_t>(w)] = add(op, {last_[static_cast<size_t>(w)]});
    }
  }

  const StrategyOptions& options_;
  const Workload& workload_;
  const Platform& platform_;
  Layout layout_;
  MeshPlacement placement_;
  std::map<std::pair<int, const ComputeProfile*>, PassSeconds> profiled_;
  Plan& plan_;
  std::vector<OpId> last_;  ///< per worker: its last op so far
  std::vector<std::vector<std::vector<OpId>>> forward_in_, backward_in_;
  std::vector<std::vector<StageCosts>> chunk_work_;  ///< [stage][chunk]
};

class MeshStrategy : public Strategy {
 public:
  const char* name() const override { return "mesh"; }
  const char* description() const override {
    return "a transformer or an MLP over a data x tensor x pipeline mesh: Megatron tensor "
           "parallelism, GPipe or 1F1B pipelines, ZeRO, context and expert parallelism (the "
           "layout keys)";
  }
  std::vector<std::string> keys() const override {
    return {"workers",           "hosts",         "tensor_parallel",
            "pipeline_parallel", "data_parallel", "context_parallel",
            "expert_parallel",   "micro_batches", "pipeline_schedule",
            "zero_stage",        "recompute",     "sequence_parallel"};
  }
  bool splits_batch() const override { return true; }
  bool splits_model() const override { return true; }
  bool listed_by_default() const override { return false; }
  StrategyOptions normalise(StrategyOptions options) const override {
    options.tau = 1;
    options.split = BatchSplit::Even;
    options.collective = ring_collective();
    options.overlap = false;
    options.single_host.clear();
    options.micro_batches = options.layout.micro_batches;
    return options;
  }
  std::string label(const StrategyOptions& options) const override {
    return fmt::format("mesh {}", options.layout.label());
  }
  void recost(Plan& plan, const StrategyOptions& options, const Workload& workload,
              const Platform& platform) const override {
    Plan fresh = generate(normalise(options), workload, platform);
    fresh.rounds = plan.rounds;
    fresh.convergence_steps = plan.convergence_steps;
    plan = std::move(fresh);
  }

 protected:
  Plan generate(const StrategyOptions& options, const Workload& workload,
                const Platform& platform) const override {
    if (!workload.transformer && workload.mlp_widths.empty())
      throw InputError(options.origin_of("workload"),
                       "a transformer workload (layers, hidden, heads, ...) or an MLP (widths) "
                       "for strategy mesh",
                       "'" + workload.name + "'");
    if (options.compute_s >= 0 || options.comm_s >= 0)
      throw InputError(options.origin_of(options.compute_s >= 0 ? "compute_s" : "comm_s"),
                       "no what-if override with strategy mesh (its ops are costed from the "
                       "transformer's shape)",
                       "given");
    const Layout& layout = options.layout;
    if (workload.transformer) {
      check_layout(layout, workload, options.batch, options.workers, options.origins());
    } else {
      if (layout.context > 1 || layout.expert > 1)
        throw InputError(
            options.origin_of(layout.context > 1 ? "context_parallel" : "expert_parallel"),
            "1 for an MLP (it has no sequence to split and no experts)",
            std::to_string(std::max(layout.context, layout.expert)));
      check_mlp_layout(layout, workload, options.batch, options.workers, options.origins());
    }
    check_plan_fits(layout, options.origins());
    const std::vector<int> hosts = choose_worker_hosts(options, platform);
    MeshPlacement placement = place_mesh(layout, platform, hosts, options.origins());
    if (options.check_memory && workload.transformer)
      check_layout_fits(workload, options, platform, placement);
    Plan plan;
    plan.strategy = name();
    plan.workers = options.workers;
    plan.batch = options.batch;
    plan.collective = ring_collective();
    plan.micro_batches = layout.micro_batches;
    plan.worker_hosts = hosts;
    plan.worker_samples.assign(hosts.size(), options.batch / layout.data);
    LayoutLowering(options, workload, platform, std::move(placement), plan).build();
    return plan;
  }

 private:
  /// Memory per worker of every stage against its host's GPU memory, where the platform
  /// gives one (InputError naming `batch`, as the data-parallel strategies do).
  static void check_layout_fits(const Workload& workload, const StrategyOptions& options,
                                const Platform& platform, const MeshPlacement& placement) {
    const Layout& layout = placement.layout;
    const LayoutMemory memory = layout_memory(workload, layout, options.batch);
    for (int r = 0; r < layout.pipeline; ++r) {
      const double need = memory.stages[static_cast<size_t>(r)].total_bytes();
      for (int k = 0; k < layout.tensor; ++k)
        for (int i = 0; i < layout.data * layout.context; ++i) {
          const int h = placement.hosts[static_cast<size_t>(
              placement.worker(i / layout.context, k, r, i % layout.context))];
          const Host& host = platform.hosts[static_cast<size_t>(h)];
          if (host.gpu_memory_bytes > 0 && need > host.gpu_memory_bytes)
            throw InputError(
                options.origin_of("batch"),
                fmt::format("a layout whose stage {} fits in {}'s {:.1f} GiB", r, host.name,
                            host.gpu_memory_bytes / 1073741824.0),
                fmt::format("{:.1f} GiB per worker ({})", need / 1073741824.0, layout.label()));
        }
    }
  }
};

}  // namespace

std::unique_ptr<Strategy> make_mesh_strategy() {
  return std::make_unique<MeshStrategy>();
}

const Strategy& mesh_strategy() {
  return strategy(MeshStrategy().name());
}

}  // namespace tauplan::model
