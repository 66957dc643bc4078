// strategy_single.cpp: one worker, serial SGD at batch b (SparkNet's T0 = Na(b) C(b)).
//
// Runs on the fastest worker host unless the job names one (`single_host`). A round is one
// step: compute on b samples, then the SGD update.
#include <fmt/format.h>

#include "model/error.hpp"
#include "model/strategy.hpp"

namespace tauplan::model {
namespace {

class SingleStrategy : public StrategyGenerator {
 public:
  const char* name() const override { return "single"; }
  const char* description() const override { return "one worker, batch b (T0)"; }
  Plan generate(const StrategyOptions& options, const Workload& workload,
                const Platform& platform) const override {
    int host = -1;
    if (!options.single_host.empty()) {
      host = platform.find_host(options.single_host);
      if (host < 0)
        throw InputError(options.file, "single_host", "a host of " + platform.source_file,
                         "'" + options.single_host + "'");
    } else {
      for (int h : platform.worker_hosts())
        if (host < 0 || platform.hosts[static_cast<size_t>(h)].speed_flops >
                            platform.hosts[static_cast<size_t>(host)].speed_flops)
          host = h;
      if (host < 0) throw InputError(platform.source_file, "hosts", "at least one worker host");
    }
    check_fits_in_memory(options, workload, platform, host, options.batch);
    Plan plan;
    plan.strategy = name();
    plan.batch = options.batch;
    plan.worker_hosts = {host};
    plan.worker_samples = {options.batch};
    Op compute;
    compute.kind = OpKind::Compute;
    compute.label = "w0 step";
    compute.worker = 0;
    compute.samples = options.batch;
    compute.flop = options.batch * effective_flop_per_sample(options, workload, platform, {host});
    compute.overhead_s = step_overhead_on(options, platform, host);
    Op update;
    update.kind = OpKind::Update;
    update.label = "w0 update";
    update.worker = 0;
    update.flop = workload.parameters * workload.update_flop_per_parameter;
    plan.depend(plan.add(compute), plan.add(update));
    return plan;
  }
};

}  // namespace

std::unique_ptr<StrategyGenerator> make_single_strategy() {
  return std::make_unique<SingleStrategy>();
}

}  // namespace tauplan::model
