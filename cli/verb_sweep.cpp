// verb_sweep.cpp: `tauplan sweep JOB.yaml --set KEY=V1,V2,... [--set ...] [--engine ENGINE]
// [--out DIR] [--jobs N] [--json]`, the grid of every combination of job keys by an engine that
// predicts (study/sweep/sweep.hpp). Exit codes: 0 every point succeeded; 2 bad input (nothing
// computed); 3 the sweep finished but some points failed (listed); 1 internal error.
#include <cstdlib>
#include <iostream>

#include "cli/verb.hpp"
#include "model/base/error.hpp"
#include "study/common/engines.hpp"
#include "study/sweep/sweep.hpp"

namespace tauplan::cli {
namespace {

void register_sweep(CLI::App& app) {
  auto job = std::make_shared<JobArgs>();
  auto request = std::make_shared<study::SweepRequest>();
  CLI::App* verb = app.add_subcommand(
      "sweep", "grid of job keys: every combination, analytic or simulated, resumable, MPI-aware");
  add_job_options(*verb, *job);
  verb->add_option("--set", request->sets,
                   "KEY=V1,V2,... : sweep a job key over these values (repeat for more keys; "
                   "separate values by ';' when a value is itself a list)")
      ->type_name("KEY=V1,V2")
      ->expected(1)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  verb->add_option("--engine", request->engine,
                   "an engine that predicts: " + study::predicting_engines_text() + " (default " +
                       request->engine + ")")
      ->check(CLI::IsMember(study::predicting_engine_names()));
  verb->add_option("--out", request->out,
                   "folder for the results and the finished points (default: JOB.sweep)")
      ->type_name("DIR");
  verb->add_option("--jobs", request->jobs,
                   "child processes at once (default: the number of cores)")
      ->check(number_between(1, 1e6, "a whole number of processes >= 1"));
  verb->add_flag("--fresh", request->fresh, "recompute every point (ignore finished ones)");
  verb->add_flag("--quiet", request->quiet, "no progress bar");
  verb->callback([job, request] {
    request->job_file = job->job_file;
    request->overrides = job->overrides();
    const study::SweepOutcome outcome = study::run_sweep(*request);
    if (!outcome.reporter) return;
    if (job->json)
      std::cout << outcome.document.dump(2) << "\n";
    else
      std::cout << outcome.csv;
    std::cout.flush();
    std::cerr << outcome.summary;
    if (outcome.failed > 0) std::exit(kExitIncompleteAnswer);
  });
}

const VerbRegistration kRegistration{40, register_sweep};

}  // namespace
}  // namespace tauplan::cli
