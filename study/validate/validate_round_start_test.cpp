// validate_round_start_test.cpp: how late a testbed run's rounds started past the instant its
// ranks agreed on (exec/trainer.hpp), carried from the measure JSON's result row into validate's
// report (study/validate/validate_support.hpp: parse_row, mean_over_runs, round_start_json and the
// summary's line); older measure JSON without the keys gives null, never 0.
#include <catch2/catch.hpp>

#include <cmath>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "study/validate/validate_support.hpp"

using nlohmann::json;
using tauplan::study::validation::EngineRow;
using tauplan::study::validation::mean_over_runs;
using tauplan::study::validation::parse_row;
using tauplan::study::validation::round_start_json;
using tauplan::study::validation::round_start_summary_json;
using tauplan::study::validation::round_start_text;

namespace {

/// A measure's JSON output as `tauplan measure` writes it over MPI: one result row with its
/// medians over rounds and, when `lateness` is set, the round-start keys.
std::string measure_json(double round_s, bool lateness, double median_s = 0, double max_s = 0) {
  json row = {{"round_s", round_s + 0.001},
              {"round_median_s", round_s},
              {"compute_median_s", 0.02},
              {"S_s", round_s - 0.02},
              {"rounds", 40},
              {"total_s", 40 * (round_s + 0.001)},
              {"reached_target", true},
              {"communicator", "mpi"}};
  if (lateness) {
    row["round_start"] = "agreed instant (clock offsets to rank 0)";
    row["round_start_lateness_median_s"] = median_s;
    row["round_start_lateness_max_s"] = max_s;
  }
  return json{{"results", json::array({row})}}.dump();
}

}  // namespace

TEST_CASE("validate: a measure's round-start lateness reaches the row's measured block") {
  const EngineRow m = parse_row(measure_json(0.1, true, 5.9e-8, 0.005), "measure a");
  CHECK(m.round_s == Approx(0.1));
  CHECK(m.round_start_lateness_median_s == Approx(5.9e-8));
  CHECK(m.round_start_lateness_max_s == Approx(0.005));
  const json j = round_start_json(m);
  CHECK(j.at("round_start_lateness_median_s").get<double>() == Approx(5.9e-8));
  CHECK(j.at("round_start_lateness_max_s").get<double>() == Approx(0.005));
  // Measured zero lateness stays a number (0 is a measurement, not a gap).
  const json zero = round_start_json(parse_row(measure_json(0.1, true, 0, 0), "measure z"));
  CHECK(zero.at("round_start_lateness_max_s").is_number());
}

TEST_CASE("validate: a measure without round-start keys (older data) gives null, never 0") {
  const EngineRow m = parse_row(measure_json(0.1, false), "measure old");
  CHECK(std::isnan(m.round_start_lateness_median_s));
  CHECK(std::isnan(m.round_start_lateness_max_s));
  const json j = round_start_json(m);
  CHECK(j.at("round_start_lateness_median_s").is_null());
  CHECK(j.at("round_start_lateness_max_s").is_null());
  // A summary over rows none of which report it: null, and a line that says so.
  const json s = round_start_summary_json({m, m});
  CHECK(s.at("max_s").is_null());
  CHECK(s.at("median_over_rows_s").is_null());
  CHECK(round_start_text(s).find("no row") != std::string::npos);
}

TEST_CASE(
    "validate: repeated runs' lateness: the mean median, the largest max, a gap spoils both") {
  const EngineRow a = parse_row(measure_json(0.1, true, 1e-4, 0.002), "run 1");
  const EngineRow b = parse_row(measure_json(0.12, true, 3e-4, 0.006), "run 2");
  const EngineRow both = mean_over_runs({a, b});
  CHECK(both.round_start_lateness_median_s == Approx(2e-4));
  CHECK(both.round_start_lateness_max_s == Approx(0.006));
  const EngineRow old = parse_row(measure_json(0.1, false), "run 3");
  const EngineRow gap = mean_over_runs({a, old});
  CHECK(std::isnan(gap.round_start_lateness_median_s));
  CHECK(std::isnan(gap.round_start_lateness_max_s));
  const EngineRow gap_first = mean_over_runs({old, b});
  CHECK(std::isnan(gap_first.round_start_lateness_max_s));
}

TEST_CASE("validate: the summary's line gives the largest lateness over rows and their median") {
  const std::vector<EngineRow> rows = {parse_row(measure_json(0.1, true, 1e-6, 0.002), "row 1"),
                                       parse_row(measure_json(0.1, true, 2e-6, 0.005), "row 2"),
                                       parse_row(measure_json(0.1, true, 1e-6, 0.001), "row 3"),
                                       parse_row(measure_json(0.1, false), "row 4 (older data)")};
  const json s = round_start_summary_json(rows);
  CHECK(s.at("max_s").get<double>() == Approx(0.005));
  CHECK(s.at("median_over_rows_s").get<double>() == Approx(0.002));
  CHECK(round_start_text(s) ==
        "rounds started within 5.000 ms of their agreed instant (median over rows 2.000 ms)\n");
}
