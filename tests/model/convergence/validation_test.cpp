// validation_test.cpp: relative errors, their median, and leave-out predictions of convergence
// counts (model/convergence/validation.hpp).
#include <catch2/catch.hpp>
#include <limits>

#include <cmath>

#include "model/convergence/convergence.hpp"
#include "model/convergence/validation.hpp"

using namespace tauplan;

static const double kNaN = std::numeric_limits<double>::quiet_NaN();

TEST_CASE("relative errors and their median absolute value") {
  CHECK(model::relative_error(110, 100) == Approx(0.1));
  CHECK(model::relative_error(90, 100) == Approx(-0.1));
  CHECK(std::isnan(model::relative_error(1, 0)));
  CHECK(std::isnan(model::relative_error(kNaN, 1)));
  CHECK(model::median_abs({0.1, -0.3, 0.2}) == Approx(0.2));
  CHECK(model::median_abs({0.1, -0.3, 0.2, -0.4}) == Approx(0.25));
  CHECK(model::median_abs({kNaN, -0.5}) == Approx(0.5));
  CHECK(std::isnan(model::median_abs({kNaN})));
}

TEST_CASE("counts drawn from the model are predicted left out, one at a time or by group") {
  // Exact counts of Na(b) = 300 (1 + 80 / b), drift 0.1, over single/sync b and local-SGD K, tau.
  const model::CriticalBatch truth(300, 80, 0.1);
  std::vector<model::StepsPoint> points;
  for (double b : {16.0, 32.0, 64.0, 128.0})
    points.push_back({b, 1, 1, truth.serial_steps(b)});
  for (int k : {2, 4, 8})
    for (int tau : {1, 4, 16})
      points.push_back({64, k, tau, truth.local_sgd_rounds(64, k, tau)});
  const std::vector<double> loo = model::leave_out_predictions(points);
  std::vector<int> groups;
  for (const auto& p : points)
    groups.push_back(static_cast<int>(p.batch * p.workers) * 100 + p.tau);
  const std::vector<double> lgo = model::leave_out_predictions(points, groups);
  REQUIRE(loo.size() == points.size());
  for (size_t i = 0; i < points.size(); ++i) {
    INFO("point " << i << ": b " << points[i].batch << " K " << points[i].workers << " tau "
                  << points[i].tau);
    // The fit's grid search resolves Bcrit and drift to well under 1%.
    CHECK(loo[i] == Approx(points[i].steps).epsilon(0.01));
    CHECK(lgo[i] == Approx(points[i].steps).epsilon(0.01));
  }
}

TEST_CASE("a point left out is really left out of the fit") {
  // Three exact points and one 50% off: the other points, fitted without it, predict the truth
  // at its place, so its leave-one-out error is the 50% it was off by.
  const model::CriticalBatch truth(200, 50, 0);
  std::vector<model::StepsPoint> points;
  for (double b : {16.0, 32.0, 64.0, 128.0})
    points.push_back({b, 1, 1, truth.serial_steps(b)});
  points[3].steps *= 1.5;
  const std::vector<double> loo = model::leave_out_predictions(points);
  CHECK(loo[3] == Approx(truth.serial_steps(128)).epsilon(0.01));
  CHECK(model::relative_error(loo[3], points[3].steps) == Approx(1 / 1.5 - 1).epsilon(0.02));
}

TEST_CASE("too few points left: no prediction rather than a made-up one") {
  const std::vector<model::StepsPoint> points = {{64, 1, 1, 700}, {64, 2, 4, 100}, {64, 4, 4, 90}};
  for (double p : model::leave_out_predictions(points))
    CHECK(std::isnan(p));
}
