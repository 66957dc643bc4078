// strategy_mesh.cpp: a transformer or an MLP trained under a Mesh-TensorFlow layout
// (model/mesh.hpp), lowered op by op into a Plan that the analytic and SimGrid engines run like
// any other. What follows is the transformer's; an MLP (model/mlp_layout.hpp) is lowered the same
// way with its own per-stage work: one all-reduce per split pair of layers and direction (sizes
// differ pair by pair), whole-width sends from each tensor rank to the same rank of the next
// stage (no all-gather), no element-wise traffic, and no memory check.
//
// Workers are placed as model/layout_cost.hpp places them (tensor first, then data, then
// pipeline; or tensor, pipeline, data with rank_order tp-pp-dp). Per replica, stage and
// micro-batch, in the stage's schedule order (GPipe: every forward, then every backward; 1F1B: p -
// r - 1 forwards of warm-up on stage r, then one forward and one backward alternately, then the
// remaining backwards), each tensor rank runs one Compute op (its 1/t of the stage's forward or
// backward flop, plus its element-wise memory time and, on the forward, the step overhead), then
// the tensor group runs its all-reduces of that pass as one ring Collective op repeated `count`
// times (2 per layer forward and backward, 2 more backward with full recomputation, the embedding's
// on the first stage forward and the output projection's on the last stage backward;
// model/layout_cost.hpp). Between stages, each rank sends its 1/t slice of the b s h activations
// (forward) or gradients (backward) to the matching rank of the next (previous) stage as a
// Transfer, and without sequence parallelism the receiving tensor group all-gathers the slices: a
// ring of Transfers, t - 1 steps each ended by a Barrier. The receiver's pass waits for its input;
// a sender does not wait for its send (the network carries it while the stage computes:
// non-blocking point-to-point). After its last backward, each data group (same tensor rank and
// stage, one per replica) all-reduces its stage's gradients with a ring Collective (ZeRO 0-2:
// reduce-scatter + all-gather), and under ZeRO 3 all-gathers the parameters once more (a ring of
// Transfers as above: three ring halves in all, model/layout_cost.hpp's 1.5 all-reduces); then
// every rank updates its parameters (its 1/d shard from ZeRO 1). With uniform stages and free sends
// the longest path is (m + p - 1)(forward + backward) [identity of the schedules: the bubble (p -
// 1)/(m + p - 1)]. What it leaves out: interleaved 1F1B (virtual_stages > 1 is refused here;
// `tauplan layout` evaluates it in closed form), ZeRO 3's per-micro-batch parameter gathers (one
// gather per step is charged, as the closed form does), overlap of tensor all-reduces with compute,
// the tied embedding's all-reduce between first and last stage, and the what-if C(b) and S
// overrides. `tauplan measure` trains an MLP's layout for real (exec/pipeline_parallel.hpp).
#include <algorithm>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "model/collective.hpp"
#include "model/compute_source.hpp"
#include "model/error.hpp"
#include "model/layout_cost.hpp"
#include "model/layout_memory.hpp"
#include "model/limits.hpp"
#include "model/machine_memory.hpp"
#include "model/mlp_layout.hpp"
#include "model/strategy.hpp"

namespace tauplan::model {
namespace {

/// Ops of the Plan LayoutLowering builds (an upper bound for an MLP, whose messages are not
/// sliced): per pass of a replica's stage, t computes and (t > 1) a tensor all-reduce; per
/// crossing of a stage boundary, t sends and either a barrier (sequence parallel) or the
/// receivers' ring all-gather (t - 1 steps of t transfers and a barrier, after a start barrier);
/// per tensor rank and stage, the data group's all-reduce (d > 1), ZeRO 3's ring all-gather, and
/// d updates.
double mesh_plan_ops(const Layout& layout) {
  const double d = layout.data, t = layout.tensor, p = layout.pipeline, m = layout.micro_batches;
  const double passes = 2 * d * p * m;
  const double crossings = 2 * d * (p - 1) * m;
  const double arrival = layout.sequence_parallel ? 1 : 1 + (t - 1) * (t + 1);
  const double data_group = d > 1 ? 1 + (layout.zero_stage >= 3 ? 1 + (d - 1) * (d + 1) : 0) : 0;
  return passes * (t + (t > 1 ? 1 : 0)) + crossings * (t + arrival) + p * t * (data_group + d);
}

/// Refuses a layout whose Plan exceeds kMaxMeshPlanOps or this machine's available memory at
/// kMeshPlanBytesPerOp (a simulation of it adds little: sim/README.md, "At scale").
void check_plan_fits(const Layout& layout, const std::string& file) {
  const double ops = mesh_plan_ops(layout);
  const double bytes = ops * kMeshPlanBytesPerOp;
  const double available = available_memory_bytes();
  const std::string what =
      fmt::format("about {:.3g} ops ({:.3g} GB) for {}", ops, bytes / 1e9, layout.label());
  if (ops > kMaxMeshPlanOps)
    throw InputError(file, "micro_batches",
                     fmt::format("a layout whose Plan has at most {:g} ops: fewer micro_batches "
                                 "or workers (`tauplan layout` evaluates larger ones in closed "
                                 "form)",
                                 kMaxMeshPlanOps),
                     what);
  if (available >= 0 && bytes > available)
    throw InputError(file, "micro_batches",
                     fmt::format("a layout whose Plan fits in this machine's {:.3g} GB of "
                                 "available memory: fewer micro_batches or workers (`tauplan "
                                 "layout` evaluates it in closed form)",
                                 available / 1e9),
                     what);
}

/// The passes of one stage in schedule order: (forward?, micro-batch).
std::vector<std::pair<bool, int>> stage_schedule(PipelineSchedule schedule, int stage, int pipeline,
                                                 int micro_batches) {
  std::vector<std::pair<bool, int>> order;
  if (schedule == PipelineSchedule::GPipe) {
    for (int j = 0; j < micro_batches; ++j)
      order.emplace_back(true, j);
    for (int j = 0; j < micro_batches; ++j)
      order.emplace_back(false, j);
    return order;
  }
  const int warmup = std::min(pipeline - stage - 1, micro_batches);
  for (int j = 0; j < warmup; ++j)
    order.emplace_back(true, j);
  for (int j = warmup; j < micro_batches; ++j) {
    order.emplace_back(true, j);
    order.emplace_back(false, j - warmup);
  }
  for (int j = micro_batches - warmup; j < micro_batches; ++j)
    order.emplace_back(false, j);
  return order;
}

/// What one tensor rank of a stage does per micro-batch, for a transformer (model/layout_cost.hpp)
/// or an MLP (model/mlp_layout.hpp): the lowering below is the same for both.
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
  double parameters = 0;  ///< held by one tensor rank
};

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
    if (work.backward_allreduces > 0)
      costs.backward_allreduces.emplace_back(work.allreduce_bytes, work.backward_allreduces);
    costs.forward_message_bytes = costs.backward_message_bytes =
        pipeline_message_values(*workload.transformer, layout.micro_batch(batch)) * e;
    costs.parameters = stage_parameters(*workload.transformer, layout, stage);
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

/// Builds the layout's Plan: the ops of every rank, chained in schedule order.
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
    const int d = layout_.data, t = layout_.tensor, p = layout_.pipeline;
    const int m = layout_.micro_batches;
    // Arrival of micro-batch j's input at stage r of replica i: forward_in_[i][r][j] (from
    // r - 1) and backward_in_[i][r][j] (from r + 1).
    forward_in_.assign(
        static_cast<size_t>(d),
        std::vector<std::vector<OpId>>(static_cast<size_t>(p),
                                       std::vector<OpId>(static_cast<size_t>(m), kNone)));
    backward_in_ = forward_in_;
    std::vector<StageCosts> work;
    for (int r = 0; r < p; ++r)
      work.push_back(stage_costs(workload_, layout_, options_.batch, r));
    std::vector<std::vector<std::pair<bool, int>>> order;
    for (int r = 0; r < p; ++r)
      order.push_back(stage_schedule(layout_.schedule, r, p, m));
    // A pass waits for its input (a neighbouring stage's send), so the ops are emitted stage by
    // stage, each stage as far as its inputs exist, sweeping the stages again until every pass
    // is placed; a schedule that deadlocked would stop the sweeps early (logic_error below).
    std::vector<size_t> next(static_cast<size_t>(p), 0);
    for (int i = 0; i < d; ++i) {
      std::fill(next.begin(), next.end(), 0);
      bool progress = true;
      while (progress) {
        progress = false;
        for (int r = 0; r < p; ++r) {
          auto& cursor = next[static_cast<size_t>(r)];
          while (cursor < order[static_cast<size_t>(r)].size()) {
            const auto [forward, j] = order[static_cast<size_t>(r)][cursor];
            const bool first_in = forward ? r == 0 : r == p - 1;
            const OpId input = first_in
                                   ? kNone
                                   : (forward ? forward_in_ : backward_in_)[static_cast<size_t>(
                                         i)][static_cast<size_t>(r)][static_cast<size_t>(j)];
            if (!first_in && input == kNone) break;  // its input is not built yet
            add_pass(i, r, j, forward, input, work[static_cast<size_t>(r)]);
            ++cursor;
            progress = true;
          }
        }
      }
      for (int r = 0; r < p; ++r)
        if (next[static_cast<size_t>(r)] != order[static_cast<size_t>(r)].size())
          throw std::logic_error("layout lowering: a pipeline schedule waits on itself");
    }
    for (int r = 0; r < p; ++r)
      for (int k = 0; k < t; ++k)
        add_data_parallel(k, r, work[static_cast<size_t>(r)].parameters);
  }

 private:
  static constexpr OpId kNone = static_cast<OpId>(-1);

  int worker(int i, int k, int r) const { return placement_.worker(i, k, r); }

  /// A stage's pass times on hosts of one compute profile, computed once.
  const PassSeconds& profiled_pass(int stage, const ComputeProfile& profile) {
    const auto key = std::make_pair(stage, &profile);
    const auto it = profiled_.find(key);
    if (it != profiled_.end()) return it->second;
    return profiled_[key] = stage_pass_seconds(workload_, layout_, options_.batch, stage, profile);
  }
  int host(int w) const { return placement_.hosts[static_cast<size_t>(w)]; }

  OpId add(Op op, const std::vector<OpId>& after) {
    const OpId id = plan_.add(std::move(op));
    for (OpId before : after)
      if (before != kNone) plan_.depend(before, id);
    return id;
  }

  /// One forward or backward pass of micro-batch j on stage r of replica i, then its sends.
  void add_pass(int i, int r, int j, bool forward, OpId input, const StageCosts& work) {
    const int t = layout_.tensor;
    const char* pass = forward ? "forward" : "backward";
    std::vector<OpId> computes;
    for (int k = 0; k < t; ++k) {
      const int w = worker(i, k, r);
      const Host& h = platform_.hosts[static_cast<size_t>(host(w))];
      const double elementwise = elementwise_seconds(h, platform_, work.traffic_bytes);
      Op op;
      op.kind = OpKind::Compute;
      op.label = fmt::format("w{} stage {} {} mb {}", w, r, pass, j);
      op.worker = w;
      op.samples = layout_.micro_batch(options_.batch);
      op.flop = forward ? work.forward_flop : work.backward_flop;
      // Element-wise traffic split as the flop are (a third forward); the step overhead is
      // paid once per micro-batch, on its forward.
      op.overhead_s = forward ? step_overhead_on(options_, platform_, host(w)) + elementwise / 3
                              : elementwise * 2 / 3;
      // A host with a compute profile: the profile's time of the stage's operations, a fixed
      // time whatever the host's speed (the op's flop then count nothing).
      if (const ComputeProfile* profile =
              workload_.transformer ? host_compute_profile(h, platform_) : nullptr) {
        const PassSeconds& seconds = profiled_pass(r, *profile);
        op.flop = 0;
        op.overhead_s = forward ? step_overhead_on(options_, platform_, host(w)) + seconds.forward
                                : seconds.backward;
      }
      // A training step ends with the last micro-batch's backward on the first stage.
      op.step_fraction = 0;
      computes.push_back(add(op, {last_[static_cast<size_t>(w)], input}));
    }
    std::vector<OpId> done = computes;
    // One ring Collective per size of all-reduce, in the pass's order (a transformer's are all
    // one size, repeated; an MLP's pairs each have their own width).
    for (const auto& [bytes, count] :
         forward ? work.forward_allreduces : work.backward_allreduces) {
      if (t == 1 || count == 0) continue;
      Op op;
      op.kind = OpKind::Collective;
      op.label =
          fmt::format("replica {} stage {} {} mb {} tensor all-reduce x{}", i, r, pass, j, count);
      op.algorithm = ring_collective();
      op.payload = CollectivePayload::Gradients;
      op.bytes = bytes;
      op.repeat = static_cast<int>(count);
      for (int k = 0; k < t; ++k)
        op.group.push_back(worker(i, k, r));
      op.worker = op.group.front();
      const OpId collective = add(op, done);
      done.assign(static_cast<size_t>(t), collective);
    }
    for (int k = 0; k < t; ++k)
      last_[static_cast<size_t>(worker(i, k, r))] = done[static_cast<size_t>(k)];

    const int to = forward ? r + 1 : r - 1;
    if (to < 0 || to >= layout_.pipeline) return;
    const double message = forward ? work.forward_message_bytes : work.backward_message_bytes;
    const double slice = work.sliced_messages ? message / t : message;
    std::vector<OpId> sends;
    for (int k = 0; k < t; ++k) {
      Op op;
      op.kind = OpKind::Transfer;
      op.label = fmt::format("stage {} -> {} {} mb {} slice {}", r, to, pass, j, k);
      op.worker = worker(i, k, r);
      op.source = Endpoint::worker(worker(i, k, r));
      op.destination = Endpoint::worker(worker(i, k, to));
      op.payload = forward ? CollectivePayload::Parameters : CollectivePayload::Gradients;
      op.bytes = slice;
      sends.push_back(add(op, {done[static_cast<size_t>(k)]}));
    }
    std::vector<int> receivers;
    for (int k = 0; k < t; ++k)
      receivers.push_back(worker(i, k, to));
    const OpId arrived =
        layout_.sequence_parallel || !work.sliced_messages
            ? barrier(fmt::format("stage {} {} mb {} arrived", to, pass, j), sends)
            : ring_allgather(receivers, slice * t, sends,
                             fmt::format("stage {} {} mb {} all-gather", to, pass, j));
    (forward
         ? forward_in_
         : backward_in_)[static_cast<size_t>(i)][static_cast<size_t>(to)][static_cast<size_t>(j)] =
        arrived;
  }

  OpId barrier(const std::string& label, const std::vector<OpId>& after) {
    Op op;
    op.kind = OpKind::Barrier;
    op.label = label;
    return add(op, after);
  }

  /// A ring all-gather of `bytes` over `members` (worker indices) as t - 1 steps of Transfers,
  /// each step ended by a Barrier; starts after `after`. Returns the last Barrier.
  OpId ring_allgather(const std::vector<int>& members, double bytes, const std::vector<OpId>& after,
                      const std::string& label) {
    OpId step_done = barrier(label + " start", after);
    const int n = static_cast<int>(members.size());
    for (int s = 0; s + 1 < n; ++s) {
      std::vector<OpId> transfers;
      for (int k = 0; k < n; ++k) {
        Op op;
        op.kind = OpKind::Transfer;
        op.label = fmt::format("{} step {} rank {}", label, s, k);
        op.worker = members[static_cast<size_t>(k)];
        op.source = Endpoint::worker(members[static_cast<size_t>(k)]);
        op.destination = Endpoint::worker(members[static_cast<size_t>((k + 1) % n)]);
        op.payload = CollectivePayload::Parameters;
        op.bytes = bytes / n;
        transfers.push_back(add(op, {step_done}));
      }
      step_done = barrier(fmt::format("{} step {} done", label, s), transfers);
    }
    return step_done;
  }

  /// Tensor rank k of stage r: the gradient all-reduce over its data group, ZeRO 3's extra
  /// parameter all-gather, then each member's update.
  void add_data_parallel(int k, int r, double parameters) {
    const int d = layout_.data;
    std::vector<int> members;
    std::vector<OpId> ends;
    for (int i = 0; i < d; ++i) {
      members.push_back(worker(i, k, r));
      ends.push_back(last_[static_cast<size_t>(members.back())]);
    }
    std::vector<OpId> before_update = ends;
    if (d > 1) {
      Op op;
      op.kind = OpKind::Collective;
      op.label = fmt::format("stage {} tensor rank {} gradient all-reduce", r, k);
      op.algorithm = ring_collective();
      op.payload = CollectivePayload::Gradients;
      op.bytes = parameters * workload_.bytes_per_parameter;
      op.group = members;
      op.worker = members.front();
      const OpId allreduce = add(op, ends);
      before_update.assign(static_cast<size_t>(d), allreduce);
      if (layout_.zero_stage >= 3) {
        const OpId gathered = ring_allgather(
            members, parameters * workload_.bytes_per_parameter, {allreduce},
            fmt::format("stage {} tensor rank {} ZeRO-3 parameter all-gather", r, k));
        before_update.assign(static_cast<size_t>(d), gathered);
      }
    }
    const double updated = parameters / (layout_.zero_stage >= 1 ? d : 1);
    for (int i = 0; i < d; ++i) {
      Op op;
      op.kind = OpKind::Update;
      op.label = fmt::format("w{} update", members[static_cast<size_t>(i)]);
      op.worker = members[static_cast<size_t>(i)];
      op.flop = updated * workload_.update_flop_per_parameter;
      // The step ends here for the first stage's ranks (one step per round).
      op.step_fraction = r == 0 && k == 0 && i == 0 ? 1.0 : 0.0;
      last_[static_cast<size_t>(op.worker)] = add(op, {before_update[static_cast<size_t>(i)]});
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
};

class MeshStrategy : public Strategy {
 public:
  const char* name() const override { return "mesh"; }
  const char* description() const override {
    return "a transformer or an MLP over a data x tensor x pipeline mesh: Megatron tensor "
           "parallelism, GPipe or 1F1B pipelines, ZeRO (the layout keys)";
  }
  std::vector<std::string> keys() const override {
    return {"workers",           "hosts",         "tensor_parallel",
            "pipeline_parallel", "data_parallel", "micro_batches",
            "pipeline_schedule", "zero_stage",    "recompute",
            "sequence_parallel"};
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
      throw InputError(options.file, "workload",
                       "a transformer workload (layers, hidden, heads, ...) or an MLP (widths) "
                       "for strategy mesh",
                       "'" + workload.name + "'");
    if (options.compute_s >= 0 || options.comm_s >= 0)
      throw InputError(options.file, options.compute_s >= 0 ? "compute_s" : "comm_s",
                       "no what-if override with strategy mesh (its ops are costed from the "
                       "transformer's shape)",
                       "given");
    const Layout& layout = options.layout;
    if (workload.transformer)
      check_layout(layout, workload, options.batch, options.workers, options.file);
    else
      check_mlp_layout(layout, workload, options.batch, options.workers, options.file);
    if (layout.virtual_stages != 1)
      throw InputError(options.file, "virtual_stages",
                       "1 with strategy mesh (interleaved 1F1B is evaluated by `tauplan "
                       "layout`)",
                       std::to_string(layout.virtual_stages));
    check_plan_fits(layout, options.file);
    const std::vector<int> hosts = choose_worker_hosts(options, platform);
    MeshPlacement placement = place_mesh(layout, platform, hosts, options.file);
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
        for (int i = 0; i < layout.data; ++i) {
          const int h = placement.hosts[static_cast<size_t>(placement.worker(i, k, r))];
          const Host& host = platform.hosts[static_cast<size_t>(h)];
          if (host.gpu_memory_bytes > 0 && need > host.gpu_memory_bytes)
            throw InputError(
                options.file, "batch",
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

}  // namespace tauplan::model
