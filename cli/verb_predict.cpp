// verb_predict.cpp: `tauplan predict JOB.yaml [--json]`, the analytic engine.
//
// Builds one Plan per strategy of the job and evaluates each in closed form (longest path over
// the Plan with alpha-beta collectives): T0, T1, T2, the round split into compute and exposed
// communication, rounds to target, total time and speedup against single.
#include "cli/verb.hpp"
#include "model/analytic.hpp"

namespace tauplan::cli {

void register_predict(CLI::App& app) {
  auto args = std::make_shared<JobArgs>();
  CLI::App* verb = app.add_subcommand("predict", "closed-form prediction (analytic engine)");
  add_job_options(*verb, *args);
  verb->callback([args] {
    const Inputs inputs = load_inputs(*args);
    std::vector<model::ResultRow> rows;
    for (const auto& plan : make_plans(inputs))
      rows.push_back(model::analyze(plan, inputs.platform));
    model::RunContext context = make_context(inputs, "predict", "analytic");
    context.network_model = "alpha-beta (latency sum, narrowest bandwidth; no contention)";
    print_results(context, rows, args->json);
  });
}

static const VerbRegistration kRegistration{10, register_predict};

}  // namespace tauplan::cli
