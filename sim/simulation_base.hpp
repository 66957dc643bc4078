// simulation_base.hpp: what the synchronous simulator (sim/simulator.cpp) and the asynchronous
// one (sim/async_simulation.cpp) hold alike of the job they run: its plan, platform, options and
// trace, the SimGrid hosts and the clock's origin; and their rows' failure report. What it
// leaves out: how either runs its job.
#pragma once

#include <simgrid/s4u.hpp>

#include <algorithm>
#include <cstddef>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/base/chrome_trace.hpp"
#include "model/base/error.hpp"
#include "model/inputs/platform.hpp"
#include "model/ir/plan.hpp"
#include "sim/simulator.hpp"

namespace tauplan::sim::detail {

class SimulationBase {
 protected:
  SimulationBase(const model::Plan& plan, const model::Platform& platform,
                 const SimOptions& options, model::ChromeTrace* trace, int trace_pid)
      : plan_(plan), platform_(platform), options_(options), trace_(trace), pid_(trace_pid) {}

  /// The rounds (updates) to simulate of the plan's `planned`: all, or the first sim_rounds.
  /// Throws InputError naming sim_rounds (the key or the flag) when failures are asked for and some
  /// rounds would be extrapolated: a failure's stall and lost round happen in simulated time only,
  /// and the extrapolation from the mean simulated round would spread them over every round or drop
  /// them.
  long long rounds_to_simulate(long long planned) const {
    planned = std::max<long long>(planned, 1);
    if (options_.sim_rounds <= 0 || options_.sim_rounds >= planned) return planned;
    if (!options_.failures.empty())
      throw InputError(options_.origin_of("sim_rounds"),
                       "0 (every round) when the job has failures: they are not extrapolated",
                       std::to_string(options_.sim_rounds) + " of " + std::to_string(planned));
    return options_.sim_rounds;
  }
  /// Simulated seconds since the job started (t0_).
  double now() const { return simgrid::s4u::Engine::get_clock() - t0_; }
  std::string host_name(int host) const { return platform_.hosts[static_cast<size_t>(host)].name; }

  const model::Plan& plan_;
  const model::Platform& platform_;
  SimOptions options_;
  model::ChromeTrace* trace_;
  int pid_;
  std::vector<simgrid::s4u::Host*> hosts_;  ///< by platform host index
  double t0_ = 0;
};

/// A row's failures: extra["failures"], one entry per fault (its host, time, stall and outcome,
/// and what `detail(fault, entry)` adds), and extra["time_lost_s"], the sum of the times that
/// `detail` returns.
template <typename Fault, typename Detail>
void add_failures(nlohmann::json& extra, const std::vector<Fault>& faults, Detail detail) {
  nlohmann::json list = nlohmann::json::array();
  double lost = 0;
  for (const Fault& f : faults) {
    nlohmann::json entry = {
        {"host", f.host}, {"time_s", f.time_s}, {"stall_s", f.stall_s}, {"outcome", f.outcome}};
    lost += detail(f, entry);
    list.push_back(entry);
  }
  extra["failures"] = list;
  extra["time_lost_s"] = lost;
}

}  // namespace tauplan::sim::detail
