// network_probe.hpp: `tauplan calibrate --network HOSTS...`, the network between hosts found by
// probing it (exec/testbed/topology_probe.hpp) and written as a platform, without reading the
// platform any testbed was built from.
//
// Two ways to reach the hosts: the live emulated testbed (TCP threads in its namespaces; only
// the hosts' namespaces and addresses are read from it), or MPI ranks (`--mpi`, under mpirun or
// `tauplan testbed run`, with a hostfile on real hosts: rank r is host r, exec/mpi_probes.hpp).
// The platform names the hosts as given; their roles come from --servers (the rest are workers),
// each is its own node (the switch the probe hangs it off is its prop `switch`), their speed a
// placeholder (compute is not probed here). With --mpi the output file is checked only when
// rank 0 writes it, after the probes (the other ranks' hosts may not see its folder). What it
// leaves out: what topology_probe.hpp leaves out.
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "exec/testbed/lifecycle.hpp"
#include "exec/testbed/topology_probe.hpp"

namespace tauplan::study {

struct NetworkProbeRequest {
  /// Host names: the testbed's hosts ("all": every one of them), or one per MPI rank.
  std::vector<std::string> hosts;
  std::vector<std::string> servers;  ///< hosts whose role is server
  std::string out = "probed-platform.xml";
  std::string json_out;        ///< the probe's measurements and fit, when set
  std::string prefix = "tp-";  ///< of the testbed
  bool mpi = false;            ///< probe through MPI ranks instead of the testbed's namespaces
  testbed::TopologyProbeRequest probe;
};

/// Probes, writes the platform (and the JSON), loads the platform back as a check, prints a
/// summary. InputError for bad hosts, a testbed that is not up, or files that cannot be written.
void run_network_probe(const NetworkProbeRequest& request, std::ostream& out);

/// Probes the hosts of a live testbed (every host, in rank order) through their namespaces.
testbed::ProbedTopology probe_testbed(const testbed::State& state,
                                      const testbed::TopologyProbeRequest& request);

}  // namespace tauplan::study
