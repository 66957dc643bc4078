// analytic.hpp: the closed-form engine: a Plan timed on a platform (model/ir/plan_timing.hpp,
// where the costs, the longest path and the asynchronous rates are described), its rounds and
// total as a result row, and the extras every engine reports for asynchronous and time-budget
// rows. SparkNet's T0, T1 and T2 are the special cases of single, sync and local-sgd on a
// homogeneous platform. What it leaves out: see plan_timing.hpp.
#pragma once

#include <string>
#include <vector>

#include "model/inputs/platform.hpp"
#include "model/ir/plan.hpp"
#include "model/ir/plan_timing.hpp"
#include "model/ir/result.hpp"

namespace tauplan::model {

/// compile + evaluate, then rounds and total: a ResultRow with engine "analytic".
ResultRow analyze(const Plan& plan, const Platform& platform);
/// The extras of an asynchronous row, the same in every engine: updates_per_s, staleness_mean,
/// staleness_max, staleness_bound (s), staleness_version_bound ((K-1)(2s+1), null when
/// unbounded), staleness_charged and staleness_cost (the tau_bar and kappa the convergence
/// model charged), convergence_model (its formula) and servers.
void add_asynchronous_extra(const Plan& plan, double updates_per_s, double mean_staleness,
                            double max_staleness, nlohmann::json& extra);
/// The extras of a time-budget local-sgd row: round_budget_s and local_steps (per worker).
void add_budget_extra(const Plan& plan, nlohmann::json& extra);
/// The SSP bound on an update's staleness for K workers and clock bound s > 0: (K-1)(2s+1)
/// [derived: when worker w starts step n every other worker has pushed at least n-s steps, and
/// before w's step n is applied none can start a step past n+s]; -1 for s = 0 (unbounded).
long long staleness_version_bound(int workers, int staleness_bound);

}  // namespace tauplan::model
