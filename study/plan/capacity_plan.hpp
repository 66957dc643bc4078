// capacity_plan.hpp: capacity planning over an inventory of node types (`tauplan plan`).
//
// Searches every configuration the inventory allows with the analytic engine
// (study/plan/planner.hpp: node selections, K, strategy, tau, batch, split, collective,
// parameter servers; expected time and cost with revocations of revocable nodes), prints the Pareto
// frontier of expected time against expected cost with each point's memory per GPU, MFU and
// bottleneck (also in plan.json's rows), and the best configuration for the objective. Then it
// re-checks the best candidates (recheck.top, default 10) in the simulator: for each, a SimGrid XML
// of its nodes and a job file in DIR/candidates/NN/, run by `tauplan simulate` in a child process;
// revocations are simulated faults (HOST~MTBF) when every round is simulated (recheck: {faults:
// true, sim_rounds: 0}), else the closed form applied to the simulated round (recheck.sim_rounds
// rounds simulated, the rest extrapolated). Writes DIR/evaluated.csv (every feasible
// configuration), DIR/frontier.csv, DIR/plan.json, and a gnuplot script DIR/frontier.gp drawn to
// DIR/frontier.png and DIR/frontier.svg. What it leaves out: everything study/plan/planner.hpp
// leaves out; the re-check is one simulated run per candidate (one seed), so with simulated faults
// its time is one sample of a random variable (the analytic standard deviation is in plan.json).
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace tauplan::study {

struct PlanRequest {
  std::string inventory;
  std::string out;
  int jobs = 0;
  int recheck = -1;  ///< -1: the inventory's recheck.top
  bool no_plot = false;
  std::string objective;  ///< overrides the inventory's
  std::string deadline;   ///< overrides the inventory's
  double confidence = 0;  ///< overrides the inventory's deadline_confidence when > 0
};

struct PlanOutcome {
  nlohmann::json document;  ///< also written to DIR/plan.json
  std::string text;         ///< the frontier, the answer and the re-check as tables
  std::string answer;       ///< one line
  bool objective_met = false;
  std::string written;  ///< the files written, DIR/{plan.json,...}
};

/// Searches, re-checks, writes DIR; InputError for a bad inventory or flag.
PlanOutcome run_plan(const PlanRequest& request);

}  // namespace tauplan::study
