// validation.hpp: the arithmetic of `tauplan validate`: errors of predictions against
// measurements, and convergence counts predicted for configurations left out of the fit.
//
// What it models: the relative error (predicted - measured) / measured and the median of its
// absolute value over a matrix; the critical-batch + local-SGD drift model of reproduce.hpp
// fitted to measured counts (Na(b) for single and sync at global batch b, Ma(b,K,tau) for
// local SGD) and, for each configuration, refitted without it (leave-one-out) to predict its
// count; and the same with a whole group left out (for example every configuration that
// measured the same Na(b)), a stricter test. What it leaves out: running anything (cli/
// verb_validate.cpp runs the engines), noise models and confidence intervals.
#pragma once

#include <string>
#include <vector>

#include "model/reproduce.hpp"

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

}  // namespace tauplan::model
