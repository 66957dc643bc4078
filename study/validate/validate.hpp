// validate.hpp: `tauplan validate JOB.yaml [--set KEY=V1,V2 ...] [--slow-worker F1,F2]
// [--out DIR] [--calibration DIR] [--json]`, every prediction checked against a measurement.
//
// The configurations are the job's strategies times the Cartesian product of the --set axes
// times the --slow-worker factors, without duplicates (single ignores K, tau, split and the slow
// worker; sync ignores tau, and its split when no worker is slow; local SGD ignores split). For
// each configuration, one at a time (so that measurements do not share the cores), it
// calibrates this machine for K workers (exec/calibrate.hpp: sync rounds of K replicas, step and
// threads combine, thread CPU time; for a configuration measured on the wall clock, async-ps or
// a layout, the step of K threads stepping at once), runs `tauplan measure` in its own process,
// and calibrates again; the faster of the two calibrations, point by point (the mean of the
// wall-clock points), is written as the configuration's platform
// DIR/calibration/NN.xml (worker h0 emulated F times slower when asked;
// model/inputs/calibration.hpp) and as DIR/calibration/K<K>.xml for reuse (--calibration DIR skips
// the calibrations). An asynchronous configuration's network is calibrated from what its
// exchange does instead (exec/exchange_calibration.hpp: messages between two threads, the
// server's apply; the mean of before and after), kept as K<K>-async-b<b>.xml; a layout's from its
// all-reduce over groups of g ranks timed as they run it (exec/compute_calibration.hpp; the mean
// of before and after; its steps and a step of its m micro-batches, a pass's own cost, timed with
// the layout trainer's code), kept as K<K>-g<g>.xml. Then `tauplan
// predict` and `tauplan simulate` run every configuration on its platform, in parallel, with
// `collective: ps` and `servers: 1` (the calibrated reducer; a synchronous row of one worker:
// `collective: ring`, which moves nothing, as the threads communicator does) and the threads
// communicator.
// Convergence: the critical-batch + drift model (model/convergence/sparknet_fit.hpp) is fitted to
// the measured counts; each configuration's rounds to target are predicted by the model fitted
// without it (leave-one-out), and also without every configuration at the same (K b, tau)
// (stricter). The predictions come from every engine that predicts and runs as a verb, at its
// default network model (chosen by capability, study/common/engines.hpp: analytic and simgrid).
// Reported per configuration: measured and each engine's compute, comm and round time; measured and
// predicted rounds; time to target and speedup against single, each with its relative error; the
// medians over the matrix; each row's `measured` and `engines.<engine>` and the summary's
// `<engine>` in the schema `validate --testbed` writes too (validate_support.hpp, EngineSeries; its
// contended entries are null: one machine, no network), beside what only this verb reports (each
// row's `speedup` as measured, each engine's and their errors; `summary_by_strategy`);
// DIR/validation.{json,csv} and a scatter of predicted against measured with y = x
// (DIR/scatter.{png,svg}, gnuplot). Exit codes: 0; 2 bad input (a child's own exit 2 is passed on
// with its message); 3 when
// --max-round-error is given and a median round-time error exceeds it.
// Asynchronous strategies (async-ps) are measured with concurrent timing (worker and server
// threads, wall clock): their round is the time between server updates; their updates to target
// are Na(b) (1 + kappa tau_bar), Na from the critical-batch fit of the synchronous runs and kappa
// fitted to the other asynchronous runs with their measured mean staleness (leave-one-out). A
// time budget (round_budget_s) enters the critical-batch fit with each worker's measured local
// steps (convergence.hpp's unequal steps). Medians are also given per strategy.
// What it leaves out: CUDA and MPI calibration (device: cpu, communicator: threads only),
// concurrent timing of the synchronous strategies (that is `validate --testbed`,
// study/validate/validate_testbed.hpp: MPI ranks across the emulated network), and repeated
// measurements of one configuration (the spread is measured by running validate twice;
// experiments/validation/README.md), and the bottleneck-link baseline of `validate --testbed`
// (this machine has no nominal network: its combine is the calibrated reducer, on which the
// baseline would be the analytic parameter-server cost by construction).
#pragma once

#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace tauplan::study {

struct ValidateRequest {
  std::string job_file;
  std::map<std::string, std::string> overrides;  ///< job flags given to validate
  std::vector<std::string> sets;
  std::vector<double> slow{1.0};
  std::string out = "results/validation";
  std::string calibration_dir;
  int jobs = 0;
  int calibration_steps = 64;
  double max_round_error = -1;
  bool no_plot = false;
};

struct ValidateOutcome {
  nlohmann::json report;           ///< also DIR/validation.json
  std::string text;                ///< the table and the medians
  std::vector<std::string> notes;  ///< for stderr
  std::string exceeded;            ///< non-empty when a median exceeds --max-round-error
};

ValidateOutcome run_validate(const ValidateRequest& request);

/// The job keys every validation refuses, as a flag, a --set axis or in the job file: the
/// measured runs have no slowed or failing host and no second job beside them, so such a key
/// would reach the simulator's prediction alone. Its "expected" text is unmeasured_expected().
const std::vector<std::string>& unmeasured_keys();
std::string unmeasured_expected();

}  // namespace tauplan::study
