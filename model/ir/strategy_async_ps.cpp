// strategy_async_ps.cpp: asynchronous parameter servers (Downpour-style; SSP with a bound).
//
// K workers each loop on their own, with no barrier: pull the parameters from every server
// (shard N/S each), compute a gradient at batch b, push it to every server, and go on once every
// server has applied it; servers apply updates in arrival order, one at a time, at their host's
// speed (server_apply_flop: the optimizer step over the shard; plus the server host's own work
// per message and per byte, model/ir/server_work.hpp). With `staleness_bound` s > 0
// (SSP, Ho et al. 2013) a worker may not start step t+s+1 before every worker has pushed step
// t. The plan is one cycle per worker (plan.hpp's asynchronous plans); its rounds are server
// updates to the target, Na(b) (1 + kappa tau_bar) with the mean staleness tau_bar the analytic
// engine predicts (convergence.hpp). Leaves out: servers that answer pulls with stale copies
// (they answer with the parameters as applied so far), update compression, and learning rates
// scaled by staleness.
#include <fmt/format.h>

#include "model/base/error.hpp"
#include "model/ir/plan_timing.hpp"
#include "model/ir/server_work.hpp"
#include "model/ir/strategy.hpp"

namespace tauplan::model {
namespace {

double worker_step_flop(const StrategyOptions& options, const Workload& workload,
                        const Platform& platform, const std::vector<int>& hosts) {
  return options.batch * effective_flop_per_sample(options, workload, platform, hosts);
}

class AsyncPsStrategy : public Strategy {
 public:
  const char* name() const override { return "async-ps"; }
  const char* description() const override {
    return "asynchronous parameter servers: each worker pulls, computes at batch b and pushes "
           "with no barrier; servers apply updates in arrival order (staleness_bound: SSP)";
  }
  std::vector<std::string> keys() const override {
    return {"workers", "hosts", "servers", "staleness_bound"};
  }
  bool listed_by_default() const override { return false; }
  bool asynchronous() const override { return true; }
  StrategyOptions normalise(StrategyOptions options) const override {
    options.tau = 1;
    options.split = BatchSplit::Even;
    options.collective.clear();
    options.overlap = false;
    options.single_host.clear();
    options.round_budget_s = 0;
    return options;
  }
  std::string label(const StrategyOptions& options) const override {
    std::string text = fmt::format("{} K={}", name(), options.workers);
    if (options.servers != 1) text += fmt::format(" servers={}", options.servers);
    if (options.staleness_bound > 0) text += fmt::format(" s={}", options.staleness_bound);
    return text;
  }
  double convergence_steps(const Plan& plan, const ConvergenceModel& convergence) const override {
    return convergence.async_updates(plan.batch, plan.mean_staleness);
  }
  void recost(Plan& plan, const StrategyOptions& options, const Workload& workload,
              const Platform& platform) const override {
    plan.batch = options.batch;
    plan.staleness_bound = options.staleness_bound;
    plan.worker_samples.assign(plan.worker_hosts.size(), options.batch);
    const double flop = worker_step_flop(options, workload, platform, plan.worker_hosts);
    for (auto v : plan.op_ids()) {
      Op& op = plan.op(v);
      if (op.kind != OpKind::Compute) continue;
      op.samples = options.batch;
      op.flop = flop;
    }
    plan.mean_staleness = evaluate(compile(plan, platform)).mean_staleness;
  }

 protected:
  Plan generate(const StrategyOptions& options, const Workload& workload,
                const Platform& platform) const override {
    if (options.staleness_bound < 0)
      throw InputError(options.origin_of("staleness_bound"), "a whole number >= 0 (0 = unbounded)",
                       std::to_string(options.staleness_bound));
    Plan plan;
    plan.strategy = name();
    plan.workers = options.workers;
    plan.batch = options.batch;
    plan.asynchronous = true;
    plan.staleness_bound = options.staleness_bound;
    plan.worker_hosts = choose_worker_hosts(options, platform);
    plan.server_hosts = choose_async_servers(options, platform);
    for (int w = 0; w < plan.workers; ++w) {
      check_fits_in_memory(options, workload, platform, plan.worker_hosts[static_cast<size_t>(w)],
                           options.batch);
      plan.worker_samples.push_back(options.batch);
    }
    const double flop = worker_step_flop(options, workload, platform, plan.worker_hosts);
    const auto servers = static_cast<int>(plan.server_hosts.size());
    const double shard_bytes = workload.gradient_bytes() / servers;
    const double shard_apply_flop = server_apply_flop(workload) / servers;
    // Each server's own processing of an update (model/ir/server_work.hpp): its push and reply
    // handled, the shard's bytes applied; on top of the optimizer's arithmetic.
    std::vector<ServerWork> server_work;
    for (int host : plan.server_hosts)
      server_work.push_back(server_work_of(platform, host));
    // The what-if S is the whole pull + push of one update: half each way.
    const double transfer_s = options.comm_s < 0 ? -1 : options.comm_s / 2;

    for (int w = 0; w < plan.workers; ++w) {
      Op compute;
      compute.kind = OpKind::Compute;
      compute.label = fmt::format("w{} step", w);
      compute.worker = w;
      compute.samples = options.batch;
      compute.flop = flop;
      compute.overhead_s =
          step_fixed_cost_on(options, platform, plan.worker_hosts[static_cast<size_t>(w)]);
      const OpId compute_id = plan.add(compute);
      for (int s = 0; s < servers; ++s) {
        Op pull;
        pull.kind = OpKind::Transfer;
        pull.label = fmt::format("w{} pull from server {}", w, s);
        pull.worker = w;
        pull.payload = CollectivePayload::Parameters;
        pull.bytes = shard_bytes;
        pull.source = Endpoint::server(s);
        pull.destination = Endpoint::worker(w);
        pull.fixed_time_s = transfer_s;
        Op push = pull;
        push.label = fmt::format("w{} push to server {}", w, s);
        push.payload = CollectivePayload::Gradients;
        push.source = Endpoint::worker(w);
        push.destination = Endpoint::server(s);
        Op apply;
        apply.kind = OpKind::Apply;
        apply.label = fmt::format("server {} applies w{}", s, w);
        apply.worker = w;
        apply.server = s;
        apply.flop = shard_apply_flop + server_flop(server_work[static_cast<size_t>(s)],
                                                    async_update_load(shard_bytes));
        plan.depend(plan.add(pull), compute_id);
        const OpId push_id = plan.add(push);
        plan.depend(compute_id, push_id);
        plan.depend(push_id, plan.add(apply));
      }
    }
    plan.mean_staleness = evaluate(compile(plan, platform)).mean_staleness;
    return plan;
  }

 private:
  /// The first `servers` server hosts of the platform, each with a processing speed.
  static std::vector<int> choose_async_servers(const StrategyOptions& options,
                                               const Platform& platform) {
    const std::vector<int> available = platform.server_hosts();
    if (options.servers < 1 || options.servers > static_cast<int>(available.size()))
      throw InputError(options.origin_of("servers"),
                       fmt::format("between 1 and {} (the server hosts, prop role=server, of {})",
                                   available.size(), platform.source_file),
                       std::to_string(options.servers));
    const std::vector<int> chosen(available.begin(), available.begin() + options.servers);
    for (int h : chosen) {
      const Host& host = platform.hosts[static_cast<size_t>(h)];
      if (!(host.speed_flops > 0))
        throw InputError(platform.source_file, "host " + host.name + " speed",
                         "a processing speed > 0 (flop/s) for a parameter server that applies "
                         "updates",
                         fmt::format("{:g}", host.speed_flops));
    }
    return chosen;
  }
};

}  // namespace

std::unique_ptr<Strategy> make_async_ps_strategy() {
  return std::make_unique<AsyncPsStrategy>();
}

}  // namespace tauplan::model
