// calibrate_test.cpp: `tauplan calibrate` end to end: a quick calibration, its XML used as a
// platform by predict, and broken calibration files rejected with one line and exit 2.
#include <catch2/catch.hpp>

#include <algorithm>
#include <fstream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "tests/cli/run_command.hpp"

using tauplan::test::run_tauplan;
using tauplan::test::write_temp_file;

namespace {

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// `text` with every occurrence of `from` replaced by `to`.
std::string replace_all(std::string text, const std::string& from, const std::string& to) {
  for (std::size_t at = text.find(from); at != std::string::npos; at = text.find(from, at))
    text.replace(at, from.size(), to), at += to.size();
  return text;
}

void expect_bad_calibration(const std::string& file, const std::string& fragment) {
  const auto r = run_tauplan({"calibrate", "--check", file});
  INFO("stderr: " << r.err);
  CHECK(r.exit_code == 2);
  CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
  CHECK(r.err.find(fragment) != std::string::npos);
  CHECK(r.out.empty());
}

}  // namespace

TEST_CASE("calibrate writes a platform that predict loads, and --check reads it back") {
  const std::string out = write_temp_file("this-machine.xml", "");
  const auto r = run_tauplan({"calibrate", "--out", out, "--workers", "4", "--steps", "8",
                              "--floats", "5e4,1e5,2e5,2.3e5", "--json"},
                             "", 60);
  INFO("stderr: " << r.err);
  REQUIRE(r.exit_code == 0);
  const auto j = nlohmann::json::parse(r.out);
  CHECK(j["workers"] == 4);
  CHECK(j["per_sample_s"].get<double>() > 0);
  CHECK(j["beta_Bps"].get<double>() > 0);
  CHECK(j["step_overhead_s"].get<double>() >= 0);
  CHECK(j["compute"]["r2"].get<double>() >= 0);
  CHECK(j["compute"]["r2"].get<double>() <= 1);
  CHECK(j["compute"]["residuals"].size() == 6);
  CHECK(j["comm"]["residuals"].size() == 4);
  CHECK(j["speed_flops"].get<double>() ==
        Approx(j["flop_per_sample"].get<double>() / j["per_sample_s"].get<double>()));

  const std::string xml = read_text(out);
  CHECK(xml.find("<host id=\"h3\"") != std::string::npos);
  CHECK(xml.find("<host id=\"h4\"") == std::string::npos);
  CHECK(xml.find("<host id=\"reducer\"") != std::string::npos);

  const auto p = run_tauplan(
      {"predict", "--platform", out, "--workload", "fashion-mlp", "--workers", "4", "--json"});
  INFO("predict stderr: " << p.err);
  CHECK(p.exit_code == 0);
  CHECK_NOTHROW(nlohmann::json::parse(p.out));

  const auto c = run_tauplan({"calibrate", "--check", out, "--json"});
  INFO("check stderr: " << c.err);
  REQUIRE(c.exit_code == 0);
  const auto cj = nlohmann::json::parse(c.out);
  CHECK(cj["workers"] == 4);
  CHECK(cj["step_overhead_s"].get<double>() == Approx(j["step_overhead_s"].get<double>()));

  {  // a step_overhead_s that is not a number
    const std::string text = read_text(out);
    const auto at = text.find("<prop id=\"step_overhead_s\" value=\"");
    REQUIRE(at != std::string::npos);
    const auto value = at + std::string("<prop id=\"step_overhead_s\" value=\"").size();
    const std::string broken = text.substr(0, value) + "soon" + text.substr(text.find('"', value));
    expect_bad_calibration(write_temp_file("nan.xml", broken),
                           "h0: step_overhead_s: expected a number of seconds >= 0, got 'soon'");
  }
  {  // an R^2 outside [0, 1]
    const std::string text = read_text(out);
    const auto at = text.find("<prop id=\"r2_comm\" value=\"");
    REQUIRE(at != std::string::npos);
    const auto value = at + std::string("<prop id=\"r2_comm\" value=\"").size();
    const std::string broken = text.substr(0, value) + "1.5" + text.substr(text.find('"', value));
    expect_bad_calibration(write_temp_file("r2.xml", broken),
                           "h0: r2_comm: expected a number in [0, 1], got '1.5'");
  }
  {  // a missing prop
    const std::string broken =
        replace_all(read_text(out), "<prop id=\"date\"", "<prop id=\"not-a-date\"");
    expect_bad_calibration(write_temp_file("nodate.xml", broken),
                           "h0: date: expected a calibration prop");
  }
}

TEST_CASE("a platform that is not a calibration is rejected by calibrate --check") {
  expect_bad_calibration(TAUPLAN_SOURCE_DIR "/platforms/test-crossbar-4.xml",
                         "h0: step_overhead_s: expected a calibration prop");
}

TEST_CASE("calibrate: bad options exit 2 with one line") {
  const auto r = run_tauplan({"calibrate", "--device", "tpu"});
  CHECK(r.exit_code == 2);
  CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
  CHECK(r.err.find("device: expected cpu") != std::string::npos);
  const auto w = run_tauplan({"calibrate", "--workers", "0"});
  CHECK(w.exit_code == 2);
  CHECK(w.err.find("workers: expected a whole number >= 1") != std::string::npos);
}

TEST_CASE("calibrate --network: bad options exit 2 with one line naming the option") {
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"calibrate", "--network", "a,b", "--flow-seconds", "0.5"},
       "--flow-seconds: expected seconds from 1 to 60"},
      {{"calibrate", "--network", "a,b", "--pings", "1"}, "--pings: expected a whole number"},
      {{"calibrate", "--network", "a,b", "--check-pairs", "-1"},
       "--check-pairs: expected a whole number"},
      {{"calibrate", "--network", "a,b", "--mpi", "--servers", "c"},
       "--servers: expected hosts among those probed, got c"},
      {{"calibrate", "--network", "a,a", "--mpi"}, "--network: expected distinct host names"}};
  for (const auto& [args, message] : cases) {
    const auto r = run_tauplan(args);
    INFO(r.err);
    CHECK(r.exit_code == 2);
    CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
    CHECK(r.err.find(message) != std::string::npos);
  }
}
