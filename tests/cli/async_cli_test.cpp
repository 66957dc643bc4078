// async_cli_test.cpp: async-ps and time-budget local SGD through the tauplan executable: their bad
// inputs (one line, exit 2: a staleness bound < 0, a budget <= 0 or shorter than one step of
// every worker, more servers than server hosts, a server host without a speed), and the rows
// predict and simulate print for them.
#include <catch2/catch.hpp>

#include <algorithm>

#include <nlohmann/json.hpp>

#include "tests/cli/expect_bad_input.hpp"
#include "tests/cli/run_command.hpp"

using tauplan::test::expect_bad_input;
using tauplan::test::run_tauplan;
using tauplan::test::write_temp_file;

namespace {

const std::string kTestPs = TAUPLAN_SOURCE_DIR "/platforms/test-ps.xml";

std::vector<std::string> async_job(std::vector<std::string> extra) {
  std::vector<std::string> args = {"predict",     "--platform", kTestPs, "--workload",
                                   "fashion-mlp", "--workers",  "4",     "--strategies",
                                   "async-ps",    "--batch",    "32"};
  args.insert(args.end(), extra.begin(), extra.end());
  return args;
}

/// A worker h0 and a server ps0 on one link; `server_speed` is the server's speed attribute
/// (` speed="0f"`, or "" for none).
std::string server_platform(const std::string& server_speed) {
  return R"(<?xml version='1.0'?>
<!DOCTYPE platform SYSTEM "https://simgrid.org/simgrid.dtd">
<platform version="4.1">
  <zone id="world" routing="Full">
    <host id="h0" speed="1Tf"><prop id="role" value="worker"/></host>
    <host id="ps0")" +
         server_speed + R"(><prop id="role" value="server"/></host>
    <link id="l" bandwidth="1GBps" latency="10us"/>
    <route src="h0" dst="ps0"><link_ctn id="l"/></route>
  </zone>
</platform>
)";
}

}  // namespace

TEST_CASE("async-ps: a staleness bound < 0 is bad input") {
  expect_bad_input(async_job({"--staleness-bound", "-1"}),
                   "command line: --staleness_bound: expected a whole number between 0");
  const auto f = write_temp_file(
      "stale.yaml", "platform: " + kTestPs + "\nstrategies: [async-ps]\nstaleness_bound: -2\n");
  expect_bad_input({"predict", f},
                   f + ": staleness_bound: expected a whole number between 0 and 1e+06, got '-2'");
}

TEST_CASE("async-ps: more servers than the platform's server hosts is bad input") {
  expect_bad_input(async_job({"--servers", "2"}),
                   "command line: --servers: expected between 1 and 1 (the server hosts, prop "
                   "role=server, of");
  // A platform without any server host.
  expect_bad_input({"predict", "--platform", TAUPLAN_SOURCE_DIR "/platforms/test-crossbar-4.xml",
                    "--strategies", "async-ps", "--workers", "2"},
                   ": servers: expected between 1 and 0");
}

TEST_CASE("async-ps: a server host without a speed is bad input") {
  // In a platform file: SimGrid requires a speed, the loader a positive one.
  const auto xml = write_temp_file("nospeed.xml", server_platform(""));
  expect_bad_input(
      {"predict", "--platform", xml, "--strategies", "async-ps", "--workers", "1"},
      xml + ": line 6: <host id=\"ps0\"> speed: expected a value (required), got none");
  const auto zero = write_temp_file("zerospeed.xml", server_platform(" speed=\"0f\""));
  expect_bad_input(
      {"predict", "--platform", zero, "--strategies", "async-ps", "--workers", "1"},
      zero + ": line 6: <host id=\"ps0\"> speed: expected a value in [1, 1e+24] flop/s, got '0f'");
  // In a planning inventory: the server pool's speed has no silent default for async-ps.
  const auto inventory = write_temp_file("async-inventory.yaml", R"(workload: resnet-50
target: {convergence: critical-batch, min_steps: 1000, critical_batch: 1000}
node_types:
  - {name: v100, gpu_model: V100-SXM2-16GB, nodes: 2, price_per_hour: 2.86}
servers: {max: 1, price_per_hour: 0.19}
search: {strategies: [async-ps], servers: [1]}
)");
  expect_bad_input({"plan", inventory},
                   inventory +
                       ": servers.speed_flops: expected the parameter servers' processing "
                       "speed in flop/s");
}

TEST_CASE("local-sgd: a round budget <= 0 or shorter than one step of every worker") {
  const std::vector<std::string> local = {
      "predict",    "--platform", TAUPLAN_SOURCE_DIR "/platforms/test-hetero-4.xml",
      "--workload", "resnet-50",  "--strategies",
      "local-sgd",  "--batch",    "32",
      "--workers",  "4"};
  auto with = [&](const std::string& budget) {
    auto args = local;
    args.insert(args.end(), {"--round-budget-s", budget});
    return args;
  };
  expect_bad_input(with("0"), "round_budget_s: expected seconds between 1e-09 and 1e+09, got '0'");
  expect_bad_input(with("-1s"), "round_budget_s: expected seconds between 1e-09");
  // resnet-50 at b = 32 is 0.785 Tflop: 0.785 s on the slowest host (h0, 1 Tflop/s).
  expect_bad_input(with("0.5s"),
                   "round_budget_s: expected at least one step of every worker (0.785123 s, a "
                   "step of the slowest worker, host h0), got 0.5 s");
  const auto ok = run_tauplan(with("1s"));
  CHECK(ok.exit_code == 0);
}

TEST_CASE("async-ps and time-budget rows: throughput, staleness and local steps") {
  auto args = async_job({"--json", "--staleness-bound", "2"});
  const auto r = run_tauplan(args);
  REQUIRE(r.exit_code == 0);
  const auto row = nlohmann::json::parse(r.out)["results"][0];
  CHECK(row["strategy"] == "async-ps");
  CHECK(row["engine"] == "analytic");
  for (const char* key :
       {"updates_per_s", "bottleneck", "staleness_mean", "staleness_max", "staleness_bound",
        "staleness_version_bound", "staleness_charged", "servers"})
    CHECK(row.contains(key));
  CHECK(row["total_s"].get<double>() ==
        Approx(row["round_s"].get<double>() * row["rounds"].get<double>()));
  args[0] = "simulate";
  args.insert(args.end(), {"--sim-rounds", "200"});
  const auto s = run_tauplan(args);
  REQUIRE(s.exit_code == 0);
  const auto srow = nlohmann::json::parse(s.out)["results"][0];
  CHECK(srow["engine"] == "simgrid");
  CHECK(srow["staleness_max"].get<double>() <= srow["staleness_version_bound"].get<double>());
  CHECK(srow["round_s"].get<double>() == Approx(row["round_s"].get<double>()).epsilon(0.05));
  // Not in the default strategies: a job that names none does not run it.
  const auto d = run_tauplan({"predict", "--platform", kTestPs, "--json"});
  REQUIRE(d.exit_code == 0);
  const auto default_rows = nlohmann::json::parse(d.out);  // alive for the whole loop
  for (const auto& x : default_rows["results"])
    CHECK(x["strategy"] != "async-ps");
}
