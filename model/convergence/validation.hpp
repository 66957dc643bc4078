// validation.hpp: the arithmetic of `tauplan validate`: errors of predictions against
// measurements, and convergence counts predicted for configurations left out of the fit.
//
// What it models: the relative error (predicted - measured) / measured and the median of its
// absolute value over a matrix; the critical-batch + local-SGD drift model of sparknet_fit.hpp
// fitted to measured counts (Na(b) for single and sync at global batch b, Ma(b,K,tau) for
// local SGD) and, for each configuration, refitted without it (leave-one-out) to predict its
// count; and the same with a whole group left out (for example every configuration that
// measured the same Na(b)), a stricter test. For asynchronous runs, the staleness cost kappa of
// Na(b) (1 + kappa tau_bar) fitted on top of the critical-batch fit, with leave-one-out. What it
// leaves out: running anything (cli/ verb_validate.cpp runs the engines), noise models and
// confidence intervals.
#pragma once

#include <string>
#include <vector>

#include "model/convergence/sparknet_fit.hpp"

namespace tauplan::model {

/// (predicted - measured) / measured; NaN when measured is 0 or either is not finite.
double relative_error(double predicted, double measured);

/// Median of |e| over the finite entries (NaN when none).
double median_abs(const std::vector<double>& errors);

/// Leave-group-out predictions: for point i, the model fitted to every point whose group
/// differs from group[i], evaluated at point i (NaN when fewer than 3 points remain or the
/// remaining points do not vary enough in (b K, tau) to fit). `groups` empty: every point is its
/// own group (plain leave-one-out).
std::vector<double> leave_out_predictions(const std::vector<StepsPoint>& points,
                                          const std::vector<int>& groups = {});

/// One measured asynchronous run: per-worker batch, the mean staleness its updates had, and the
/// server updates it took to the target.
struct AsyncPoint {
  double batch = 0;
  double mean_staleness = 0;
  double updates = 0;
};

/// kappa of updates = Na(b) (1 + kappa tau_bar) (convergence.hpp), Na(b) from `fit`: least
/// squares of log(updates / Na(b)) - log(1 + kappa tau_bar) over the points, kappa in
/// [0, 100] (golden-section search on a unimodal objective). NaN when no point has a
/// staleness > 0 (kappa is then not identifiable).
double fit_staleness_cost(const CriticalBatchFit& fit, const std::vector<AsyncPoint>& points);

/// For each point, its updates predicted with kappa fitted to the other points (leave-one-out;
/// NaN when the others cannot fit kappa), at `predict_at[i]` staleness (the model's own
/// prediction; empty or NaN: the point's measured staleness).
std::vector<double> leave_out_async_predictions(const CriticalBatchFit& fit,
                                                const std::vector<AsyncPoint>& points,
                                                const std::vector<double>& predict_at = {});

}  // namespace tauplan::model
