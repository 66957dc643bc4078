// analytic_engine.cpp: the analytic engine behind the Engine interface (`tauplan predict`).
//
// Each strategy's Plan is evaluated in closed form (model/ir/plan_timing.hpp: longest path over
// the Plan with alpha-beta collectives over the platform's routes). What it leaves out: contention
// the formulas do not name, stragglers and failures (the simulator's business).
#include "model/analytic/analytic.hpp"
#include "model/base/notice.hpp"
#include "model/ir/engine.hpp"

namespace tauplan::model {

std::vector<Plan> JobInputs::plans() const {
  std::vector<Plan> out;
  for (const auto& strategy : strategies)
    out.push_back(make_plan(strategy, options, workload, platform, *convergence));
  return out;
}

namespace {

class AnalyticEngine : public Engine {
 public:
  const char* name() const override { return "analytic"; }
  const char* verb() const override { return "predict"; }
  const char* description() const override {
    return "closed-form prediction (longest path over the Plan, alpha-beta collectives)";
  }
  EngineCapabilities capabilities() const override {
    EngineCapabilities can;
    can.predicts = true;
    can.shares_process = true;
    can.runs_as_verb = true;
    return can;
  }
  std::vector<ResultRow> run(const JobInputs& inputs, RunContext& context) const override {
    std::vector<ResultRow> rows;
    for (const Plan& plan : inputs.plans())
      rows.push_back(analyze(plan, inputs.platform));
    context.network_model = "alpha-beta (latency sum, narrowest bandwidth; no contention)";
    // A second job beside this one is the simulator's (sim_job.hpp); the closed forms have no
    // term for another job's traffic, so the rows are this job alone, and the context says so.
    if (inputs.job.has("beside_hosts") && !inputs.job.list("beside_hosts").empty()) {
      notice_once(inputs.job.file +
                      ": beside_hosts: predict leaves the other job out (the closed forms model "
                      "one job alone; simulate runs both)",
                  "beside_hosts");
      context.extra["beside_hosts"] = "left out: this job alone";
    }
    return rows;
  }
};

}  // namespace

std::unique_ptr<Engine> make_analytic_engine() {
  return std::make_unique<AnalyticEngine>();
}

}  // namespace tauplan::model
