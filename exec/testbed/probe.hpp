// probe.hpp: network micro-measurements between testbed namespaces, over TCP sockets.
//
// Each end of a measurement is a thread of this process moved into a host's namespace (setns is
// per thread), talking TCP over the emulated network; times are CLOCK_MONOTONIC wall clock.
// Plain TCP sockets rather than MPI point-to-point, because the question is what the emulated
// network gives a TCP flow (what the calibrated platform then stands for); MPI over TCP adds its
// own eager/rendezvous protocol and progress engine on top, which `testbed run` measures
// separately. Every socket operation has a deadline, so a dead fabric is an error, never a hang.
//   ping_pong        small messages echoed: round-trip times (TCP_NODELAY)
//   transfer_times   one-way transfers of S bytes, each timed from the first byte sent to a
//                    one-byte reply after the last byte arrived: t(S) = RTT + S / B
//   streams          flows that send as fast as TCP lets them for a while, all at once; each
//                    sender samples what its receiver has acknowledged (TCP_INFO: segments
//                    delivered, SACKed ones included, x MSS) and rates are taken over one common
//                    window (after a warm-up), so they show how concurrent flows share links
//   NamespaceProbes  the two of exec::ProbeNetwork (round trips, concurrent rates) between a list
//                    of hosts' endpoints, for the topology probe (topology_probe.hpp)
// What it leaves out: UDP, loss and jitter statistics, and CPU time (the caller reads the
// fabric's).
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "exec/probe_network.hpp"

namespace tauplan::testbed {

/// Seconds of CLOCK_MONOTONIC: what every probe here is timed with.
double now_s();

struct Endpoint {
  std::string netns;
  std::string address;
};

/// Round-trip times of `count` echoes of `message_bytes` (after 3 unrecorded warm-up echoes).
std::vector<double> ping_pong(const Endpoint& from, const Endpoint& to, int count,
                              int message_bytes, double timeout_s);

struct TransferSample {
  double bytes = 0;
  double seconds = 0;
};

/// Times one-way transfers of each size in `sizes`, `repeats` times, on one connection warmed
/// by a first transfer of the largest size (not recorded); sizes interleaved across repeats.
std::vector<TransferSample> transfer_times(const Endpoint& from, const Endpoint& to,
                                           const std::vector<double>& sizes, int repeats,
                                           double timeout_s);

struct StreamRate {
  double bytes = 0;    ///< delivered inside the window
  double seconds = 0;  ///< the window
  double rate_Bps = 0;
};

/// Runs every flow (from, to) at once for `duration_s`; rates over the common window
/// [start + warmup_s, start + duration_s - 0.1 s].
std::vector<StreamRate> streams(const std::vector<std::pair<Endpoint, Endpoint>>& flows,
                                double duration_s, double warmup_s);

/// exec::ProbeNetwork over the testbed: host i is endpoints[i]; round trips by ping_pong (8-byte
/// echoes), concurrent rates by streams.
class NamespaceProbes : public exec::ProbeNetwork {
 public:
  explicit NamespaceProbes(std::vector<Endpoint> endpoints) : endpoints_(std::move(endpoints)) {}
  int host_count() const override { return static_cast<int>(endpoints_.size()); }
  std::vector<double> round_trips(int a, int b, int count) override;
  std::vector<double> concurrent_rates(const std::vector<std::pair<int, int>>& flows,
                                       double duration_s, double warmup_s) override;
  std::string method() const override;

 private:
  std::vector<Endpoint> endpoints_;
};

}  // namespace tauplan::testbed
