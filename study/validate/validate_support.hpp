// validate_support.hpp: what `tauplan validate` shares between its two settings, this machine
// (validate.cpp) and the emulated testbed (validate_testbed.cpp): reading an engine's result row,
// running the child processes, each engine's errors against the measurements and their summary
// (EngineSeries: one schema for a row's `engines.<label>` and the summary's `<label>` in both
// reports), formatting errors, and the convergence fit that predicts each configuration's rounds
// to target without it (leave-one-out) or without every configuration at its (K b, tau)
// (leave-group-out). What it leaves out: measuring and calibrating.
#pragma once

#include <limits>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/base/error.hpp"
#include "study/common/child_process.hpp"

namespace tauplan::study::validation {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

/// What one engine said about one configuration (the first row of its JSON).
struct EngineRow {
  double compute_s = kNaN, comm_s = kNaN, round_s = kNaN, rounds = kNaN, total_s = kNaN;
  bool reached = false;
  double staleness = kNaN;          ///< asynchronous: mean staleness of the updates
  std::vector<double> local_steps;  ///< time budget: mean local steps per round of each worker
  /// Concurrent MPI measurements: how late the latest rank started a round past the instant the
  /// ranks agreed on (exec/trainer.hpp), the median and the largest over rounds; NaN when the
  /// result row lacks them (engines, threads runs, older data).
  double round_start_lateness_median_s = kNaN, round_start_lateness_max_s = kNaN;
};

/// The first result row of an engine's JSON output; measured rows (with round_median_s) give
/// their medians over rounds. Throws std::runtime_error naming `what` when unreadable.
EngineRow parse_row(const std::string& out, const std::string& what);

/// Repeated measurements of one configuration as one row: compute, comm and round the means of
/// the runs' (NaN if any run lacks one); rounds and reached the first run's (reached only when
/// every run reached the target); total_s that first run's rounds x the mean over runs of
/// total_s / rounds (each run's mean round to the target); the round-start lateness the mean of
/// the runs' medians and the largest of their maxima (NaN if any run lacks one). One run is
/// returned as it is; none throws std::invalid_argument.
EngineRow mean_over_runs(const std::vector<EngineRow>& runs);

/// A measured row's round-start lateness as JSON: round_start_lateness_median_s and
/// round_start_lateness_max_s, each null when the row lacks it (never 0).
nlohmann::json round_start_json(const EngineRow& measured);

/// The lateness over rows: max_s (the largest of the rows' maxima) and median_over_rows_s (the
/// median of the rows' maxima), over the rows that have one; each null when none has.
nlohmann::json round_start_summary_json(const std::vector<EngineRow>& measured);

/// The summary's line of round_start_summary_json's JSON: "rounds started within X ms of their
/// agreed instant (median over rows Y ms)", or a line saying no row reported it.
std::string round_start_text(const nlohmann::json& summary);

/// The hypervisor's share of the CPU time (steal, exec/cpu_steal.hpp) during each row's
/// measurement and its compute calibrations, and during each network calibration: median_rows
/// and max_rows over the rows, rows_above_warning (above exec::kStealWarningFraction), max_
/// network_calibrations; fractions below 0 (unknown) are left out, a null where none is known.
nlohmann::json steal_summary_json(const std::vector<double>& rows,
                                  const std::vector<double>& network_calibrations);

/// The summary's line of steal_summary_json's JSON: "the hypervisor took X of the CPU time
/// (median over rows; largest Y, N rows above 5%; network calibrations up to Z)", or, when no
/// row's is known (a replay of runs recorded before it was), a line saying so and Z.
std::string steal_text(const nlohmann::json& summary);

/// A child's one-line error ("tauplan: error: FILE: KEY: ...") as this process's InputError.
InputError passed_on_error(const std::string& line);

/// Runs the tasks (at most `jobs` at once) and returns their stdout; a child's exit 2 becomes
/// this process's InputError, exit 3 (a target missed) is an answer, any other failure a
/// std::runtime_error. `what` names the progress line (empty: none).
std::vector<std::string> run_children(const std::vector<child::Task>& tasks, int jobs,
                                      const std::string& what);

std::string pct_text(double e);  ///< "+1.2%", or "n/a"
/// A summary's |error| (a JSON number or null) as "1.2%", or "n/a".
std::string pct_or_na(const nlohmann::json& v);
std::string ms(double s);  ///< milliseconds with 3 decimals, or "n/a"
nlohmann::json number_or_null(double v);
/// The median of |errors| over the finite ones, or null.
nlohmann::json median_abs_or_null(const std::vector<double>& errors);
/// The largest |error| over the finite ones, or null.
nlohmann::json max_abs_or_null(const std::vector<double>& errors);

/// One engine's relative errors over a validation's rows, against the measurements, a row each
/// (NaN where a row has none); round_contended holds the contended rows' only.
struct EngineSeries {
  std::string label;  ///< the engine's name in the reports ("analytic", "simgrid_cm02", ...)
  std::vector<double> round, compute, comm, time_loo, time_group, round_contended;

  /// Adds a row: `predicted`'s compute, comm and round errors against `measured` (comm NaN
  /// unless `has_comm`: one worker has none), and its time to target with the rounds predicted
  /// leave-one-out and leave-group-out against `time_measured` (NaN: the target was not
  /// reached). Returns the row's entry for this engine: compute_s, comm_s, round_s,
  /// time_to_target_loo_s, time_to_target_group_out_s and error_<each>, null where not finite.
  nlohmann::json add(const EngineRow& predicted, const EngineRow& measured, double rounds_loo,
                     double rounds_group, double time_measured, bool contended,
                     bool has_comm = true);
  /// median_abs_error_<x> and max_abs_error_<x> over the rows, x = round, round_contended,
  /// compute, comm, time_to_target_loo, time_to_target_group_out; null where no row has one.
  nlohmann::json summary_json() const;
};

/// The rounds simgrid simulates of a validation row (its `sim_rounds`): 3 synchronous rounds (the
/// rest repeat them), or 400 updates of an asynchronous run (its throughput is taken after a
/// warm-up: a few updates would leave it to the first cycles' phase).
std::string simulated_rounds(const std::string& strategy);

/// The collective a row on this machine is run and predicted with (its `collective`): the
/// calibrated threads combine is a parameter server with one reducer (T(K, S) = alpha + K S /
/// beta), except for one worker of a synchronous strategy, whose threads communicator combines
/// nothing (the mean of one buffer is itself: exec/thread_communicator.cpp); a ring of one
/// worker moves nothing either, so that row gets "ring". An asynchronous strategy keeps the
/// server at K = 1: its server thread is real.
std::string machine_collective(const std::string& strategy, int workers);

/// One configuration as the convergence fit sees it; the rounds_* fields are its output.
struct ConvergenceRow {
  bool asynchronous = false;
  bool counts_rounds = false;  ///< local SGD: K workers x tau local steps per round
  double batch = 0;
  int workers = 1;
  int tau = 1;
  bool reached = false;
  double rounds = kNaN;               ///< measured rounds (updates) to target
  std::vector<double> local_steps;    ///< time budget: measured mean local steps per worker
  double staleness = kNaN;            ///< asynchronous: measured mean staleness
  double predicted_staleness = kNaN;  ///< asynchronous: the analytic engine's
  double rounds_loo = kNaN;           ///< predicted without this configuration
  double rounds_group = kNaN;         ///< predicted without any configuration at its (K b, tau)
  double rounds_fit = kNaN;           ///< fitted to every configuration
};

/// Fits the critical-batch + drift model (model/convergence/sparknet_fit.hpp) to the rows that
/// reached the target and fills rounds_loo, rounds_group and rounds_fit; asynchronous rows get
/// Na(b) (1 + kappa tau_bar) with kappa fitted to the other asynchronous rows. Returns the fit's
/// numbers, or null with fewer than 3 rows to fit.
nlohmann::json fit_convergence(std::vector<ConvergenceRow>& rows);

}  // namespace tauplan::study::validation
