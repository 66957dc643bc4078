// verb_validate.cpp: `tauplan validate JOB.yaml [--set KEY=V1,V2 ...] [--slow-worker F1,F2]
// [--out DIR] [--calibration DIR] [--json]`, every prediction checked against a measurement
// (study/validate.hpp). Exit codes: 0; 2 bad input; 3 when --max-round-error is given and a
// median round-time error exceeds it.
#include <cstdlib>
#include <iostream>

#include "cli/verb.hpp"
#include "model/error.hpp"
#include "study/validate.hpp"

namespace tauplan::cli {
namespace {

void register_validate(CLI::App& app) {
  auto job = std::make_shared<JobArgs>();
  auto args = std::make_shared<study::ValidateRequest>();
  CLI::App* verb = app.add_subcommand(
      "validate",
      "calibrate this machine, then measure, predict and simulate the job and show the errors");
  add_job_options(*verb, *job);
  verb->add_option("--set", args->sets, "KEY=V1,V2,...: an axis of the matrix (repeatable)");
  verb->add_option("--slow-worker", args->slow,
                   "factors F: also run with worker h0 emulated F times slower (default 1)")
      ->delimiter(',');
  verb->add_option("--out", args->out, "folder for results (default " + args->out + ")");
  verb->add_option("--calibration", args->calibration_dir,
                   "folder of K<K>.xml calibrations to reuse instead of calibrating");
  verb->add_option("--calibration-steps", args->calibration_steps,
                   "timed steps per batch size when calibrating (default 64)");
  verb->add_option("--jobs", args->jobs, "predict/simulate processes at once (default: cores)");
  verb->add_option("--max-round-error", args->max_round_error,
                   "exit 3 when a median |round-time error| exceeds this percentage");
  verb->add_flag("--no-plot", args->no_plot, "do not run gnuplot");
  verb->callback([job, args] {
    args->job_file = job->job_file;
    args->overrides = job->overrides();
    const study::ValidateOutcome outcome = study::run_validate(*args);
    if (job->json)
      std::cout << outcome.report.dump(2) << "\n";
    else
      std::cout << outcome.text;
    std::cout.flush();
    for (const std::string& note : outcome.notes)
      std::cerr << "validate: " << note << "\n";
    if (!outcome.exceeded.empty()) {
      std::cerr << "validate: " << outcome.exceeded << "\n";
      std::exit(kExitIncompleteAnswer);
    }
  });
}

const VerbRegistration kRegistration{38, register_validate};

}  // namespace
}  // namespace tauplan::cli
