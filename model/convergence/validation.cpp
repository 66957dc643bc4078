// validation.cpp: relative errors, medians and leave-out refits of the critical-batch model.
#include "model/convergence/validation.hpp"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <limits>
#include <set>
#include <utility>

#include "model/base/error.hpp"

namespace tauplan::model {

double relative_error(double predicted, double measured) {
  if (!std::isfinite(predicted) || !std::isfinite(measured) || measured == 0)
    return std::numeric_limits<double>::quiet_NaN();
  return (predicted - measured) / measured;
}

double median_abs(const std::vector<double>& errors) {
  std::vector<double> a;
  for (double e : errors)
    if (std::isfinite(e)) a.push_back(std::abs(e));
  if (a.empty()) return std::numeric_limits<double>::quiet_NaN();
  std::sort(a.begin(), a.end());
  const std::size_t m = a.size() / 2;
  return a.size() % 2 ? a[m] : 0.5 * (a[m - 1] + a[m]);
}

std::vector<double> leave_out_predictions(const std::vector<StepsPoint>& points,
                                          const std::vector<int>& groups) {
  assert(groups.empty() || groups.size() == points.size());
  const double nan = std::numeric_limits<double>::quiet_NaN();
  std::vector<double> predicted(points.size(), nan);
  for (std::size_t i = 0; i < points.size(); ++i) {
    std::vector<StepsPoint> rest;
    std::set<std::pair<double, int>> shapes;  // distinct (K b, tau): what the fit can resolve
    for (std::size_t j = 0; j < points.size(); ++j) {
      const bool same = groups.empty() ? j == i : groups[j] == groups[i];
      if (same) continue;
      rest.push_back(points[j]);
      shapes.insert({points[j].batch * points[j].workers, points[j].tau});
    }
    if (rest.size() < 3 || shapes.size() < 2) continue;
    const CriticalBatchFit fit = fit_critical_batch(rest, "leave-out fit");
    predicted[i] = fitted_steps(fit, points[i]);
  }
  return predicted;
}

namespace {

double staleness_sse(const CriticalBatchFit& fit, const std::vector<AsyncPoint>& points,
                     double kappa) {
  double sse = 0;
  for (const AsyncPoint& p : points) {
    const double na = fitted_steps(fit, p.batch, 1, 1);
    const double r = std::log(p.updates / na) - std::log1p(kappa * p.mean_staleness);
    sse += r * r;
  }
  return sse;
}

}  // namespace

double fit_staleness_cost(const CriticalBatchFit& fit, const std::vector<AsyncPoint>& points) {
  bool identifiable = false;
  for (const AsyncPoint& p : points) {
    if (!(p.updates > 0) || !(p.batch > 0) || !(p.mean_staleness >= 0))
      throw InputError("staleness fit", "updates",
                       "positive update counts and batches, staleness >= 0");
    identifiable = identifiable || p.mean_staleness > 0;
  }
  if (!identifiable) return std::numeric_limits<double>::quiet_NaN();
  // The objective is a sum of squares of log terms, each monotone in kappa: unimodal on
  // [0, 100]; golden-section search to 1e-6.
  double lo = 0, hi = 100;
  const double g = (std::sqrt(5.0) - 1) / 2;
  double a = hi - g * (hi - lo), b = lo + g * (hi - lo);
  double fa = staleness_sse(fit, points, a), fb = staleness_sse(fit, points, b);
  while (hi - lo > 1e-6) {
    if (fa < fb) {
      hi = b;
      b = a;
      fb = fa;
      a = hi - g * (hi - lo);
      fa = staleness_sse(fit, points, a);
    } else {
      lo = a;
      a = b;
      fa = fb;
      b = lo + g * (hi - lo);
      fb = staleness_sse(fit, points, b);
    }
  }
  const double kappa = 0.5 * (lo + hi);
  return staleness_sse(fit, points, 0) <= staleness_sse(fit, points, kappa) ? 0.0 : kappa;
}

std::vector<double> leave_out_async_predictions(const CriticalBatchFit& fit,
                                                const std::vector<AsyncPoint>& points,
                                                const std::vector<double>& predict_at) {
  std::vector<double> predicted(points.size(), std::numeric_limits<double>::quiet_NaN());
  for (std::size_t i = 0; i < points.size(); ++i) {
    std::vector<AsyncPoint> rest;
    for (std::size_t j = 0; j < points.size(); ++j)
      if (j != i) rest.push_back(points[j]);
    if (rest.empty()) continue;
    const double kappa = fit_staleness_cost(fit, rest);
    if (!std::isfinite(kappa)) continue;
    const double staleness = i < predict_at.size() && std::isfinite(predict_at[i])
                                 ? predict_at[i]
                                 : points[i].mean_staleness;
    predicted[i] = fitted_steps(fit, points[i].batch, 1, 1) * (1 + kappa * staleness);
  }
  return predicted;
}

}  // namespace tauplan::model
