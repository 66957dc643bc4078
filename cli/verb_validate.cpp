// verb_validate.cpp: `tauplan validate JOB.yaml [--set KEY=V1,V2 ...] [--slow-worker F1,F2]
// [--out DIR] [--calibration DIR] [--json]`, every prediction checked against a measurement
// (study/validate/validate.hpp); a job whose workload is a transformer goes to
// study/validate/validate_transformer.hpp (`--profile FILE`, `--calibration DIR` of
// profile-K<K>.json). Exit codes: 0; 2 bad input; 3 when --max-round-error is given and a median
// round-time error exceeds it; 5 (--testbed) when a network calibration came out unusable three
// times in a row (README, exit codes).
#include <cstdlib>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "cli/verb.hpp"
#include "model/base/error.hpp"
#include "study/validate/validate.hpp"
#include "study/validate/validate_testbed.hpp"
#include "study/validate/validate_transformer.hpp"

namespace tauplan::cli {
namespace {

/// Prints a validation's table (or JSON) and notes; exit 3 when a median exceeded its bound.
void finish(const std::string& printed, const std::vector<std::string>& notes,
            const std::string& exceeded) {
  std::cout << printed;
  std::cout.flush();
  for (const std::string& note : notes)
    std::cerr << "validate: " << note << "\n";
  if (!exceeded.empty()) {
    std::cerr << "validate: " << exceeded << "\n";
    std::exit(kExitIncompleteAnswer);
  }
}

/// `validate --testbed MATRIX`: the flags checked against one another, then the matrix run.
void run_testbed(const CLI::App& verb, const study::ValidateRequest& args,
                 study::TestbedValidateRequest& testbed, double max_steal_pct, bool json) {
  if (!args.sets.empty() || args.slow != std::vector<double>{1.0} || !args.calibration_dir.empty())
    throw InputError("command line", "--testbed",
                     "no --set, --slow-worker or --calibration beside it (the matrix file "
                     "lists the configurations)",
                     "both");
  refuse_flags_outside(
      verb, "--testbed",
      {"--probe-network", "--replay", "--calibration-rounds", "--convergence-seeds",
       "--testbed-prefix", "--out", "--jobs", "--max-round-error", "--max-steal", "--queued-window",
       "--no-plot", "--json"});
  if (verb.count("--max-steal") > 0) {
    if (!(max_steal_pct > 0 && max_steal_pct <= 100))
      throw InputError("command line", "--max-steal", "a percentage in (0, 100]",
                       fmt::format("{}", max_steal_pct));
    if (!testbed.replay.empty())
      throw InputError("command line", "--max-steal",
                       "no --max-steal with --replay (nothing is measured)", "both");
    testbed.max_steal = max_steal_pct / 100;
  }
  if (testbed.queued_window && !testbed.replay.empty())
    throw InputError("command line", "--queued-window",
                     "no --queued-window with --replay (nothing is measured; the platforms "
                     "replayed say their own window)",
                     "both");
  testbed.job_file = args.job_file;
  testbed.overrides = args.overrides;
  if (args.out != study::ValidateRequest{}.out) testbed.out = args.out;
  testbed.jobs = args.jobs;
  testbed.max_round_error = args.max_round_error;
  testbed.no_plot = args.no_plot;
  const study::TestbedValidateOutcome outcome = study::run_testbed_validate(testbed);
  finish(json ? outcome.report.dump(2) + "\n" : outcome.text, outcome.notes, outcome.exceeded);
}

void register_validate(CLI::App& app) {
  auto job = std::make_shared<JobArgs>();
  auto args = std::make_shared<study::ValidateRequest>();
  auto testbed = std::make_shared<study::TestbedValidateRequest>();
  auto profile = std::make_shared<std::string>();
  CLI::App* verb = app.add_subcommand(
      "validate",
      "calibrate this machine, then measure, predict and simulate the job and show the errors");
  add_job_options(*verb, *job);
  verb->add_option("--set", args->sets, "KEY=V1,V2,...: an axis of the matrix (repeatable)");
  verb->add_option("--slow-worker", args->slow,
                   "factors F: also run with worker h0 emulated F times slower (default 1)")
      ->delimiter(',');
  verb->add_option("--out", args->out, "folder for results (default " + args->out + ")");
  verb->add_option(
      "--calibration", args->calibration_dir,
      "folder of K<K>.xml calibrations (K<K>-async-b<b>.xml for async-ps) to reuse instead of "
      "calibrating");
  verb->add_option("--calibration-steps", args->calibration_steps,
                   "timed steps per batch size when calibrating (default 64)");
  verb->add_option("--jobs", args->jobs, "predict/simulate processes at once (default: cores)");
  verb->add_option("--max-round-error", args->max_round_error,
                   "exit 3 when a median |round-time error| exceeds this percentage");
  verb->add_flag("--no-plot", args->no_plot, "do not run gnuplot");
  verb->add_option("--testbed", testbed->matrix_file,
                   "MATRIX.yaml: measure across the emulated testbed instead (groups of a "
                   "platform and configurations; experiments/testbed/)");
  verb->add_flag("--probe-network", testbed->probe_network,
                 "with --testbed: also probe each group's network (calibrate --network, no "
                 "platform file read) and predict every row on the probed platform, side by side");
  verb->add_option("--replay", testbed->replay,
                   "with --testbed: DIR, the --out of an earlier run: predict its measured rows "
                   "again (its platforms, no testbed) into --out");
  auto max_steal_pct = std::make_shared<double>(-1);
  verb->add_option("--max-steal", *max_steal_pct,
                   "with --testbed: PERCENT, measure a row or a network calibration again (3 "
                   "times at most) when the hypervisor took more of the CPU time during it");
  verb->add_flag("--queued-window", testbed->queued_window,
                 "with --testbed: each network calibration also measures the bytes of a host's "
                 "outgoing message that stand ahead of a control message it sends");
  verb->add_option("--calibration-rounds", testbed->calibration_rounds,
                   "with --testbed: rounds per batch size of each compute calibration (12)");
  verb->add_option("--convergence-seeds", testbed->convergence_seeds,
                   "with --testbed: seeds each configuration is trained at (threads, off the "
                   "testbed) for its rounds to target (5; 1: the testbed run's own)");
  verb->add_option(
      "--testbed-prefix", testbed->prefix,
      "name prefix of the testbed validate brings up (default " + testbed->prefix + ")");
  verb->add_option("--profile", *profile,
                   "transformer jobs: one compute profile FILE for every worker count instead "
                   "of calibrating");
  verb->callback([verb, job, args, testbed, profile, max_steal_pct] {
    args->job_file = job->job_file;
    args->overrides = job->overrides();
    // Every mode (the testbed's matrix names its own second jobs).
    for (const std::string& key : study::unmeasured_keys())
      if (args->overrides.count(key) > 0)
        throw InputError("command line", "--" + key, study::unmeasured_expected(),
                         "'" + args->overrides.at(key) + "'");
    if (testbed->matrix_file.empty() &&
        study::is_transformer_job(args->job_file, args->overrides)) {
      if (!args->sets.empty() || args->slow != std::vector<double>{1.0})
        throw InputError("command line", args->sets.empty() ? "--slow-worker" : "--set",
                         "nothing with a transformer job (its configurations come from its "
                         "strategies)",
                         "a value");
      refuse_flags_outside(*verb, "a transformer job",
                           {"--out", "--calibration", "--profile", "--max-round-error", "--json"});
      study::TransformerValidateRequest t;
      t.job_file = args->job_file;
      t.overrides = args->overrides;
      if (args->out != study::ValidateRequest{}.out) t.out = args->out;
      t.calibration_dir = args->calibration_dir;
      t.profile = *profile;
      t.max_round_error = args->max_round_error;
      const study::TransformerValidateOutcome outcome = study::run_transformer_validate(t);
      finish(job->json ? outcome.report.dump(2) + "\n" : outcome.text, outcome.notes,
             outcome.exceeded);
      return;
    }
    if (!profile->empty())
      throw InputError("command line", "--profile", "only with a transformer job", *profile);
    if (!testbed->matrix_file.empty()) {
      run_testbed(*verb, *args, *testbed, *max_steal_pct, job->json);
      return;
    }
    refuse_flags_outside(*verb, "an MLP job on this machine (no --testbed)",
                         {"--set", "--slow-worker", "--out", "--calibration", "--calibration-steps",
                          "--jobs", "--max-round-error", "--no-plot", "--json"});
    const study::ValidateOutcome outcome = study::run_validate(*args);
    finish(job->json ? outcome.report.dump(2) + "\n" : outcome.text, outcome.notes,
           outcome.exceeded);
  });
}

const VerbRegistration kRegistration{38, register_validate};

}  // namespace
}  // namespace tauplan::cli
