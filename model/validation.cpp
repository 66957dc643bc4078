// validation.cpp: relative errors, medians and leave-out refits of the critical-batch model.
#include "model/validation.hpp"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <limits>
#include <set>
#include <utility>

#include "model/error.hpp"

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
    predicted[i] = fitted_steps(fit, points[i].batch, points[i].workers, points[i].tau);
  }
  return predicted;
}

}  // namespace tauplan::model
