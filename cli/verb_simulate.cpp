// verb_simulate.cpp: `tauplan simulate JOB.yaml [--json] [--trace FILE]`, the SimGrid engine.
//
// Builds the same Plans as `predict` and runs each as a discrete-event simulation on the job's
// platform (sim/simulator.hpp): flows share links, stragglers and failing hosts act, and the
// network model (--network-model CM02|LV08) is recorded in the context with SimGrid's effective
// --cfg values. Prints the same table / JSON rows as predict, with engine "simgrid". A simulation
// that deadlocks or leaves actors behind is an error (exit 2), never a silent success.
// What it leaves out: running strategies in parallel (SimGrid: one engine per process; sweeps
// run one process per point).
#include <algorithm>
#include <memory>

#include "cli/verb.hpp"
#include "model/error.hpp"
#include "sim/chrome_trace.hpp"
#include "sim/platform_loader.hpp"
#include "sim/sim_job.hpp"
#include "sim/simulator.hpp"

namespace tauplan::cli {

void register_simulate(CLI::App& app) {
  auto args = std::make_shared<JobArgs>();
  auto trace_flag = std::make_shared<std::string>();
  CLI::App* verb = app.add_subcommand(
      "simulate", "discrete-event simulation (SimGrid): contention, stragglers, failures");
  add_job_options(*verb, *args);
  // `trace` is a sim job key, hence a flag of its own when the CLI lists sim's keys; add
  // --trace here only if it does not.
  const auto keys = all_job_keys();
  const bool trace_is_key = std::any_of(keys.begin(), keys.end(),
                                        [](const model::KeySpec& k) { return k.name == "trace"; });
  if (!trace_is_key)
    verb->add_option("--trace", *trace_flag, "write a Chrome trace (open in Perfetto)")
        ->type_name("FILE");

  verb->callback([args, trace_flag] {
    const Inputs inputs = load_inputs(*args);
    const model::Job& job = inputs.job;
    const sim::SimOptions options = sim::sim_options(job);
    std::string trace_path = *trace_flag;
    if (trace_path.empty() && job.has("trace")) trace_path = job.path("trace");

    sim::ChromeTrace trace;
    std::vector<model::ResultRow> rows;
    int pid = 0;
    try {
      for (const model::Plan& plan : make_plans(inputs))
        rows.push_back(sim::simulate(plan, inputs.platform, options,
                                     trace_path.empty() ? nullptr : &trace, pid++));
    } catch (const sim::SimulationError& e) {
      // A broken simulation is reported like bad input: one line, exit code 2.
      throw InputError(job.file, "simulate", "a simulation that ends with every actor done",
                       e.what());
    }
    if (!trace_path.empty()) trace.write(trace_path);

    model::RunContext context = make_context(inputs, "simulate", "simgrid");
    context.network_model = sim::network_model();
    for (const auto& [key, value] : sim::context_extra(options))
      context.extra[key] = value;
    if (!trace_path.empty()) context.extra["trace"] = trace_path;
    print_results(context, rows, args->json);
  });
}

static const VerbRegistration kRegistration{20, register_simulate};

}  // namespace tauplan::cli
