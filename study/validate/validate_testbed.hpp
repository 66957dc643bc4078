// validate_testbed.hpp: `tauplan validate JOB.yaml --testbed MATRIX.yaml`, predictions checked
// against training measured across the emulated network (exec/testbed/).
//
// The matrix names groups, each a testbed platform (and scale) with configurations: a strategy
// (sync or local SGD), tau, the batch, the collective algorithm and its servers, and the worker
// hosts. For each group, validate brings the testbed up, calibrates its network with MPI messages
// (`testbed calibrate --mpi`: per route, what a message of the training's sizes pays, the
// rendezvous handshake included) and, for each configuration, one at a time: calibrates this
// machine's compute with K workers stepping at once on their own threads (the share of the 2 cores
// each worker of the run gets while all compute, the fabric idle), runs `tauplan measure` as MPI
// ranks across the testbed (one rank per host, the workers then the servers; timing concurrent:
// wall clock, barrier-aligned rounds; the job's collective really executed over the network), and
// calibrates compute again. The configuration's platform is the calibrated network with its
// workers' compute from the mean of the two compute calibrations (also written from each alone).
// Then the testbed comes down and every configuration is predicted on its platform by the
// analytic engine and simulated by SimGrid with CM02 and with LV08, in parallel.
// Rounds to target: the mean over `convergence_seeds` seeds of the configuration trained on
// threads on this machine (the rounds of sync and local SGD do not depend on the network; the
// first seed reproduces the testbed run's), the measured time to target the testbed run's mean
// round times that mean. Reported per configuration and engine: compute, comm and round errors;
// time to target with rounds predicted by the convergence fit without the configuration
// (leave-one-out) and without every configuration at its (K b, tau) (leave-group-out); medians and
// maxima, over all rows and over the rows the matrix marks contended;
// DIR/testbed-validation.{json,csv}, a scatter per engine (gnuplot). Beside the engines, the
// bottleneck-link baseline (study/validate/validate_baseline.hpp): each stage's busiest link on the
// testbed's nominal links (the platform file's at the testbed's scale, no calibration) plus route
// latencies, plus the analytic engine's compute; the summary says by how much each engine's
// median round |error| beats the baseline's, on all rows and on the rows whose flows share a
// link. Exit 2 on bad input (the
// matrix: file, key, what was expected); 3 when
// --max-round-error is given and simgrid CM02's median round error exceeds it.
// A configuration may be measured several times (`runs`): its times are the mean of the runs',
// each run's reported beside it (two jobs sharing links: which job a run slows more depends on
// their relative start, which no plan sets; simgrid likewise averages start offsets).
// What it leaves out: asynchronous strategies and layouts (their runs are not barrier-aligned
// rounds) and GPUs.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace tauplan::study {

struct TestbedConfig {
  std::string strategy;            ///< sync, local-sgd or async-ps
  int tau = 1;                     ///< local SGD's local steps per round
  double batch = 0;                ///< the job key batch for this row (0: the job's)
  std::string collective;          ///< the algorithm, executed over MPI and modelled; "" async
  int servers = 1;                 ///< parameter servers (collectives that use them)
  std::vector<std::string> hosts;  ///< worker hosts, rank order; K = their number
  std::vector<std::string> server_hosts;  ///< filled from the platform: its first servers
  /// Worker hosts of a copy of this configuration that runs at the same time (two jobs sharing
  /// the links their routes have in common); empty: the configuration alone.
  std::vector<std::string> beside;
  /// This row is the copy of the configuration before it (the matrix's `beside` hosts): measured
  /// in the same run, reported as a row of its own.
  bool is_copy = false;
  bool contended = false;  ///< the matrix says flows share a link in this row
  /// Testbed runs of the configuration (with its copy: of the pair, the launch order alternated);
  /// the row's measured times are their mean, each run's also reported.
  int runs = 1;
  std::string note;  ///< why, or what the row shows
  std::string name;  ///< e.g. "star: sync ps s=1 K=4"
};

struct TestbedGroup {
  std::string name;
  std::string platform;            ///< testbed platform file (resolved against the matrix's folder)
  double scale = 0;                ///< 0: the testbed's default
  std::vector<std::string> hosts;  ///< the testbed's hosts (`testbed up --hosts`); empty: all
  std::vector<TestbedConfig> configs;
};

struct TestbedMatrix {
  std::string file;
  std::vector<TestbedGroup> groups;
};

/// A platform's hosts, in the platform's order: (name, role), role "worker" or "server".
using PlatformHosts = std::vector<std::pair<std::string, std::string>>;
/// How the matrix learns a platform's hosts (SimGrid loads one platform per process, so validate
/// asks a child: `tauplan testbed describe PLATFORM`).
using DescribePlatform = std::function<PlatformHosts(const std::string& platform_file)>;

/// Reads and checks a matrix (InputError naming the file and key: an unknown key, a strategy
/// that is not sync or local-sgd, an unknown collective, servers < 1, no or repeated hosts, a host
/// the platform lacks or that is not a worker, fewer server hosts than servers).
TestbedMatrix load_testbed_matrix(const std::string& file, const DescribePlatform& describe);

struct TestbedValidateRequest {
  std::string job_file;
  std::map<std::string, std::string> overrides;  ///< job flags given to validate
  std::string matrix_file;
  std::string out = "results/testbed-validation";
  std::string prefix = "tpv-";
  int jobs = 0;
  int calibration_rounds = 12;  ///< rounds per batch size in each compute calibration
  /// Seeds each configuration is trained at (threads, off the testbed) for its rounds to target;
  /// 1: the testbed run's own rounds.
  int convergence_seeds = 5;
  double max_round_error = -1;
  bool no_plot = false;
  /// Also probe each group's network (`calibrate --network`, no platform file read) and predict
  /// every row on the probed platform too, side by side with the given one.
  bool probe_network = false;
  /// The --out folder of an earlier run: its measurements and platforms are read instead of
  /// bringing the testbed up, and every row predicted again (after a model change, on the data
  /// measured before it); "" measures.
  std::string replay;
  /// Measure a row, or a group's network calibration, again (up to 3 times in all) when the
  /// hypervisor took more than this share of the CPU time during it (exec/cpu_steal.hpp): a
  /// fraction in (0, 1]; below 0, never. The shares of the attempts set aside are kept in the
  /// JSON and logged; the last attempt is kept whatever its steal.
  double max_steal = -1;
  /// Each group's network calibration also measures the queued window (`testbed calibrate --mpi
  /// --queued-window`), which the calibrated platform then says (prop queued_window_bytes).
  bool queued_window = false;
};

struct TestbedValidateOutcome {
  nlohmann::json report;
  std::string text;
  std::vector<std::string> notes;
  std::string exceeded;
};

TestbedValidateOutcome run_testbed_validate(const TestbedValidateRequest& request);

}  // namespace tauplan::study
