// strategy_local_sgd.cpp: SparkNet / local SGD (T2 = Ma(b,K,tau) (tau C(b) + S)).
//
// Each of K workers takes tau local SGD steps at batch b (its local update folded into each
// step), then the parameters are averaged with the job's collective. Heterogeneous workers all
// take tau steps, so the round waits for the slowest. Leaves out: time-budgeted rounds where
// faster workers take more local steps.
#include <fmt/format.h>

#include "model/collective.hpp"
#include "model/error.hpp"
#include "model/strategy.hpp"

namespace tauplan::model {
namespace {

class LocalSgdStrategy : public StrategyGenerator {
 public:
  const char* name() const override { return "local-sgd"; }
  const char* description() const override {
    return "K workers, tau local steps at batch b each, then parameter averaging (T2)";
  }
  Plan generate(const StrategyOptions& options, const Workload& workload,
                const Platform& platform) const override {
    if (options.tau < 1)
      throw InputError(options.file, "tau", "a whole number >= 1", std::to_string(options.tau));
    Plan plan;
    plan.strategy = name();
    plan.workers = options.workers;
    plan.tau = options.tau;
    plan.batch = options.batch;
    plan.collective = options.collective;
    plan.worker_hosts = choose_worker_hosts(options, platform);
    plan.server_hosts = choose_servers(options, platform);
    plan.steps_per_round = options.tau;
    const double flop_per_sample =
        effective_flop_per_sample(options, workload, platform, plan.worker_hosts);
    const double update_flop = workload.parameters * workload.update_flop_per_parameter;

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
      plan.worker_samples.push_back(options.batch);
      Op steps;
      steps.kind = OpKind::Compute;
      steps.label = fmt::format("w{} {} local steps", w, options.tau);
      steps.worker = w;
      steps.samples = options.batch;
      steps.flop = options.batch * flop_per_sample + update_flop;
      steps.overhead_s =
          step_overhead_on(options, platform, plan.worker_hosts[static_cast<size_t>(w)]);
      steps.steps = options.tau;
      plan.depend(plan.add(steps), average_id);
    }
    return plan;
  }
};

}  // namespace

std::unique_ptr<StrategyGenerator> make_local_sgd_strategy() {
  return std::make_unique<LocalSgdStrategy>();
}

}  // namespace tauplan::model
