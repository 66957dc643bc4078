// verb_calibrate.cpp: `tauplan calibrate [--device cpu] [--out FILE] [--json]`, this machine
// as a platform (study/calibrate/machine_calibration.hpp); `--check FILE` reads a calibration back;
// `--compute OUT.json [--compute-threads K] [--compute-dims D,...]` measures this CPU's compute
// profile instead (GEMMs by shape, memory bandwidth, per-op overhead;
// exec/compute_calibration.hpp). `--network HOSTS... --out FILE.xml` finds the network between
// hosts by probing it instead (study/testbed/network_probe.hpp): on the live testbed (`all`: its
// every host), or, with --mpi, between the MPI ranks it runs as (rank r is the r-th name).
#include <iostream>

#include "cli/verb.hpp"
#include "model/base/error.hpp"
#include "study/calibrate/machine_calibration.hpp"
#ifdef __linux__
#include "study/testbed/network_probe.hpp"
#endif
#include "study/validate/validate_transformer.hpp"

namespace tauplan::cli {
namespace {

#ifdef __linux__
using ProbeOptions = study::NetworkProbeRequest;
#else
struct ProbeOptions {};
#endif

/// `--network HOSTS...` and the options that go with it.
std::shared_ptr<ProbeOptions> add_network_options(CLI::App& verb,
                                                  std::vector<std::string>& network) {
  auto probe = std::make_shared<ProbeOptions>();
  verb.add_option("--network", network,
                  "HOSTS...: find the network between these hosts by probing it (the testbed's, "
                  "`all` for every one, or one per MPI rank with --mpi) and write it to --out "
                  "(default probed-platform.xml)")
      ->delimiter(',')
      ->expected(1, -1);
#ifdef __linux__
  verb.add_option("--servers", probe->servers, "with --network: hosts whose role is server")
      ->delimiter(',');
  verb.add_option("--json-out", probe->json_out,
                  "with --network: also write the probes and the fit as JSON");
  verb.add_option("--prefix", probe->prefix, "with --network: the testbed's prefix (tp-)");
  verb.add_flag("--mpi", probe->mpi,
                "with --network: probe between the MPI ranks this runs as (mpirun, a hostfile)");
  verb.add_option("--flow-seconds", probe->probe.flow_duration_s,
                  "with --network: length of each concurrent-flow probe (1.5)");
  verb.add_option("--pings", probe->probe.pings, "with --network: timed echoes per pair (15)");
  verb.add_option("--check-pairs", probe->probe.check_pairs,
                  "with --network: pairs of routes run alone and at once as a check (8)");
#endif
  return probe;
}

void run_probe(const CLI::App& verb, const std::vector<std::string>& network,
               [[maybe_unused]] ProbeOptions& probe, const study::CalibrateRequest& args) {
#ifdef __linux__
  probe.hosts = network;
  // --out when given (whatever its value); not plain calibrate's default (this machine's
  // calibration file).
  if (verb.count("--out") > 0) probe.out = args.out;
  if (!(probe.probe.flow_duration_s >= 1.0 && probe.probe.flow_duration_s <= 60))
    throw InputError("command line", "--flow-seconds", "seconds from 1 to 60",
                     std::to_string(probe.probe.flow_duration_s));
  if (probe.probe.pings < 3 || probe.probe.pings > 1000)
    throw InputError("command line", "--pings", "a whole number from 3 to 1000",
                     std::to_string(probe.probe.pings));
  if (probe.probe.check_pairs < 0 || probe.probe.check_pairs > 100)
    throw InputError("command line", "--check-pairs", "a whole number from 0 to 100",
                     std::to_string(probe.probe.check_pairs));
  study::run_network_probe(probe, std::cout);
#else
  (void)verb;
  (void)network;
  (void)args;
  throw InputError("command line", "--network", "Linux (the testbed and its probes)", "not Linux");
#endif
}

void register_calibrate(CLI::App& app) {
  auto args = std::make_shared<study::CalibrateRequest>();
  auto json = std::make_shared<bool>(false);
  auto compute = std::make_shared<std::string>();
  auto compute_threads = std::make_shared<int>(1);
  auto compute_dims = std::make_shared<std::vector<int>>();
  CLI::App* verb = app.add_subcommand(
      "calibrate", "measure this machine (C(b) and combine fits) and write it as a platform XML");
  verb->add_option("--device", args->device, "cpu (default)");
  verb->add_option("--out", args->out, "platform XML to write (default " + args->out + ")");
  verb->add_option("--workers", args->workers, "K: worker hosts in the platform (default 8)");
  verb->add_option("--batches", args->batches, "per-worker batch sizes timed (default 4..128)")
      ->delimiter(',');
  verb->add_option("--floats", args->floats,
                   "combine sizes in floats, capped at the gradient (default 5e4,1e5,2e5)")
      ->delimiter(',');
  verb->add_option("--steps", args->steps, "timed steps per batch size (median), default 48");
  verb->add_option("--replicas", args->replicas,
                   "MLP replicas running lockstep sync rounds: the K timed (default 4)");
  verb->add_option("--check", args->check, "only read and check a calibration platform FILE");
  verb->add_flag("--json", *json, "print a JSON summary");
  verb->add_option("--compute", *compute,
                   "OUT.json: measure this CPU's compute profile (fp32 GEMMs by shape, memory "
                   "bandwidth, per-op overhead) instead");
  verb->add_option("--compute-threads", *compute_threads,
                   "with --compute: threads measuring at once (the run's workers; default 1)");
  verb->add_option("--compute-dims", *compute_dims,
                   "with --compute: only these grid sizes (5 x 2^j; default 20..1280, m to 2560)")
      ->delimiter(',');
  auto network = std::make_shared<std::vector<std::string>>();
  auto probe = add_network_options(*verb, *network);
  verb->callback([verb, args, json, compute, compute_threads, compute_dims, network, probe] {
    // Each mode reads its own flags and refuses the others (calibrate --check FILE --workers 4
    // says so instead of ignoring --workers).
    if (!network->empty()) {
      refuse_flags_outside(*verb, "--network",
                           {"--servers", "--json-out", "--prefix", "--mpi", "--flow-seconds",
                            "--pings", "--check-pairs", "--out"});
      run_probe(*verb, *network, *probe, *args);
      return;
    }
    if (!compute->empty()) {
      refuse_flags_outside(*verb, "--compute", {"--compute-threads", "--compute-dims"});
      std::cout << study::run_compute_calibrate(*compute, *compute_threads, *compute_dims);
      return;
    }
    if (!args->check.empty())
      refuse_flags_outside(*verb, "--check", {"--json"});
    else
      refuse_flags_outside(*verb, "",
                           {"--device", "--out", "--workers", "--batches", "--floats", "--steps",
                            "--replicas", "--json"});
    const study::CalibrateOutcome outcome = study::run_calibrate(*args);
    for (const std::string& w : outcome.warnings)
      std::cerr << "calibrate: " << w << "\n";
    if (*json)
      std::cout << outcome.document.dump(2) << "\n";
    else
      std::cout << outcome.text;
  });
}

const VerbRegistration kRegistration{35, register_calibrate};

}  // namespace
}  // namespace tauplan::cli
