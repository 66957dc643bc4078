// strategy_local_sgd.cpp: SparkNet / local SGD (T2 = Ma(b,K,tau) (tau C(b) + S)).
//
// Each of K workers takes tau local SGD steps at batch b (its local update folded into each
// step), then the parameters are averaged with the job's collective. Heterogeneous workers all
// take tau steps, so the round waits for the slowest. With a time budget per round
// (round_budget_s, instead of tau) each worker takes as many steps as fit, floor(budget /
// C_w), so faster workers take more (heterogeneity-aware local SGD, parallelism notes section
// 8), and the parameters are averaged weighted by steps; the round lasts the longest worker's
// steps (at most the budget) plus the average, and its rounds come from Ma for unequal local
// steps (convergence.hpp). Leaves out: budgets that change from round to round.
#include <algorithm>
#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "model/base/error.hpp"
#include "model/ir/collective.hpp"
#include "model/ir/strategy.hpp"

namespace tauplan::model {
namespace {

class LocalSgdStrategy : public Strategy {
 public:
  const char* name() const override { return "local-sgd"; }
  const char* description() const override {
    return "K workers, tau local steps at batch b each, then parameter averaging (T2)";
  }
  std::vector<std::string> keys() const override {
    return {"workers", "hosts", "tau", "round_budget_s", "collective", "servers"};
  }
  StrategyOptions normalise(StrategyOptions options) const override {
    options.split = BatchSplit::Even;
    options.overlap = false;
    options.micro_batches = 1;
    options.single_host.clear();
    if (options.round_budget_s > 0) options.tau = 1;  // the budget decides the steps
    return options;
  }
  bool counts_rounds() const override { return true; }
  double convergence_steps(const Plan& plan, const ConvergenceModel& convergence) const override {
    if (plan.round_budget_s <= 0) return Strategy::convergence_steps(plan, convergence);
    std::vector<int> steps(plan.worker_hosts.size(), 0);
    for (auto v : plan.op_ids())
      if (plan.op(v).kind == OpKind::Compute)
        steps[static_cast<size_t>(plan.op(v).worker)] = plan.op(v).steps;
    return convergence.unequal_local_rounds(plan.batch, steps);
  }
  void recost(Plan& plan, const StrategyOptions& options, const Workload& workload,
              const Platform& platform) const override {
    plan.batch = options.batch;
    plan.worker_samples.assign(plan.worker_hosts.size(), options.batch);
    const double flop_per_sample =
        effective_flop_per_sample(options, workload, platform, plan.worker_hosts);
    const double update_flop = workload.parameters * workload.update_flop_per_parameter;
    const std::vector<int> steps =
        local_steps(options, plan, platform, options.batch * flop_per_sample + update_flop);
    set_round_shape(plan, options, steps);
    for (auto v : plan.op_ids()) {
      Op& op = plan.op(v);
      if (op.kind != OpKind::Compute) continue;
      op.samples = options.batch;
      op.flop = options.batch * flop_per_sample + update_flop;
      op.steps = steps[static_cast<size_t>(op.worker)];
    }
  }

 protected:
  Plan generate(const StrategyOptions& options, const Workload& workload,
                const Platform& platform) const override {
    if (options.tau < 1)
      throw InputError(options.origin_of("tau"), "a whole number >= 1",
                       std::to_string(options.tau));
    Plan plan;
    plan.strategy = name();
    plan.workers = options.workers;
    plan.tau = options.tau;
    plan.batch = options.batch;
    plan.collective = options.collective;
    plan.worker_hosts = choose_worker_hosts(options, platform);
    plan.server_hosts = choose_servers(options, platform);
    const double flop_per_sample =
        effective_flop_per_sample(options, workload, platform, plan.worker_hosts);
    const double update_flop = workload.parameters * workload.update_flop_per_parameter;
    const double step_flop = options.batch * flop_per_sample + update_flop;
    for (int w = 0; w < plan.workers; ++w)
      plan.worker_samples.push_back(options.batch);
    const std::vector<int> steps = local_steps(options, plan, platform, step_flop);
    set_round_shape(plan, options, steps);

    Op average;
    average.kind = OpKind::Collective;
    average.label = "average parameters";
    average.algorithm = options.collective;
    average.payload = CollectivePayload::Parameters;
    average.bytes = workload.gradient_bytes();
    average.fixed_time_s = options.comm_s;
    for (int w = 0; w < plan.workers; ++w)
      average.group.push_back(w);
    const OpId average_id = plan.add(average);

    for (int w = 0; w < plan.workers; ++w) {
      check_fits_in_memory(options, workload, platform, plan.worker_hosts[static_cast<size_t>(w)],
                           options.batch);
      Op local;
      local.kind = OpKind::Compute;
      local.worker = w;
      local.steps = steps[static_cast<size_t>(w)];
      local.label = fmt::format("w{} {} local steps", w, local.steps);
      local.samples = options.batch;
      local.flop = step_flop;
      local.overhead_s =
          step_fixed_cost_on(options, platform, plan.worker_hosts[static_cast<size_t>(w)]);
      plan.depend(plan.add(local), average_id);
    }
    return plan;
  }

 private:
  /// Each worker's local steps: tau, or with a budget floor(budget / C_w), C_w = overhead +
  /// step flop / speed on its host. A budget shorter than some worker's step is an InputError.
  static std::vector<int> local_steps(const StrategyOptions& options, const Plan& plan,
                                      const Platform& platform, double step_flop) {
    const size_t k = plan.worker_hosts.size();
    if (options.round_budget_s <= 0) return std::vector<int>(k, options.tau);
    std::vector<int> steps(k);
    double slowest = 0;
    std::string slowest_host;
    for (size_t w = 0; w < k; ++w) {
      const Host& host = platform.hosts[static_cast<size_t>(plan.worker_hosts[w])];
      const double step_s = step_fixed_cost_on(options, platform, plan.worker_hosts[w]) +
                            (step_flop > 0 ? step_flop / host.speed_flops : 0.0);
      if (step_s > slowest) slowest = step_s, slowest_host = host.name;
      // A budget of exactly n steps gives n despite rounding (1e-9 relative slack).
      const double fit = options.round_budget_s / step_s * (1 + 1e-9);
      steps[w] = fit >= std::numeric_limits<int>::max() ? std::numeric_limits<int>::max()
                                                        : static_cast<int>(std::floor(fit));
    }
    if (std::any_of(steps.begin(), steps.end(), [](int n) { return n < 1; }))
      throw InputError(options.origin_of("round_budget_s"),
                       fmt::format("at least one step of every worker ({:g} s, a step of the "
                                   "slowest worker, host {})",
                                   slowest, slowest_host),
                       fmt::format("{:g} s", options.round_budget_s));
    return steps;
  }

  static void set_round_shape(Plan& plan, const StrategyOptions& options,
                              const std::vector<int>& steps) {
    plan.round_budget_s = options.round_budget_s > 0 ? options.round_budget_s : 0;
    plan.tau = 1;
    for (int n : steps)
      plan.tau = std::max(plan.tau, n);
    plan.steps_per_round = plan.tau;
  }
};

}  // namespace

std::unique_ptr<Strategy> make_local_sgd_strategy() {
  return std::make_unique<LocalSgdStrategy>();
}

const Strategy& local_sgd_strategy() {
  return strategy(LocalSgdStrategy().name());
}

}  // namespace tauplan::model
