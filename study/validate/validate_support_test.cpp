// validate_support_test.cpp: the arithmetic validate applies to its measurements: repeated testbed
// runs of one configuration combined into one row (study/validate/validate_support.hpp,
// mean_over_runs), and an engine's errors and their summary, the one schema of both settings
// (EngineSeries), against numbers worked out by hand.
#include <catch2/catch.hpp>

#include <cmath>
#include <stdexcept>
#include <vector>

#include "study/validate/validate_support.hpp"

using tauplan::study::validation::EngineRow;
using tauplan::study::validation::EngineSeries;
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

TEST_CASE("an engine's errors: per row against the measurement, summarised over the rows") {
  EngineSeries series{"analytic", {}, {}, {}, {}, {}, {}};
  // Row 1: a round of 1.1 s predicted (0.8 compute + 0.3 comm) against 1.0 measured (0.6 +
  // 0.4); 100 rounds leave-one-out and 120 leave-group-out against 90 s measured to the target.
  const nlohmann::json first =
      series.add(run(0.8, 0.3, 1.1, 0, 0), run(0.6, 0.4, 1.0, 0, 0), 100, 120, 90.0, true);
  CHECK(first["error_round"].get<double>() == Approx(0.1));
  CHECK(first["error_compute"].get<double>() == Approx(0.8 / 0.6 - 1));
  CHECK(first["error_comm"].get<double>() == Approx(-0.25));
  CHECK(first["time_to_target_loo_s"].get<double>() == Approx(110.0));
  CHECK(first["error_time_to_target_loo"].get<double>() == Approx(110.0 / 90 - 1));
  CHECK(first["error_time_to_target_group_out"].get<double>() == Approx(132.0 / 90 - 1));
  // Row 2: one worker (no comm to compare), not contended, the target not reached.
  const nlohmann::json second =
      series.add(run(0.5, 0, 0.5, 0, 0), run(0.5, 0, 0.4, 0, 0), 10, 10, kNaN, false, false);
  CHECK(second["error_round"].get<double>() == Approx(0.25));
  CHECK(second["error_comm"].is_null());
  CHECK(second["error_time_to_target_loo"].is_null());
  // Row 3: contended, 20% fast.
  series.add(run(1, 1, 1.6, 0, 0), run(1, 1, 2.0, 0, 0), 10, 10, 20.0, true);
  REQUIRE(series.round.size() == 3);
  CHECK(series.round_contended.size() == 2);
  const nlohmann::json summary = series.summary_json();
  CHECK(summary["median_abs_error_round"].get<double>() == Approx(0.2));  // of 0.1, 0.25, 0.2
  CHECK(summary["max_abs_error_round"].get<double>() == Approx(0.25));
  CHECK(summary["median_abs_error_round_contended"].get<double>() == Approx(0.15));
  CHECK(summary["max_abs_error_comm"].get<double>() == Approx(0.25));  // the NaN row left out
  CHECK(summary["median_abs_error_time_to_target_loo"].get<double>() ==
        Approx((std::abs(110.0 / 90 - 1) + 0.2) / 2));
  for (const char* key :
       {"median_abs_error_round", "max_abs_error_round", "median_abs_error_round_contended",
        "max_abs_error_round_contended", "median_abs_error_compute", "max_abs_error_compute",
        "median_abs_error_comm", "max_abs_error_comm", "median_abs_error_time_to_target_loo",
        "max_abs_error_time_to_target_loo", "median_abs_error_time_to_target_group_out",
        "max_abs_error_time_to_target_group_out"})
    CHECK(summary.contains(key));
  CHECK(summary.size() == 12);
  // No row: every entry null, never 0.
  CHECK(EngineSeries{}.summary_json()["median_abs_error_round"].is_null());
}

TEST_CASE("machine_collective: one synchronous worker combines nothing, a server thread stays") {
  using tauplan::study::validation::machine_collective;
  // The threads communicator returns at once for one buffer (the mean of one is itself), so the
  // row's plan must move nothing: a ring of one worker has no step.
  CHECK(machine_collective("sync", 1) == "ring");
  CHECK(machine_collective("local-sgd", 1) == "ring");
  CHECK(machine_collective("single", 1) == "ring");
  // From two workers on the calibrated combine is the one reducer's T(K, S).
  CHECK(machine_collective("sync", 2) == "ps");
  CHECK(machine_collective("local-sgd", 2) == "ps");
  // async-ps runs a real server thread even for one worker: its push and pull are messages.
  CHECK(machine_collective("async-ps", 1) == "ps");
  CHECK(machine_collective("async-ps", 2) == "ps");
}

TEST_CASE("steal summary: unknown rows left out, the median and the largest of the rest") {
  using tauplan::study::validation::steal_summary_json;
  using tauplan::study::validation::steal_text;
  // Rows at 1%, 2%, 12% and one unknown (-1); network calibrations at 3% and 15%.
  const nlohmann::json s = steal_summary_json({0.01, -1, 0.12, 0.02}, {0.03, 0.15});
  CHECK(s.at("rows_known").get<long>() == 3);
  CHECK(s.at("median_rows").get<double>() == Approx(0.02));
  CHECK(s.at("max_rows").get<double>() == Approx(0.12));
  CHECK(s.at("rows_above_warning").get<long>() == 1);  // 12% > 5%
  CHECK(s.at("max_network_calibrations").get<double>() == Approx(0.15));
  CHECK(steal_text(s) ==
        "steal: the hypervisor took 2.0% of the CPU time during a row's measurement (median over "
        "rows; largest 12.0%, 1 of 3 rows above 5%; network calibrations up to 15.0%)\n");
  // Nothing known (a replay of runs recorded before steal was): said, never 0%.
  const nlohmann::json none = steal_summary_json({-1, -1}, {});
  CHECK(none.at("median_rows").is_null());
  CHECK(none.at("max_network_calibrations").is_null());
  CHECK(steal_text(none) ==
        "steal: unknown during the rows (not recorded, or no /proc/stat); network calibrations up "
        "to unknown\n");
  CHECK(steal_text(steal_summary_json({-1}, {0.2})).find("network calibrations up to 20.0%") !=
        std::string::npos);
}
