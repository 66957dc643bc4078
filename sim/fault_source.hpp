// fault_source.hpp: one source of host failures in a simulation, and the actor body that injects
// them (shared by the synchronous and the asynchronous simulator), and a straggler's report.
//
// A source fails one host at a fixed time (at_s >= 0), or at exponential intervals of mean
// mtbf_s drawn from its own seeded stream (random.hpp), or first at at_s and then every
// exponential interval when both are given. What it leaves out: what a failure does (the
// simulator's `fail`), and correlated failures across hosts.
#pragma once

#include <simgrid/s4u.hpp>

#include <algorithm>
#include <cstddef>
#include <vector>

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "model/base/error.hpp"
#include "model/inputs/platform.hpp"
#include "model/ir/plan.hpp"
#include "sim/random.hpp"
#include "sim/simulator.hpp"

namespace tauplan::sim {

struct FailureSource {
  int host = -1;
  double at_s = -1;
  double mtbf_s = -1;
  unsigned long long seed = 0;
};

/// One source per failure of `options` and host it names ("*": every worker host of the plan),
/// each with its own random stream (purpose 2 + the failure's index, the host's index in it).
inline std::vector<FailureSource> failure_sources(const SimOptions& options,
                                                  const model::Plan& plan,
                                                  const model::Platform& platform) {
  std::vector<FailureSource> sources;
  for (std::size_t i = 0; i < options.failures.size(); ++i) {
    const Failure& f = options.failures[i];
    std::vector<int> hosts;
    if (f.host == "*") {
      hosts = plan.worker_hosts;
    } else {
      const int host = platform.find_host(f.host);
      if (host < 0)
        throw InputError(options.origin_of("failures"), "a host of " + platform.source_file,
                         "'" + f.host + "'");
      hosts.push_back(host);
    }
    for (std::size_t j = 0; j < hosts.size(); ++j)
      sources.push_back(
          FailureSource{hosts[j], f.at_s, f.mtbf_s, stream_seed(options.seed, 2 + i, j)});
  }
  // A synchronous round survives a restart stall R only when no host of the job fails during
  // it: at a combined rate L, each completed round takes about e^{L (R + round)} failures
  // (study/common/revocation.hpp's expected stall). Where L R alone passes kMaxExponent, every
  // round would record tens of thousands of failures, and the simulation would all but never
  // end, its memory growing: `*~2h` over 10,000 workers against a 60 s restart is L R = 83. An
  // asynchronous plan stops only the failed worker (and gives up by itself when none is left).
  constexpr double kMaxExponent = 10;  // e^10: about 22,000 failures a round
  double rate_per_s = 0;
  for (const FailureSource& source : sources) {
    const auto in = [&source](const std::vector<int>& hosts) {
      return std::find(hosts.begin(), hosts.end(), source.host) != hosts.end();
    };
    if (source.mtbf_s > 0 && (in(plan.worker_hosts) || in(plan.server_hosts)))
      rate_per_s += 1 / source.mtbf_s;
  }
  if (!plan.asynchronous && rate_per_s * options.restart_s > kMaxExponent)
    throw InputError(
        options.origin_of("failures"),
        fmt::format("failures rare enough for rounds to complete: a mean time between the job's "
                    "failures above failure_restart_s / {:g} = {:.3g} s (each round would take "
                    "at least e^{:.3g} failures)",
                    kMaxExponent, options.restart_s / kMaxExponent, rate_per_s * options.restart_s),
        fmt::format("one failure every {:.3g} s over the job's hosts", 1 / rate_per_s));
  return sources;
}

/// The body of a daemon actor: sleeps until each failure time of `source` (from t0_s), stops
/// once `finished()` is true, and calls `fail(host)` at each time before that.
template <class Finished, class Fail>
void run_fault_injector(const FailureSource& source, double t0_s, Finished finished, Fail fail) {
  simgrid::s4u::Actor::self()->daemonize();
  Rng rng(source.seed);
  double next = source.at_s >= 0 ? source.at_s : rng.exponential(source.mtbf_s);
  for (;;) {
    simgrid::s4u::this_actor::sleep_until(t0_s + next);
    if (finished()) return;
    fail(source.host);
    if (source.mtbf_s <= 0) return;
    next += rng.exponential(source.mtbf_s);
  }
}

/// A straggling worker's fields of workers_detail (its slow-down, the share of its steps drawn
/// slow, and the counts drawn), added only when it straggles; shared by both simulators.
inline void add_straggler_detail(nlohmann::json& entry, double factor, double fraction,
                                 long long slow_steps, long long steps) {
  if (factor == 1.0 || fraction <= 0) return;
  entry["straggler_factor"] = factor;
  entry["straggler_fraction"] = fraction;
  entry["slow_steps"] = slow_steps;
  entry["steps"] = steps;
}

}  // namespace tauplan::sim
