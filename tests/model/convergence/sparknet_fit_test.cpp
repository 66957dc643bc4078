// sparknet_fit_test.cpp: the critical-batch fit recovers known parameters, the SparkNet speedup
// formulas, and the claim checks say "does not hold" when the numbers say so.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>

#include "model/base/error.hpp"
#include "model/convergence/convergence.hpp"
#include "model/convergence/sparknet_fit.hpp"

using namespace tauplan;

namespace {
std::vector<model::StepsPoint> grid_from(const model::CriticalBatch& truth, double b) {
  std::vector<model::StepsPoint> points;
  for (int k : {1, 2, 3, 4, 6, 8})
    for (int tau : {1, 2, 5, 10, 25, 100})
      points.push_back(
          {b, k, tau,
           k == 1 && tau == 1 ? truth.serial_steps(b) : truth.local_sgd_rounds(b, k, tau)});
  return points;
}
}  // namespace

TEST_CASE("the fit recovers Smin, Bcrit and drift from exact counts") {
  const model::CriticalBatch truth(150, 90, 0.12);
  const auto fit = model::fit_critical_batch(grid_from(truth, 16));
  CHECK(fit.min_steps == Approx(150).epsilon(0.01));
  CHECK(fit.critical_batch == Approx(90).epsilon(0.01));
  CHECK(fit.drift == Approx(0.12).margin(0.002));
  CHECK(fit.rms_log_error < 1e-3);
  CHECK(model::fitted_steps(fit, 16, 1, 1) == Approx(truth.serial_steps(16)).epsilon(0.01));
  CHECK(model::fitted_steps(fit, 16, 4, 10) ==
        Approx(truth.local_sgd_rounds(16, 4, 10)).epsilon(0.01));
}

TEST_CASE("the fit of noisy counts stays close and reports its error") {
  const model::CriticalBatch truth(300, 40, 0.3);
  auto points = grid_from(truth, 8);
  for (size_t i = 0; i < points.size(); ++i)
    points[i].steps *= (i % 2 == 0) ? 1.1 : 1 / 1.1;  // +-10 %, alternating
  const auto fit = model::fit_critical_batch(points);
  CHECK(fit.critical_batch == Approx(40).epsilon(0.35));
  CHECK(fit.drift == Approx(0.3).margin(0.08));
  CHECK(fit.rms_log_error == Approx(std::log(1.1)).epsilon(0.3));
}

TEST_CASE("the fit refuses too few or non-positive counts") {
  CHECK_THROWS_AS(model::fit_critical_batch({{16, 1, 1, 100}, {16, 2, 1, 60}}), InputError);
  CHECK_THROWS_AS(
      model::fit_critical_batch({{16, 1, 1, 100}, {16, 2, 1, 0}, {16, 4, 1, 30}}, "m.csv"),
      InputError);
}

TEST_CASE("speedup formulas") {
  CHECK(model::zero_overhead_speedup(1000, 50, 5) == Approx(4));
  CHECK(model::naive_speedup(1.0, 0.25, 0.0) == Approx(4));
  CHECK(model::naive_speedup(1.0, 0.25, 1.0) == Approx(0.8));
  // SparkNet with S = 0 is the zero-overhead speedup.
  CHECK(model::sparknet_speedup(1000, 50, 5, 2.0, 0) == Approx(4));
  CHECK(model::sparknet_speedup(1000, 50, 5, 1.0, 5.0) == Approx(2));
  const auto s = model::log_space(0.01, 100, 5);
  REQUIRE(s.size() == 5);
  CHECK(s[2] == Approx(1));
  CHECK(s[4] == Approx(100));
}

namespace {
model::SpeedupGrid grid(std::map<std::pair<int, int>, double> values, double spread) {
  model::SpeedupGrid g;
  for (const auto& [key, v] : values) {
    if (std::find(g.workers.begin(), g.workers.end(), key.first) == g.workers.end())
      g.workers.push_back(key.first);
    if (std::find(g.taus.begin(), g.taus.end(), key.second) == g.taus.end())
      g.taus.push_back(key.second);
    g.speedup[key] = v;
  }
  g.default_spread = spread;
  return g;
}
}  // namespace

TEST_CASE("claim checks can fail") {
  CHECK(model::check_naive_no_speedup(5, 1.0, 0.3).holds);
  CHECK_FALSE(model::check_naive_no_speedup(5, 1.0, -0.5).holds);  // absurd C(b/K) < 0

  const auto rising = grid({{{5, 1}, 4.0}, {{5, 10}, 3.0}, {{5, 100}, 2.0}}, 0.05);
  CHECK_FALSE(model::check_tau_shrink(rising).holds);  // smaller tau, larger speedup
  const auto flat = grid({{{5, 1}, 2.0}, {{5, 10}, 2.02}, {{5, 100}, 2.5}}, 0.05);
  CHECK(model::check_tau_shrink(flat).holds);

  // At S = 10 C(b): tau = 100 gives 2.0 * 100 / 110 = 1.82 > 1.
  const auto large = model::check_sparknet_large_s(rising, 5, 10);
  CHECK(large.holds);
  CHECK(large.evidence.find("best tau=100") != std::string::npos);
  const auto poor = grid({{{5, 1}, 1.2}, {{5, 10}, 1.1}}, 0.05);  // 1.1 * 10 / 20 < 1
  CHECK_FALSE(model::check_sparknet_large_s(poor, 5, 10).holds);

  CHECK(model::check_tau1_identity({{2, 100, 104}, {4, 60, 59}}, 0.05).holds);
  CHECK_FALSE(model::check_tau1_identity({{2, 100, 130}}, 0.05).holds);
  CHECK_FALSE(model::check_tau1_identity({}, 0.05).holds);
}
