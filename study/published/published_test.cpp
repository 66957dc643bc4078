// published_test.cpp: published training runs beside our predictions
// (study/published/published.hpp): each run's error is (predicted - published) / published; the
// medians are those of the rows' |error| over every run and over the runs other than the
// calibration's own configuration; a fitted calibration agrees with the committed profile (no note)
// and writes profile.json, a runs file timed by the platform's profile fits nothing and holds every
// run out; --out writes the same table, CSV and JSON; the platform resolves beside the runs file
// first, a missing one is one InputError naming the runs file and key.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

#include "study/common/files.hpp"
#include "study/common/study_test_support.hpp"
#include "study/published/published.hpp"

using namespace tauplan;
using nlohmann::json;
namespace fs = std::filesystem;

namespace {  // the rows of a comparison, and runs files made from megatron.yaml

/// The median of |error| over the rows with `held_out` (or all rows), computed here.
double median_abs(const json& runs, bool only_held_out) {
  std::vector<double> a;
  for (const json& r : runs)
    if (!only_held_out || !r.at("calibration_configuration").get<bool>())
      a.push_back(std::fabs(r.at("error").get<double>()));
  std::sort(a.begin(), a.end());
  const size_t m = a.size() / 2;
  return a.size() % 2 ? a[m] : 0.5 * (a[m - 1] + a[m]);
}

/// Each row's error is its prediction against the published number; returns the rows.
const json& checked_runs(const study::PublishedOutcome& out) {
  const json& runs = out.document.at("runs");
  for (const json& r : runs) {
    CAPTURE(r.at("run").get<std::string>());
    const double published = r.at("published").get<double>();
    CHECK(published > 0);
    CHECK(r.at("error").get<double>() ==
          Approx((r.at("predicted").get<double>() - published) / published).epsilon(1e-12));
  }
  CHECK(std::count(out.csv.begin(), out.csv.end(), '\n') == static_cast<long>(runs.size()) + 1);
  CHECK(out.document.at("median_abs_error") == out.median_abs_error);
  CHECK(out.document.at("median_abs_error_independent") == out.median_abs_error_independent);
  return runs;
}

std::string megatron_text() {
  return study::read_text(test::source_path("experiments/parallelism/megatron.yaml"));
}

std::string with_platform(const std::string& runs, const std::string& platform) {
  const std::string line = "\nplatform: selene-a100\n";
  const auto at = runs.find(line);
  REQUIRE(at != std::string::npos);
  return runs.substr(0, at) + "\nplatform: " + platform + "\n" + runs.substr(at + line.size());
}

}  // namespace

TEST_CASE("published: the default runs file is the tree's megatron.yaml, or under the env's") {
  {
    const test::ScopedEnv env("TAUPLAN_EXPERIMENTS_DIR", std::string("/elsewhere"));
    CHECK(study::default_published_runs() == "/elsewhere/parallelism/megatron.yaml");
  }
  const test::ScopedEnv unset("TAUPLAN_EXPERIMENTS_DIR", std::nullopt);
  CHECK(fs::equivalent(study::default_published_runs(),
                       test::source_path("experiments/parallelism/megatron.yaml")));
}

TEST_CASE("published: Megatron's runs, their errors and medians, the fit and what --out writes") {
  const test::Scratch scratch("published-megatron");
  study::PublishedRequest request;
  request.runs = test::source_path("experiments/parallelism/megatron.yaml");
  request.out = scratch.path("out");
  const study::PublishedOutcome out = study::run_published(request);
  const json& runs = checked_runs(out);
  const auto own = std::count_if(runs.begin(), runs.end(), [](const json& r) {
    return r.at("calibration_configuration").get<bool>();
  });
  CHECK(own == 2);  // the 22B runs of Table 5
  CHECK(out.median_abs_error == Approx(median_abs(runs, false)).epsilon(1e-12));
  CHECK(out.median_abs_error_independent == Approx(median_abs(runs, true)).epsilon(1e-12));
  // The committed compute profile is the fit: no note.
  CHECK(out.notes.empty());
  const json& fit = out.document.at("fit");
  CHECK(fit.at("points").size() == 5);  // Table 4's five layer settings
  CHECK(fit.at("efficiency").get<double>() > 0);
  CHECK(fit.at("efficiency").get<double>() <= 1);
  for (const json& r : runs)
    CHECK(out.table.find("| " + r.at("run").get<std::string>()) != std::string::npos);
  // --out: the same table, CSV and JSON, and the fitted profile.
  CHECK(study::read_text(scratch.path("out/table.md")) == out.table);
  CHECK(study::read_text(scratch.path("out/table.csv")) == out.csv);
  CHECK(json::parse(study::read_text(scratch.path("out/published.json"))) == out.document);
  const json profile = json::parse(study::read_text(scratch.path("out/profile.json")));
  CHECK(profile.at("peak_flops").get<double>() == fit.at("peak_flops").get<double>());
}

TEST_CASE("published: runs timed by the platform's profile fit nothing and are all held out") {
  const test::Scratch scratch("published-h100");
  study::PublishedRequest request;
  request.runs = test::source_path("experiments/parallelism/h100.yaml");
  request.out = scratch.path("out");
  const study::PublishedOutcome out = study::run_published(request);
  const json& runs = checked_runs(out);
  CHECK(out.document.at("fit").at("runs_fitted") == 0);
  CHECK(out.document.at("fit").at("profile") == "platform");
  for (const json& r : runs)
    CHECK_FALSE(r.at("calibration_configuration").get<bool>());
  CHECK(out.median_abs_error_independent == Approx(median_abs(runs, false)).epsilon(1e-12));
  CHECK(out.median_abs_error_independent == out.median_abs_error);
  CHECK(fs::exists(scratch.path("out/table.md")));
  CHECK_FALSE(fs::exists(scratch.path("out/profile.json")));
}

TEST_CASE("published: the platform resolves beside the runs file, a missing one names the key") {
  const test::Scratch scratch("published-platform");
  scratch.write("here.xml", study::read_text(test::source_path("platforms/selene-a100.xml")));
  study::PublishedRequest request;
  request.runs = scratch.write("runs.yaml", with_platform(megatron_text(), "here.xml"));
  const study::PublishedOutcome beside = study::run_published(request);
  CHECK(beside.document.at("context").at("platform_file") == scratch.path("here.xml"));
  CHECK(beside.median_abs_error > 0);

  request.runs = scratch.write("missing.yaml", with_platform(megatron_text(), "nowhere"));
  const std::string error = test::input_error([&] { study::run_published(request); });
  CHECK(test::names_file_and_key(error, request.runs, "platform"));
  CHECK(error.find("got 'nowhere' (not found)") != std::string::npos);
}
