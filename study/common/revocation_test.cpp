// revocation_test.cpp: the revocation closed form (study/common/revocation.hpp) against the
// failure-free time, its mean in closed form, an independent Monte Carlo, and normal quantiles.
#include <catch2/catch.hpp>

#include <cmath>
#include <random>

#include "study/common/revocation.hpp"

using namespace tauplan;

namespace {

/// An independent Monte Carlo of the revocation process (not the closed form's recursion): a
/// Poisson stream of events; a round of `r` completes when r seconds pass without an event;
/// after an event the job stalls until `R` seconds pass without one.
double simulate_rounds(std::mt19937_64& rng, double r, long long rounds, double rate, double R) {
  std::exponential_distribution<double> gap(rate);
  double t = 0;
  double next_event = gap(rng);
  for (long long i = 0; i < rounds; ++i) {
    for (;;) {
      if (next_event >= t + r) {  // the round completes
        t += r;
        break;
      }
      t = next_event;  // lost work; stall until R event-free seconds
      next_event = t + gap(rng);
      while (next_event < t + R) {
        t = next_event;
        next_event = t + gap(rng);
      }
      t += R;
    }
  }
  return t;
}

}  // namespace

TEST_CASE("revocations: no revocations give the failure-free time") {
  const auto m = study::round_time_moments(2.0, 0, 30);
  CHECK(m.mean == 2.0);
  CHECK(m.variance == 0);
  const auto t = study::expected_total_time(2.0, 100, 0, 30);
  CHECK(t.mean_s == 200.0);
  CHECK(t.stddev_s == 0);
}

TEST_CASE("revocations: the mean is e^{LR} (e^{Lr} - 1) / L") {
  for (double rate : {1e-7, 1e-4, 0.01, 0.3, 2.0})
    for (double r : {0.5, 3.0})
      for (double R : {0.0, 10.0}) {
        INFO("rate " << rate << " r " << r << " R " << R);
        const double expected = std::exp(rate * R) * std::expm1(rate * r) / rate;
        CHECK(study::round_time_moments(r, rate, R).mean == Approx(expected).epsilon(1e-12));
        CHECK(study::stall_time_moments(R, rate).mean ==
              Approx(std::expm1(rate * R) / rate).epsilon(1e-12).margin(1e-300));
      }
}

TEST_CASE("revocations: mean and variance match an independent Monte Carlo") {
  // r = 1 s rounds, L = 0.05/s, R = 5 s: about 5% of rounds are hit, each costs ~5.7 s.
  const double r = 1.0, rate = 0.05, R = 5.0;
  const long long rounds = 200;
  const int runs = 4000;
  const auto t = study::expected_total_time(r, rounds, rate, R);
  std::mt19937_64 rng(12345);
  double sum = 0, sum2 = 0;
  for (int i = 0; i < runs; ++i) {
    const double x = simulate_rounds(rng, r, rounds, rate, R);
    sum += x;
    sum2 += x * x;
  }
  const double mean = sum / runs;
  const double var = sum2 / runs - mean * mean;
  const double z = study::normal_quantile_two_sided(0.999);
  INFO("closed form " << t.mean_s << " +- " << t.stddev_s << ", Monte Carlo " << mean << " sd "
                      << std::sqrt(var));
  CHECK(std::abs(mean - t.mean_s) <= t.half_width(z, runs));
  // The failure-free time is far outside that interval: the test can tell the difference.
  CHECK(std::abs(mean - t.failure_free_s) > 10 * t.half_width(z, runs));
  // Sample variance of a sum of 200 rounds: within 10% for 4000 runs.
  CHECK(std::sqrt(var) == Approx(t.stddev_s).epsilon(0.1));
  CHECK(t.expected_revocations == Approx(rate * t.mean_s));
}

TEST_CASE("normal quantiles") {
  CHECK(study::normal_quantile_two_sided(0.95) == Approx(1.959964).epsilon(1e-6));
  CHECK(study::normal_quantile_two_sided(0.99) == Approx(2.575829).epsilon(1e-6));
  CHECK(study::normal_quantile_two_sided(0.6827) == Approx(1.0).epsilon(1e-3));
}
