// latency_jitter.hpp: every link's latency scaled by a seeded random factor, drawn anew for each
// simulated round, and put back afterwards (SimOptions::latency_jitter).
//
// Why: under a rendezvous with a queued window (sim/rendezvous.hpp) a contended ring's step turns
// on which of two events on one host comes first, a request or the bytes queued ahead of it;
// events a few microseconds apart. A calibrated platform resolves a link's latency to about 1-2%
// (tens of microseconds at the testbed's scale 4: experiments/testbed/README.md, "Near-ties"), so
// one simulation of it picks one order by chance and another calibration of the same network the
// other, while the real network's rounds see both. With a jitter J each round's links get
// latency x (1 + J u), u uniform in [-1, 1), and the simulated rounds' mean is over those orders.
// The draws depend only on the seed, the round and the links' names in order (the same factors
// for two calibrations of one network: common random numbers). What it leaves out: bandwidth
// noise, jitter within a round, and any correlation between links.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include <simgrid/s4u.hpp>

namespace tauplan::sim {

class LatencyJitter {
 public:
  /// Remembers every link's latency of the loaded platform. amplitude in [0, 1) keeps every
  /// latency positive; the job key allows at most 0.5 (sim_job.cpp).
  LatencyJitter(double amplitude, unsigned long long seed);
  /// Puts every link's latency back.
  ~LatencyJitter();
  LatencyJitter(const LatencyJitter&) = delete;
  LatencyJitter& operator=(const LatencyJitter&) = delete;

  /// Sets every link's latency for simulated round `round`.
  void draw(long long round);

  /// The factors of `links` links (in the order of their names) in round `round`.
  static std::vector<double> factors(double amplitude, unsigned long long seed, long long round,
                                     size_t links);

 private:
  double amplitude_;
  unsigned long long seed_;
  std::vector<std::pair<simgrid::s4u::Link*, double>> nominal_;
};

}  // namespace tauplan::sim
