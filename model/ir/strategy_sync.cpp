// strategy_sync.cpp: synchronous data parallelism (T1 = Na(b) (C(b/K) + S)).
//
// The global batch b is split over K workers (evenly, or in proportion to host speed as HetSeq
// balances mixed GPUs); the gradients are all-reduced every step, weighted by samples, then
// every worker applies the same update. With `overlap` (PyTorch DDP) the backward pass is cut
// into gradient buckets of at most bucket_bytes, in reverse layer order; each bucket's
// all-reduce starts once every worker has computed it and the previous bucket's all-reduce is
// done. Without overlap this is SparkNet's T1. With `micro_batches` m > 1 each worker's share
// runs as m micro-batches whose gradients accumulate before the one all-reduce of the step
// (fairseq's and HetSeq's --update-freq): the step overhead is paid once a step, memory is
// checked for one micro-batch, and with overlap only the last micro-batch's backward meets the
// all-reduce. The exec engine runs the m micro-batches of a worker as one batch (the same
// gradient: the mean over the same samples). Leaves out: DDP's smaller first bucket and the
// forward/backward split of each layer (backward is taken as 2/3 of a layer's flop).
#include <algorithm>
#include <numeric>

#include <fmt/format.h>

#include "model/base/error.hpp"
#include "model/ir/collective.hpp"
#include "model/ir/strategy.hpp"

namespace tauplan::model {
namespace {

struct Bucket {
  double bytes = 0;
  double flop_fraction = 0;  ///< of one sample's forward+backward flop
};

constexpr double kBackwardShare = 2.0 / 3.0;

// Gradient buckets in the order the backward pass produces them (last layer first).
std::vector<Bucket> make_buckets(const Workload& workload, double bucket_bytes) {
  double layer_flop = 0, layer_params = 0;
  for (const Layer& l : workload.layers) {
    layer_flop += l.flop_per_sample;
    layer_params += l.parameters;
  }
  std::vector<Bucket> buckets;
  Bucket open;
  for (auto it = workload.layers.rbegin(); it != workload.layers.rend(); ++it) {
    open.bytes += workload.gradient_bytes() * it->parameters / layer_params;
    open.flop_fraction += kBackwardShare * it->flop_per_sample / layer_flop;
    if (open.bytes >= bucket_bytes) {
      buckets.push_back(open);
      open = Bucket{};
    }
  }
  if (open.bytes > 0 || open.flop_fraction > 0) buckets.push_back(open);
  return buckets;
}

class SyncStrategy : public Strategy {
 public:
  const char* name() const override { return "sync"; }
  const char* description() const override {
    return "global batch b split over K workers, gradient all-reduce every step (T1)";
  }
  std::vector<std::string> keys() const override {
    return {"workers", "hosts",   "split",        "collective",
            "servers", "overlap", "bucket_bytes", "micro_batches"};
  }
  bool splits_batch() const override { return true; }
  StrategyOptions normalise(StrategyOptions options) const override {
    options.tau = 1;
    options.single_host.clear();
    return options;
  }
  void recost(Plan& plan, const StrategyOptions& options, const Workload& workload,
              const Platform& platform) const override {
    plan.batch = options.batch;
    plan.split = options.split;
    plan.worker_samples = split_batch(options.batch, plan.worker_hosts, platform, options.split);
    const double flop_per_sample =
        effective_flop_per_sample(options, workload, platform, plan.worker_hosts);
    for (auto v : plan.op_ids()) {
      Op& op = plan.op(v);
      if (op.kind != OpKind::Compute) continue;
      op.samples = plan.worker_samples[static_cast<size_t>(op.worker)];
      op.flop = op.samples * flop_per_sample * op.step_fraction;
    }
  }

 protected:
  Plan generate(const StrategyOptions& options, const Workload& workload,
                const Platform& platform) const override {
    Plan plan;
    plan.strategy = name();
    plan.workers = options.workers;
    plan.batch = options.batch;
    plan.split = options.split;
    plan.collective = options.collective;
    plan.overlap = options.overlap;
    plan.bucket_bytes = options.overlap ? options.bucket_bytes : 0;
    plan.micro_batches = options.micro_batches;
    plan.worker_hosts = choose_worker_hosts(options, platform);
    plan.server_hosts = choose_servers(options, platform);
    if (options.batch < options.workers)
      throw InputError(
          options.origin_of("batch"),
          fmt::format("at least workers={} samples for sync (one per worker)", options.workers),
          fmt::format("{:g}", options.batch));
    const int micro = options.micro_batches;
    if (micro < 1)
      throw InputError(options.origin_of("micro_batches"), "a whole number >= 1",
                       std::to_string(micro));
    plan.worker_samples = split_batch(options.batch, plan.worker_hosts, platform, options.split);
    for (int w = 0; w < plan.workers; ++w) {
      const double samples = plan.worker_samples[static_cast<size_t>(w)];
      if (micro > 1 && samples > 0 && samples < micro)
        throw InputError(options.origin_of("micro_batches"),
                         fmt::format("at most the samples of every worker per step ({:g} on "
                                     "worker {})",
                                     samples, w),
                         std::to_string(micro));
      // Gradient accumulation: only one micro-batch's activations are alive at a time.
      check_fits_in_memory(options, workload, platform, plan.worker_hosts[static_cast<size_t>(w)],
                           samples / micro);
    }
    const double flop_per_sample =
        effective_flop_per_sample(options, workload, platform, plan.worker_hosts);

    std::vector<Bucket> buckets;
    if (options.overlap) {
      if (workload.layers.empty())
        throw InputError(options.origin_of("overlap"),
                         "a workload with a `layers` list (" + workload.source + " has none)");
      if (!(options.bucket_bytes > 0))
        throw InputError(options.origin_of("bucket_bytes"), "a size > 0");
      buckets = make_buckets(workload, options.bucket_bytes);
    } else {
      buckets.push_back(Bucket{workload.gradient_bytes(), 1.0});
    }

    std::vector<int> group(static_cast<size_t>(plan.workers));
    std::iota(group.begin(), group.end(), 0);
    // last_compute[w]: the op that ends worker w's previous part of the step.
    std::vector<OpId> last_compute(static_cast<size_t>(plan.workers));
    for (int w = 0; w < plan.workers; ++w) {
      const double samples = plan.worker_samples[static_cast<size_t>(w)];
      Op part;
      part.kind = OpKind::Compute;
      part.worker = w;
      part.samples = samples;
      // The step's fixed cost once and each micro-batch's pass's (with overlap, the last
      // backward's too); the first micro - 1 run whole before the last one's forward.
      part.overhead_s =
          step_fixed_cost_on(options, platform, plan.worker_hosts[static_cast<size_t>(w)], micro);
      if (options.overlap) {
        part.label = micro > 1 ? fmt::format("w{} {} micro-batches + forward", w, micro - 1)
                               : fmt::format("w{} forward", w);
        part.step_fraction = 1.0 - kBackwardShare / micro;
      } else {
        part.label = micro > 1 ? fmt::format("w{} forward+backward x{} micro-batches", w, micro)
                               : fmt::format("w{} forward+backward", w);
      }
      part.flop = samples * flop_per_sample * part.step_fraction;
      last_compute[static_cast<size_t>(w)] = plan.add(part);
    }
    OpId previous_collective{};
    bool have_previous = false;
    for (size_t j = 0; j < buckets.size(); ++j) {
      Op reduce;
      reduce.kind = OpKind::Collective;
      reduce.label = options.overlap ? fmt::format("all-reduce bucket {}", j) : "all-reduce";
      reduce.algorithm = options.collective;
      reduce.payload = CollectivePayload::Gradients;
      reduce.bytes = buckets[j].bytes;
      reduce.group = group;
      reduce.fixed_time_s =
          options.comm_s < 0 ? -1 : options.comm_s * buckets[j].bytes / workload.gradient_bytes();
      const OpId reduce_id = plan.add(reduce);
      for (int w = 0; w < plan.workers; ++w) {
        auto& last = last_compute[static_cast<size_t>(w)];
        if (options.overlap) {
          Op part;
          part.kind = OpKind::Compute;
          part.label = fmt::format("w{} backward bucket {}", w, j);
          part.worker = w;
          part.samples = plan.worker_samples[static_cast<size_t>(w)];
          part.step_fraction = buckets[j].flop_fraction / micro;
          part.flop = part.samples * flop_per_sample * part.step_fraction;
          const OpId part_id = plan.add(part);
          plan.depend(last, part_id);
          last = part_id;
        }
        plan.depend(last, reduce_id);
      }
      if (have_previous) plan.depend(previous_collective, reduce_id);
      previous_collective = reduce_id;
      have_previous = true;
    }
    for (int w = 0; w < plan.workers; ++w) {
      Op update;
      update.kind = OpKind::Update;
      update.label = fmt::format("w{} update", w);
      update.worker = w;
      update.flop = workload.parameters * workload.update_flop_per_parameter;
      const OpId update_id = plan.add(update);
      plan.depend(previous_collective, update_id);
      plan.depend(last_compute[static_cast<size_t>(w)], update_id);
    }
    return plan;
  }
};

}  // namespace

std::unique_ptr<Strategy> make_sync_strategy() {
  return std::make_unique<SyncStrategy>();
}

const Strategy& sync_strategy() {
  return strategy(SyncStrategy().name());
}

}  // namespace tauplan::model
