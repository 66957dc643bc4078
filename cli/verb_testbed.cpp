// verb_testbed.cpp: `tauplan testbed up|down|status|run|calibrate`, an emulated cluster.
//
//   up PLATFORM.xml [--hosts h1,h2,..] [--scale F]   one network namespace per host, the
//                                  platform's routes emulated between them (exec/testbed/)
//   down                           removes everything of the testbed (also after a kill)
//   status [--json]                what is up, its links and routes, the fabric's counters
//   run [--np N | --hosts H,..] -- COMMAND   COMMAND as MPI ranks, rank r in the r-th host's
//                                  namespace (or in the namespace of the r-th of --hosts)
//   calibrate --out FILE.xml       measures the testbed, writes the fitted platform
// and three internal subcommands the others start: `fabric` (the link emulator process),
// `agent` (mpirun's remote shell) and `rank` (sets TAUPLAN_TESTBED_HOST, execs the command).
// Every subcommand needs the rights to create and enter network namespaces (root); without
// them it says so on one line and exits 2. The work is study/testbed_control's (the platform
// through sim/'s loader, the rest exec/testbed/). What it leaves out: more than one testbed per
// prefix.

#include <algorithm>
#include <cmath>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "cli/testbed_internals.hpp"
#include "cli/verb.hpp"
#include "model/base/error.hpp"
#include "study/testbed/testbed_control.hpp"

namespace tauplan::cli {
namespace {

/// `testbed up`: build the testbed of a platform and start its fabric.
void add_up(CLI::App& verb) {
  auto up_args = std::make_shared<study::TestbedUpRequest>();
  CLI::App* up = verb.add_subcommand("up", "build the testbed of a platform and start its fabric");
  up->add_option("platform", up_args->platform, "SimGrid platform XML")->required();
  up->add_option("--hosts", up_args->hosts, "hosts in rank order (default: workers, then servers)")
      ->delimiter(',');
  up->add_option("--scale", up_args->scale,
                 "divide bandwidths and multiply latencies by F (default: the smallest F that "
                 "brings the fastest link under --max-rate)");
  up->add_option("--prefix", up_args->prefix, "of every name the testbed makes (tp-)");
  up->add_option(
      "--mtu", up_args->mtu,
      "of the emulated interfaces (default: by the slowest route's bandwidth-delay product)");
  up->add_option("--queue", up_args->queue_s,
                 "seconds of its rate each link's queue holds (0.05; at least one "
                 "bandwidth-delay product and 16 packets)");
  up->add_option("--ttl", up_args->ttl_s, "seconds before the testbed removes itself (14400)");
  up->add_option("--max-packet-rate", up_args->max_packet_rate,
                 "full packets/s the fabric forwards accurately (8333, i.e. 12.5e6 B/s at MTU "
                 "1500: half of what was accurate here, see exec/testbed/README.md)");
  up->add_option("--congestion-control", up_args->congestion_control,
                 "TCP congestion control of the hosts (default: the kernel's for new namespaces)");
  up->add_option("--realtime-priority", up_args->realtime_priority,
                 "SCHED_FIFO priority of the fabric, 0 for none (10)");
  up->add_option("--early", up_args->early_s,
                 "seconds early the fabric arms its timer, for its wake-up latency (2.5e-5)");
  up->add_flag("--json", up_args->json, "print the state as JSON");
  up->callback([up_args] { study::testbed_up(*up_args, std::cout); });
}

/// `testbed down` and `testbed status`: remove the testbed, or say what is up.
void add_down_and_status(CLI::App& verb) {
  auto down_prefix = std::make_shared<std::string>("tp-");
  auto down_json = std::make_shared<bool>(false);
  CLI::App* down = verb.add_subcommand("down", "remove the testbed (and any leftover of one)");
  down->add_option("--prefix", *down_prefix, "of the testbed (tp-)");
  down->add_flag("--json", *down_json, "print what was removed as JSON");
  down->callback(
      [down_prefix, down_json] { study::testbed_down(*down_prefix, *down_json, std::cout); });

  auto status_prefix = std::make_shared<std::string>("tp-");
  auto status_json = std::make_shared<bool>(false);
  CLI::App* status = verb.add_subcommand("status", "what is up: hosts, links, routes, fabric");
  status->add_option("--prefix", *status_prefix, "of the testbed (tp-)");
  status->add_flag("--json", *status_json, "everything as JSON");
  status->callback([status_prefix, status_json] {
    study::testbed_status(*status_prefix, *status_json, std::cout);
  });
}

/// `testbed run`: COMMAND as MPI ranks, one per testbed host.
void add_run(CLI::App& verb) {
  auto run_prefix = std::make_shared<std::string>("tp-");
  auto run_np = std::make_shared<int>(0);
  auto run_hosts = std::make_shared<std::string>();
  auto run_command = std::make_shared<std::vector<std::string>>();
  CLI::App* run = verb.add_subcommand("run", "run COMMAND as MPI ranks, one per testbed host");
  run->add_option("--prefix", *run_prefix, "of the testbed (tp-)");
  run->add_option("--np", *run_np, "ranks (default: one per testbed host)");
  run->add_option("--hosts", *run_hosts,
                  "H0,H1,...: the hosts of ranks 0, 1, ... (default: in rank order)");
  run->add_option("command", *run_command, "the command and its arguments, after --")->required();
  run->callback([run_prefix, run_np, run_hosts, run_command] {
    study::testbed_run(*run_prefix, *run_np, *run_hosts, *run_command);
  });
}

/// Refuses `testbed calibrate` arguments out of range, one line naming the option.
void check_calibrate_request(const study::TestbedCalibrateRequest& cal) {
  const auto& r = cal.request;
  if (r.pings < 1 || r.sizes < 2 || r.repeats < 1 || r.ping_bytes < 1)
    throw InputError("command line", "testbed calibrate",
                     "--pings >= 1, --sizes >= 2, --repeats >= 1",
                     fmt::format("{} {} {}", r.pings, r.sizes, r.repeats));
  for (int n : r.flow_counts)
    if (n < 1)
      throw InputError("command line", "--flows", "counts of flows >= 1", std::to_string(n));
  if (!(r.transfer_s > 0) || !(r.window_s >= 0.2) || !(r.warmup_s >= 0))
    throw InputError("command line", "testbed calibrate",
                     "--transfer-time > 0, --window >= 0.2 s and --warmup >= 0",
                     fmt::format("{} {} {}", r.transfer_s, r.window_s, r.warmup_s));
  if (cal.mpi_waiters != "spin" && cal.mpi_waiters != "asleep")
    throw InputError("command line", "--mpi-waiters", "spin or asleep", cal.mpi_waiters);
  std::vector<double> distinct = cal.mpi_sizes;
  std::sort(distinct.begin(), distinct.end());
  distinct.erase(std::unique(distinct.begin(), distinct.end()), distinct.end());
  if (distinct.size() < 2 || cal.mpi_repeats < 1)
    throw InputError("command line", "--mpi-sizes",
                     "at least 2 distinct sizes and --mpi-repeats >= 1",
                     std::to_string(distinct.size()) + " distinct sizes");
  for (double v : cal.mpi_sizes)
    if (!(v > cal.eager_limit_bytes && v <= 1e9) || std::fmod(v, 4.0) != 0)
      throw InputError("command line", "--mpi-sizes",
                       fmt::format("message sizes in bytes above the eager limit ({:.0f}: "
                                   "each pays the rendezvous), multiples of 4 up to 1e9",
                                   cal.eager_limit_bytes),
                       fmt::format("{}", v));
}

/// `testbed calibrate`: measure the testbed and write its fitted platform.
void add_calibrate(CLI::App& verb) {
  auto cal = std::make_shared<study::TestbedCalibrateRequest>();
  CLI::App* calibrate =
      verb.add_subcommand("calibrate", "measure the testbed and write its fitted platform");
  calibrate->add_option("--prefix", cal->prefix, "of the testbed (tp-)");
  calibrate->add_option("--out", cal->out, "the calibrated platform XML to write")->required();
  calibrate->add_flag("--json", cal->json, "print every measurement and fit as JSON");
  calibrate->add_flag("--all-pairs", cal->request.all_pairs,
                      "measure every ordered pair (default: a cover of every link)");
  calibrate->add_option("--pings", cal->request.pings, "round trips per route (30)");
  calibrate->add_option("--sizes", cal->request.sizes, "transfer sizes per route (6)");
  calibrate->add_option("--repeats", cal->request.repeats, "transfers of each size (3)");
  calibrate->add_option("--transfer-time", cal->request.transfer_s,
                        "seconds the largest transfer takes at the route's rate (0.2)");
  calibrate->add_option("--share-to", cal->request.share_to,
                        "host the sharing flows go to (default: first server, else last host)");
  calibrate
      ->add_option("--flows", cal->request.flow_counts,
                   "numbers of concurrent flows to run, each a run (1,2,3,4)")
      ->delimiter(',');
  calibrate->add_option("--window", cal->request.window_s,
                        "seconds measured in each sharing and duplex run (1.5)");
  calibrate->add_flag("!--no-duplex", cal->request.duplex, "skip the both-directions runs");
  calibrate->add_flag("--mpi", cal->mpi,
                      "routes' round trips and bandwidths from MPI messages (the rendezvous "
                      "handshake of large ones included) rather than TCP");
  calibrate
      ->add_option(
          "--mpi-sizes", cal->mpi_sizes,
          "MPI message sizes in bytes, multiples of 4 (131072,...,2097152,8388608; those that "
          "would take over 1 s on the slowest route left out)")
      ->delimiter(',');
  calibrate->add_option("--mpi-repeats", cal->mpi_repeats, "MPI messages of each size (3)");
  calibrate->add_flag("--queued-window", cal->queued_window,
                      "with --mpi: measure the bytes of a host's outgoing message that stand "
                      "ahead of a control message it sends (prop queued_window_bytes)");
  calibrate->add_option("--mpi-waiters", cal->mpi_waiters,
                        "how ranks wait while a pair is timed: spin (MPI_Barrier) or asleep");
  calibrate->add_option("--warmup", cal->request.warmup_s,
                        "seconds left out at the start of each run, at least 10 round trips (0.5)");
  calibrate->callback([cal, calibrate] {
    // The MPI messages' sizes, repeats and waiting ranks are read with --mpi only.
    if (!cal->mpi)
      for (const char* flag : {"--mpi-sizes", "--mpi-repeats", "--mpi-waiters", "--queued-window"})
        if (calibrate->count(flag) > 0)
          throw InputError("command line", flag,
                           std::string("no ") + flag + " without --mpi " +
                               (std::string(flag) == "--queued-window"
                                    ? "(the window is measured with MPI messages)"
                                    : std::string("(TCP transfers measure the ") +
                                          (std::string(flag) == "--mpi-waiters"
                                               ? "routes between threads, no MPI rank waits)"
                                               : "routes; --sizes and --repeats size them)")),
                           flag);
    check_calibrate_request(*cal);
    study::testbed_calibrate(*cal, std::cout);
  });
}

void register_testbed(CLI::App& app) {
  CLI::App* verb = app.add_subcommand(
      "testbed", "an emulated cluster: namespaces and shaped routes from a platform, MPI in it");
  verb->require_subcommand(1);
  add_up(*verb);
  add_down_and_status(*verb);
  add_run(*verb);
  add_calibrate(*verb);
  add_testbed_internals(*verb);
}

}  // namespace

static const VerbRegistration kRegistration{70, register_testbed};

}  // namespace tauplan::cli
