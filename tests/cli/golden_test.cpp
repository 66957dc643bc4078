// golden_test.cpp: predict, simulate and measure of the shipped experiments give what they gave
// before the Engine/Strategy/study redesign (commit 8dda4c8).
//
// The goldens (tests/cli/golden/*.json) were recorded by tests/cli/golden/make_golden.sh with
// that commit's binary; each case of tests/cli/golden/cases.txt is run again and compared as
// JSON. Compared exactly: every result field and the context, except what names the run (date,
// commit) and the machine (the platform file's folder, a measurement's cpu_steal: the share of
// the CPU time the hypervisor took while it ran, present and of this run only). Measured runs:
// everything that does not depend on the clock is compared exactly (strategy, K, tau, batch,
// rounds, steps, the accuracy and loss curve: training is deterministic for a seed and build);
// times are compared only for being there and positive. A deliberate change of behaviour re-records
// the goldens and says so in its commit.
#include <catch2/catch.hpp>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "tests/cli/run_command.hpp"

using nlohmann::json;
namespace fs = std::filesystem;

namespace {

/// The BLAS backend a result was made with ("" when it does not say).
std::string backend_of(const nlohmann::json& j) {
  const auto it = j.find("compute_backend");
  return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
}

const fs::path kGolden = fs::path(TAUPLAN_SOURCE_DIR) / "tests/cli/golden";

struct GoldenCase {
  std::string name;
  std::vector<std::string> args;
};

std::vector<GoldenCase> cases() {
  std::ifstream in(kGolden / "cases.txt");
  std::vector<GoldenCase> out;
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream words(line);
    GoldenCase c;
    words >> c.name;
    for (std::string w; words >> w;)
      c.args.push_back(w);
    c.args.push_back("--json");
    out.push_back(c);
  }
  return out;
}

/// Clock-dependent fields of a measured row (and of its workers and curve points).
const std::set<std::string> kMeasuredTimes = {
    "round_s", "compute_s",   "comm_s",       "total_s",          "speedup",        "S_s",   "C_s",
    "wall_s",  "eval_wall_s", "measured_C_s", "compute_median_s", "round_median_s", "time_s"};

/// Replaces every clock-dependent number by whether it is a positive number (or zero for a
/// collective-free comm), so that the rest compares exactly.
void strip_times(json& j) {
  if (j.is_object()) {
    for (auto& [key, value] : j.items()) {
      if (kMeasuredTimes.count(key) && value.is_number())
        value = value.get<double>() >= 0 ? "timed" : "negative";
      else
        strip_times(value);
    }
  } else if (j.is_array()) {
    for (auto& item : j)
      strip_times(item);
  }
}

/// With another BLAS backend (kernels picked for another CPU) the floating-point sums of
/// training run in another order: losses then differ in the last digits and an accuracy by a
/// test sample or two. Exact comparison is for the backend the golden was recorded with.
void round_curves(json& j) {
  for (auto& row : j["results"])
    if (row.contains("accuracy_curve"))
      for (auto& point : row["accuracy_curve"]) {
        point["accuracy"] = std::round(point["accuracy"].get<double>() * 100) / 100;
        point["train_loss"] = std::round(point["train_loss"].get<double>() * 100) / 100;
      }
  for (auto& row : j["results"])
    for (const char* key : {"final_accuracy"})
      if (row.contains(key)) row[key] = std::round(row[key].get<double>() * 100) / 100;
}

json normalised(json j, bool measured, bool same_backend = true) {
  json& context = j["context"];
  context.erase("date");
  context.erase("commit");
  if (!same_backend) {
    context.erase("compute_backend");
    round_curves(j);
  }
  if (context.contains("platform_file"))
    context["platform_file"] =
        fs::path(context["platform_file"].get<std::string>()).filename().string();
  if (measured) {
    strip_times(j["results"]);
    // The hypervisor's share of this run's CPU time (exec/cpu_steal.hpp): said, not compared.
    context.erase("cpu_steal");
  }
  return j;
}

}  // namespace

TEST_CASE("golden: predict, simulate and measure of the shipped experiments are unchanged") {
  const std::vector<GoldenCase> all = cases();
  REQUIRE(all.size() >= 19);
  for (const GoldenCase& c : all) {
    INFO("case " << c.name << ": tauplan " << [&] {
      std::string s;
      for (const auto& a : c.args)
        s += a + " ";
      return s;
    }());
    const bool measured = c.args.front() == "measure";
    const auto result = tauplan::test::run_tauplan(c.args, TAUPLAN_SOURCE_DIR, 300);
    // A measurement that stops before its target answers with exit code 3.
    if (measured)
      CHECK((result.exit_code == 0 || result.exit_code == 3));
    else
      REQUIRE(result.exit_code == 0);
    std::ifstream in(kGolden / (c.name + ".json"));
    REQUIRE(in.good());
    const json golden = json::parse(in);
    const json run = json::parse(result.out);
    const bool same_backend = backend_of(golden["context"]) == backend_of(run["context"]);
    if (!same_backend)
      WARN("compute backend differs from the golden's (" << backend_of(run["context"])
                                                         << "): curves compared to 2 decimals");
    const json expected = normalised(golden, measured, same_backend);
    if (measured) {  // a measurement says the steal it ran under (the goldens predate it)
      const std::string steal = run["context"].value("cpu_steal", std::string());
      CHECK((steal.find("% of ") != std::string::npos || steal.rfind("unknown", 0) == 0));
    }
    const json actual = normalised(run, measured, same_backend);
    const json diff = json::diff(expected, actual);
    INFO("JSON patch from the golden to this run: " << diff.dump());
    CHECK(diff.empty());
  }
}
