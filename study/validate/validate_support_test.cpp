// validate_support_test.cpp: the arithmetic validate applies to its measurements: repeated testbed
// runs of one configuration combined into one row (study/validate/validate_support.hpp,
// mean_over_runs).
#include <catch2/catch.hpp>

#include <cmath>
#include <stdexcept>
#include <vector>

#include "study/validate/validate_support.hpp"

using tauplan::study::validation::EngineRow;
using tauplan::study::validation::kNaN;
using tauplan::study::validation::mean_over_runs;

namespace {

EngineRow run(double compute_s, double comm_s, double round_s, double rounds, double total_s,
              bool reached = true) {
  EngineRow r;
  r.compute_s = compute_s;
  r.comm_s = comm_s;
  r.round_s = round_s;
  r.rounds = rounds;
  r.total_s = total_s;
  r.reached = reached;
  return r;
}

}  // namespace

TEST_CASE("mean_over_runs: one run is returned unchanged, none is refused") {
  const EngineRow one = run(0.01, 0.2, 0.21, 30, 6.5);
  const EngineRow out = mean_over_runs({one});
  CHECK(out.round_s == one.round_s);
  CHECK(out.total_s == one.total_s);
  CHECK(out.rounds == one.rounds);
  CHECK_THROWS_AS(mean_over_runs({}), std::invalid_argument);
}

TEST_CASE("mean_over_runs: the mean of the runs' times, the first run's rounds") {
  // Two jobs' unequal split: a run at 0.20 s a round and one at 0.15 s (means 0.175 s).
  const EngineRow out =
      mean_over_runs({run(0.02, 0.18, 0.20, 30, 6.0), run(0.01, 0.14, 0.15, 30, 4.5)});
  CHECK(out.compute_s == Approx(0.015));
  CHECK(out.comm_s == Approx(0.16));
  CHECK(out.round_s == Approx(0.175));
  CHECK(out.rounds == 30);
  CHECK(out.reached);
  // Time to target: the first run's rounds x the mean round to the target (6/30, 4.5/30).
  CHECK(out.total_s == Approx(30 * (0.2 + 0.15) / 2));
}

TEST_CASE("mean_over_runs: runs that took different rounds average their mean round") {
  const EngineRow out =
      mean_over_runs({run(0.01, 0.1, 0.11, 20, 2.0), run(0.01, 0.1, 0.11, 40, 6.0)});
  // Mean round to the target: (2/20 + 6/40) / 2 = 0.125 s, times run 1's 20 rounds.
  CHECK(out.total_s == Approx(20 * 0.125));
  CHECK(out.rounds == 20);
}

TEST_CASE("mean_over_runs: a run that missed the target or lacks a time spoils the mean") {
  const EngineRow missed =
      mean_over_runs({run(0.01, 0.1, 0.11, 20, 2.0), run(0.01, 0.1, 0.11, 50, 9.0, false)});
  CHECK_FALSE(missed.reached);
  CHECK(std::isnan(missed.total_s));
  CHECK(missed.round_s == Approx(0.11));
  const EngineRow gap =
      mean_over_runs({run(0.01, 0.1, 0.11, 20, 2.0), run(0.01, kNaN, 0.12, 20, 2.2)});
  CHECK(std::isnan(gap.comm_s));
  CHECK(gap.round_s == Approx(0.115));
}
