// convergence_staleness.cpp: updates to target under staleness, and Ma for unequal local steps.
//
// The two convergence extensions of convergence.hpp (asynchronous SGD, time-budget local SGD),
// for every convergence model: the base class charges staleness to Na(b) and refuses unequal
// local steps; fixed counts and the critical-batch model say what unequal steps cost. What it
// leaves out: the fits (model/convergence/validation.hpp fits kappa and the critical-batch
// parameters to measurements).
#include <algorithm>
#include <cmath>
#include <numeric>

#include <fmt/format.h>

#include "model/base/error.hpp"
#include "model/convergence/convergence.hpp"

namespace tauplan::model {
namespace {

bool all_equal(const std::vector<int>& steps) {
  return std::adjacent_find(steps.begin(), steps.end(), std::not_equal_to<int>()) == steps.end();
}

std::vector<double> as_doubles(const std::vector<int>& steps) {
  return {steps.begin(), steps.end()};
}

void check_steps(const std::vector<int>& steps) {
  if (steps.empty() || *std::min_element(steps.begin(), steps.end()) < 1)
    throw InputError("<convergence>", "round_budget_s",
                     "a round in which every worker takes at least one local step");
}

}  // namespace

EffectiveRound effective_round(const std::vector<double>& steps) {
  const double sum = std::accumulate(steps.begin(), steps.end(), 0.0);
  double squares = 0;
  for (double h : steps)
    squares += h * h;
  EffectiveRound round;
  if (!(sum > 0)) return round;
  round.tau = squares / sum;
  round.workers = sum * sum / squares;
  return round;
}

double ConvergenceModel::async_updates(double batch, double mean_staleness) const {
  return serial_steps(batch) * (1.0 + staleness_cost_ * std::max(0.0, mean_staleness));
}

double ConvergenceModel::unequal_local_rounds(double batch, const std::vector<int>& steps) const {
  check_steps(steps);
  if (all_equal(steps)) return local_sgd_rounds(batch, static_cast<int>(steps.size()), steps[0]);
  throw InputError("<convergence>", "convergence",
                   "critical-batch or fixed for local-sgd with round_budget_s (its workers take "
                   "unequal local steps, which a measured table does not hold)",
                   describe());
}

double FixedCounts::unequal_local_rounds(double batch, const std::vector<int>& steps) const {
  check_steps(steps);
  if (all_equal(steps)) return local_sgd_rounds(batch, static_cast<int>(steps.size()), steps[0]);
  if (rounds_ > 0) return rounds_;
  return std::ceil(iterations_ / effective_round(as_doubles(steps)).tau);
}

double CriticalBatch::unequal_local_rounds(double batch, const std::vector<int>& steps) const {
  check_steps(steps);
  if (all_equal(steps)) return local_sgd_rounds(batch, static_cast<int>(steps.size()), steps[0]);
  const EffectiveRound round = effective_round(as_doubles(steps));
  return serial_steps(batch * round.workers) * (1.0 + drift_ * (round.tau - 1)) / round.tau;
}

}  // namespace tauplan::model
