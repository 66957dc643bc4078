// simgrid_engine.cpp: the SimGrid engine behind the Engine interface (`tauplan simulate`).
//
// Each strategy's Plan runs as a discrete-event simulation on the job's platform (sim/
// simulator.hpp): flows share links, stragglers and failing hosts act; the network model and
// SimGrid's effective --cfg values go into the context. A simulation that deadlocks or leaves
// actors behind is an error (exit 2), never a silent success. What it leaves out: running
// strategies in parallel (SimGrid: one engine per process; sweeps run one process per point).
#include "sim/simgrid_engine.hpp"

#include <iostream>
#include <vector>

#include "model/base/chrome_trace.hpp"
#include "model/base/error.hpp"
#include "sim/platform_loader.hpp"
#include "sim/sim_job.hpp"
#include "sim/simulator.hpp"

namespace tauplan::sim {
namespace {

class SimgridEngine : public model::Engine {
 public:
  const char* name() const override { return "simgrid"; }
  const char* verb() const override { return "simulate"; }
  const char* description() const override {
    return "discrete-event simulation (SimGrid): contention, stragglers, failures";
  }
  model::EngineCapabilities capabilities() const override {
    model::EngineCapabilities can;
    can.predicts = true;
    can.network_models = network_model_choices();
    can.models_contention = true;
    can.runs_as_verb = true;
    can.injects_failures = true;
    can.runs_simgrid = true;
    return can;
  }
  std::string library_version() const override { return simgrid_version(); }
  std::vector<model::ResultRow> run(const model::JobInputs& inputs,
                                    model::RunContext& context) const override {
    const model::Job& job = inputs.job;
    const SimOptions options = sim_options(job);
    const std::string trace_path =
        job.has("trace") && !job.text("trace").empty() ? job.output_path("trace") : "";
    model::ChromeTrace trace;
    std::vector<model::ResultRow> rows;
    int pid = 0;
    // Every plan's refusals before the first is simulated.
    const std::vector<model::Plan> plans = inputs.plans();
    for (const model::Plan& plan : plans)
      check_latency_jitter(plan, options);
    try {
      for (const model::Plan& plan : plans)
        rows.push_back(
            simulate(plan, inputs.platform, options, trace_path.empty() ? nullptr : &trace, pid++));
    } catch (const SimulationError& e) {
      // A broken simulation is reported like bad input: one line, exit code 2.
      throw InputError(job.file, "simulate", "a simulation that ends with every actor done",
                       e.what());
    }
    if (!trace_path.empty()) {
      trace.write(trace_path);
      std::cerr << "simulate: wrote the Chrome trace " << trace_path << "\n";
    }
    context.network_model = network_model();
    for (const auto& [key, value] : context_extra(options))
      context.extra[key] = value;
    if (!trace_path.empty()) context.extra["trace"] = trace_path;
    return rows;
  }
};

}  // namespace

std::unique_ptr<model::Engine> make_simgrid_engine() {
  return std::make_unique<SimgridEngine>();
}

}  // namespace tauplan::sim
