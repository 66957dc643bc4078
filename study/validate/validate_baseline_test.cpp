// validate_baseline_test.cpp: the bottleneck-link baseline as validate reports it
// (study/validate/validate_baseline.hpp): a parameter server lowered as the simulator lowers it,
// its row's JSON, and the summary's comparison of each engine with the baseline (JSON and text).
#include <catch2/catch.hpp>

#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "model/inputs/platform.hpp"
#include "study/validate/validate_baseline.hpp"
#include "study/validate/validate_support.hpp"

using namespace tauplan;
using study::validation::kNaN;

TEST_CASE("validate baseline: a parameter server's pushes and pulls share the server's link") {
  // Crossbar of 3 hosts (private split-duplex links of 1e8 B/s, 1 ms): workers h0, h1 and the
  // server h2. Push: both workers' bytes on h2's down link; pull: on its up link.
  const model::Platform p = model::make_crossbar_platform(
      {1e9, 1e9, 1e9}, 1e8, 1e-3, 0,
      {model::HostRole::Worker, model::HostRole::Worker, model::HostRole::Server});
  const double n = 1e6;
  const model::CollectiveCall call{model::CollectivePayload::Gradients, n, {0, 1}, {2}};
  const model::BottleneckBaseline b = study::validation::collective_baseline("ps", {call}, p);
  REQUIRE(b.stages.size() == 2);
  CHECK(b.comm_s == Approx(2 * (2 * n / 1e8 + 2e-3)).epsilon(1e-12));
  CHECK(b.contended());
  const nlohmann::json row = study::validation::baseline_row_json(b, p, 0.05, 0.25);
  CHECK(row.at("comm_s").get<double>() == Approx(b.comm_s));
  CHECK(row.at("round_s").get<double>() == Approx(0.05));
  CHECK(row.at("error_round").get<double>() == Approx(0.25));
  CHECK(row.at("contended").get<bool>());
  CHECK(row.at("stages").size() == 2);
  CHECK(row.at("stages")[0].at("phase") == "push");
  CHECK(row.at("stages")[0].at("most_flows_on_a_link") == 2);
  // A ring of two over the same crossbar: one flow per link direction, not contended.
  const model::CollectiveCall ring{model::CollectivePayload::Gradients, n, {0, 1}, {}};
  CHECK_FALSE(study::validation::collective_baseline("ring", {ring}, p).contended());
  // With a copy of it at once on hosts 1 and 2, h1's up and down links carry a flow of each.
  const model::CollectiveCall copy{model::CollectivePayload::Gradients, n, {1, 2}, {}};
  CHECK(study::validation::collective_baseline("ring", {ring, copy}, p).contended());
}

TEST_CASE("validate baseline: the summary says by how much each engine beats the baseline") {
  // Four rows, the last two contended; the baseline misses by 40% everywhere.
  const std::vector<double> baseline = {0.4, -0.4, 0.4, -0.4};
  const std::vector<bool> contended = {false, false, true, true};
  const std::vector<study::validation::EngineErrors> engines = {
      {"analytic", {0.01, -0.01, 0.3, -0.3}}, {"simgrid", {0.02, 0.02, 0.04, -0.04}}};
  const nlohmann::json v =
      study::validation::versus_baseline_json(baseline, contended, engines, "nominal: test");
  CHECK(v.at("rows") == 4);
  CHECK(v.at("contended_rows") == 2);
  const nlohmann::json& base = v.at("bottleneck_baseline");
  CHECK(base.at("median_abs_error_round").get<double>() == Approx(0.4));
  CHECK(base.at("median_abs_error_round_contended").get<double>() == Approx(0.4));
  const nlohmann::json& a = v.at("engines").at("analytic");
  CHECK(a.at("median_abs_error_round").get<double>() == Approx(0.155));
  CHECK(a.at("beats_baseline_by").get<double>() == Approx(0.4 / 0.155));
  CHECK(a.at("beats_baseline_by_contended").get<double>() == Approx(0.4 / 0.3));
  const nlohmann::json& s = v.at("engines").at("simgrid");
  CHECK(s.at("beats_baseline_by_contended").get<double>() == Approx(10));
  const std::string text = study::validation::versus_baseline_text(v);
  CHECK(text.find("bottleneck baseline round |error| median 40.0%") != std::string::npos);
  CHECK(text.find("simgrid       beats the baseline by 13.33x on all rows") != std::string::npos);
  CHECK(text.find("by 10.00x on contended rows") != std::string::npos);
}

TEST_CASE("validate baseline: rows without a baseline and engines without errors count as n/a") {
  const std::vector<double> baseline = {kNaN, 0.2};
  const std::vector<bool> contended = {true, false};
  const nlohmann::json v = study::validation::versus_baseline_json(
      baseline, contended, {{"analytic", {0.5, 0.0}}, {"simgrid", {kNaN, kNaN}}}, "nominal: test");
  // Only the second row has a baseline: no contended row is left.
  CHECK(v.at("rows") == 1);
  CHECK(v.at("contended_rows") == 0);
  CHECK(v.at("bottleneck_baseline").at("median_abs_error_round_contended").is_null());
  // An engine exact on every row beats it by no finite factor: null, as for a missing median.
  CHECK(v.at("engines").at("analytic").at("beats_baseline_by").is_null());
  CHECK(v.at("engines").at("simgrid").at("median_abs_error_round").is_null());
  CHECK(study::validation::versus_baseline_text(v).find("by n/a on all rows") != std::string::npos);
}
