// testbed_control.hpp: `tauplan testbed up|down|status|run|calibrate`, an emulated cluster.
//
//   up PLATFORM.xml [--hosts h1,h2,..] [--scale F]   one network namespace per host, the
//                                  platform's routes emulated between them (exec/testbed/)
//   down                           removes everything of the testbed (also after a kill)
//   status [--json]                what is up, its links and routes, the fabric's counters
//   run [--np N] -- COMMAND ...    COMMAND as N MPI ranks, rank r in the r-th host's namespace
//   calibrate --out FILE.xml       measures the testbed, writes the fitted platform
// and three internal subcommands the others start: `fabric` (the link emulator process),
// `agent` (mpirun's remote shell) and `rank` (sets TAUPLAN_TESTBED_HOST, execs the command).
// Every subcommand needs the rights to create and enter network namespaces (root); without
// them it says so on one line and exits 2. The platform is loaded through sim/'s loader; all
// else is exec/testbed/. What it leaves out: more than one testbed per prefix.
#pragma once

#include <map>
#include <ostream>
#include <string>
#include <vector>

#include "exec/testbed/fabric.hpp"
#include "exec/testbed/lifecycle.hpp"
#include "exec/testbed/netcal.hpp"
#include "exec/testbed/spec.hpp"

namespace tauplan::study {

namespace tb = tauplan::testbed;

struct TestbedUpRequest {
  std::string platform;
  std::vector<std::string> hosts;
  double scale = 0;
  std::string prefix = "tp-";
  int mtu = tb::Options{}.mtu;
  double queue_s = tb::Options{}.queue_s;
  double ttl_s = 4 * 3600.0;
  double max_packet_rate = tb::Limits{}.max_packet_rate;
  std::string congestion_control;
  int realtime_priority = 10;
  double early_s = tb::FabricOptions{}.early_s;
  bool json = false;
};

struct TestbedCalibrateRequest {
  std::string prefix = "tp-";
  std::string out;
  bool json = false;
  tb::NetworkCalibrationRequest request;
  /// Route round trips and bandwidths from MPI messages (exec/message_probe.hpp) rather than
  /// TCP: what a training run's messages pay, the rendezvous handshake included. Sizes above
  /// OpenMPI's TCP eager limit (64 KiB) up to 2 MiB, the range of the gradients and their
  /// chunks that tauplan's collectives send, and 8 MiB: one more point on the messages' lower
  /// envelope, whose slope is its edge spanning the mean size (2.08 MB with these sizes: the
  /// edge from 1 to 2 MiB while both lie on it, a longer one when a stall lifts either). Sizes
  /// that would take over 1 s on the slowest route's shaped rate are left out (tb::message_sizes).
  bool mpi = false;
  std::vector<double> mpi_sizes{131072, 262144, 524288, 1048576, 2097152, 8388608};
  int mpi_repeats = 3;
  /// How the ranks not in the pair being timed wait: "spin" (MPI_Barrier, which busy-polls) or
  /// "asleep" (MpiPeers::barrier_asleep). On a machine with fewer cores than ranks, spinning
  /// waiters compete with the two ranks timed.
  std::string mpi_waiters = "spin";
  /// Largest message OpenMPI's ob1 sends without a rendezvous over TCP: btl_tcp_eager_limit,
  /// 65536 bytes including the header (`ompi_info --param btl tcp --level 9`, OpenMPI 4.1.4 of
  /// Debian bookworm, default value).
  double eager_limit_bytes = 65536;
  /// With --mpi: also measure how many bytes of a host's outgoing message stand ahead of a
  /// control message it sends (exec/window_probe.hpp), written as queued_window_bytes.
  bool queued_window = false;
};

/// InputError (exit 2) unless this process may create and enter network namespaces and launch
/// MPI ranks in them: key "privileges", "ip" or "mpirun" (exec/testbed/system.hpp).
void require_testbed_rights();
/// Builds the testbed of a platform and starts its fabric; prints its state.
void testbed_up(const TestbedUpRequest& request, std::ostream& out);
/// Removes the testbed of `prefix` (and any leftover of one); InputError when none is up.
void testbed_down(const std::string& prefix, bool json, std::ostream& out);
/// What is up: hosts, links, routes, the fabric's counters.
void testbed_status(const std::string& prefix, bool json, std::ostream& out);
/// `testbed describe PLATFORM [--spec [--hosts H] [--scale F] [--prefix P]]` (internal).
struct TestbedDescribeRequest {
  std::string platform;
  bool spec = false;  ///< also the testbed `testbed up` would make of it (exec/testbed/spec.hpp)
  std::vector<std::string> hosts;
  double scale = 0;
  std::string prefix = "tp-";
};
/// A platform's hosts in the platform's order, {"hosts": [{name, role, node}]}, and with `spec`
/// the testbed's Spec as JSON ("spec"), nothing brought up.
void testbed_describe(const TestbedDescribeRequest& request, std::ostream& out);
/// Measures the live testbed and writes its fitted platform.
void testbed_calibrate(const TestbedCalibrateRequest& request, std::ostream& out);
/// Measures the live testbed (`calibrate` without writing a file): for validate.
tb::NetworkCalibration measure_testbed(const TestbedCalibrateRequest& request,
                                       const tb::State& state);

/// `testbed compute-probe` (internal, one process per MPI rank under `testbed run`).
struct ComputeProbeRequest {
  std::string job_file;
  std::map<std::string, std::string> overrides;
  int workers = 1;  ///< ranks 0 .. workers - 1 compute; the others are the run's servers
  std::vector<int> batches;
  int steps_per_round = 1;
  int rounds = 8;
  double wait_s = 0;
  /// "combine" or "apply": the server ranks then time their processing (exec/server_probe.hpp)
  /// of a sync ps call (the mean of the pushes) or an async update (one apply); "" (or no server
  /// rank): no server probe.
  std::string server_processing;
  std::string out;
};
/// The job's MLP stepping in barrier-aligned rounds on the workers (exec::measure_rank_rounds),
/// then, when asked, the servers' processing; rank 0 writes {"steps": [{"batch", "seconds"}],
/// "step_rounds": [{"batch", "seconds_per_step_by_round_and_worker"}] (every measured round the
/// medians come from), "servers": [{"rank", "seconds_per_message", "seconds_per_byte",
/// "points"}]} to `out`.
void testbed_compute_probe(const ComputeProbeRequest& request);

/// `testbed message-probe` (internal, one process per MPI rank under `testbed run`): the
/// message probe over MPI on the pairs "SRC:DST,..." (ranks), the other ranks waiting as
/// `waiters` says ("spin" or "asleep"); rank 0 writes the JSON to `out`.
void testbed_message_probe(const std::string& pairs, const std::vector<double>& sizes, int repeats,
                           const std::string& waiters, const std::string& out);
/// `testbed window-probe` (internal, one process per MPI rank under `testbed run`): the
/// queued-window probe (exec/window_probe.hpp) on "X:Y:Z:SECONDS,..." triples; rank 0 writes
/// every triple's round trips as JSON to `out`.
void testbed_window_probe(const std::string& triples, double message_bytes, int messages,
                          const std::string& waiters, const std::string& out);

/// `testbed fabric` (internal, started by `up`): the link emulator of the testbed of `prefix`,
/// until its time to live ends (then it removes the testbed); exits the process.
[[noreturn]] void testbed_fabric(const std::string& prefix, tb::FabricOptions options,
                                 int ready_fd);
/// `testbed agent` (internal, mpirun's remote shell): runs `host_and_command` (a namespace, then
/// its command) inside that namespace of the testbed of `prefix`; replaces the process.
void testbed_agent(const std::string& prefix, std::vector<std::string> host_and_command);
/// `testbed run`: COMMAND as `np` MPI ranks (on the named hosts, "h0,h1", or the first np) of the
/// testbed of `prefix`, through mpirun in its control namespace; replaces the process.
void testbed_run(const std::string& prefix, int np, const std::string& host_list,
                 const std::vector<std::string>& command);
/// `testbed rank` (internal): sets TAUPLAN_TESTBED_HOST and replaces the process by `command`.
void testbed_rank(const std::string& prefix, const std::vector<std::string>& command);

}  // namespace tauplan::study
