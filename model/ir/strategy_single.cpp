// strategy_single.cpp: one worker, serial SGD at batch b (SparkNet's T0 = Na(b) C(b)).
//
// Runs on the fastest worker host unless the job names one (`single_host`). A round is one
// step: compute on b samples, then the SGD update.
#include <fmt/format.h>

#include "model/base/error.hpp"
#include "model/ir/strategy.hpp"

namespace tauplan::model {
namespace {

class SingleStrategy : public Strategy {
 public:
  const char* name() const override { return "single"; }
  const char* description() const override { return "one worker, batch b (T0)"; }
  std::vector<std::string> keys() const override { return {"single_host"}; }
  bool is_baseline() const override { return true; }
  StrategyOptions normalise(StrategyOptions options) const override {
    options.workers = 1;
    options.tau = 1;
    options.split = BatchSplit::Even;
    options.collective.clear();
    options.overlap = false;
    options.micro_batches = 1;
    options.hosts.clear();
    options.comm_s = -1;
    return options;
  }
  void recost(Plan& plan, const StrategyOptions& options, const Workload& workload,
              const Platform& platform) const override {
    plan.batch = options.batch;
    plan.worker_samples = {options.batch};
    const double flop_per_sample =
        effective_flop_per_sample(options, workload, platform, plan.worker_hosts);
    for (auto v : plan.op_ids()) {
      Op& op = plan.op(v);
      if (op.kind != OpKind::Compute) continue;
      op.samples = options.batch;
      op.flop = options.batch * flop_per_sample;
    }
  }

 protected:
  Plan generate(const StrategyOptions& options, const Workload& workload,
                const Platform& platform) const override {
    int host = -1;
    if (!options.single_host.empty()) {
      host = platform.find_host(options.single_host);
      if (host < 0)
        throw InputError(options.origin_of("single_host"), "a host of " + platform.source_file,
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
    compute.overhead_s = step_fixed_cost_on(options, platform, host);
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

std::unique_ptr<Strategy> make_single_strategy() {
  return std::make_unique<SingleStrategy>();
}

}  // namespace tauplan::model
