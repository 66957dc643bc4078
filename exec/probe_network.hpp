// probe_network.hpp: what a network prober may ask of the hosts it probes, whatever carries the
// probes (TCP threads in the testbed's namespaces, MPI ranks on real hosts, a max-min model in
// tests).
//
// Two questions only: how long a small message takes there and back between two hosts, and
// what rate each of a set of bulk flows gets when they all run at once. Everything the topology
// probe (exec/testbed/topology_probe.hpp) finds, it finds from the answers; it never reads a
// platform file. Implementations that run on several processes at once (MPI) are called on
// every process with the same arguments, in the same order, and return the same answers on
// every process, so that a deterministic prober takes the same decisions everywhere.
// What it leaves out: loss, jitter and CPU statistics; flows of a given size (every flow here
// sends for a fixed time).
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace tauplan::exec {

class ProbeNetwork {
 public:
  virtual ~ProbeNetwork() = default;
  /// Hosts probed, indexed 0 .. host_count() - 1.
  virtual int host_count() const = 0;
  /// Round-trip times (seconds, wall clock) of `count` small echoes from host a to host b and
  /// back, after a few unrecorded warm-up echoes. a != b.
  virtual std::vector<double> round_trips(int a, int b, int count) = 0;
  /// Runs every flow (src, dst) at once, each sending as fast as the network lets it for
  /// `duration_s`; returns each flow's rate in bytes/s over the common window that starts
  /// `warmup_s` after the start. Flows are distinct ordered pairs of distinct hosts.
  virtual std::vector<double> concurrent_rates(const std::vector<std::pair<int, int>>& flows,
                                               double duration_s, double warmup_s) = 0;
  /// How the probes are carried and timed, for the provenance of what is written from them.
  virtual std::string method() const = 0;
};

}  // namespace tauplan::exec
