// testbed_validate_test.cpp: `tauplan validate JOB --testbed MATRIX.yaml`, its matrix and its
// bad inputs (one line naming the file and key, exit 2), none of which needs the rights to
// create network namespaces: the matrix is read and checked before anything is measured. The
// validation itself runs in tests/exec/testbed/ (root only) and in experiments/testbed/.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <string>
#include <utility>

#include "tests/cli/expect_bad_input.hpp"
#include "tests/cli/run_command.hpp"

using tauplan::test::expect_bad_input;
using tauplan::test::run_tauplan;
using tauplan::test::write_temp_file;

namespace {

const std::string kTestbedValidateJob = TAUPLAN_SOURCE_DIR "/experiments/testbed/fashion-mlp.yaml";
const std::string kStar = TAUPLAN_SOURCE_DIR "/platforms/testbed-ps8.xml";

/// A matrix of one group on testbed-ps8 whose only configuration is `config` (YAML flow map).
std::string one_config(const std::string& config) {
  return "groups:\n  - name: star\n    platform: " + kStar + "\n    configs:\n      - " + config +
         "\n";
}

void expect_bad_matrix(const std::string& name, const std::string& text,
                       const std::string& fragment) {
  const std::string file = write_temp_file(name, text);
  expect_bad_input({"validate", kTestbedValidateJob, "--testbed", file}, file + ": " + fragment);
}

}  // namespace

TEST_CASE("validate --testbed: the shipped matrix names hosts its platforms have") {
  // `testbed describe` is how validate learns a platform's hosts (one platform per process).
  const auto star = run_tauplan({"testbed", "describe", kStar});
  INFO(star.err);
  REQUIRE(star.exit_code == 0);
  CHECK(star.out.find("\"name\": \"h7\"") != std::string::npos);
  CHECK(star.out.find("\"role\": \"server\"") != std::string::npos);
  // A matrix that only fails after it was read whole: a flag validate sets from the matrix.
  const auto r =
      run_tauplan({"validate", kTestbedValidateJob, "--testbed",
                   TAUPLAN_SOURCE_DIR "/experiments/testbed/matrix.yaml", "--workers", "3"});
  CHECK(r.exit_code == 2);
  CHECK(r.err.find("--workers: expected no value") != std::string::npos);
}

// --replay's folder is read after the matrix: a folder whose JSON is not a validate's is bad
// input naming that file and the key it lacks; reaching it shows the matrix itself was read and
// checked whole (hosts of its platforms, its keys), which is how the held-out matrices are checked
// here before any run.
TEST_CASE("validate --testbed --replay: a folder that is not a run's, one line naming its file") {
  const std::string folder = std::filesystem::temp_directory_path() / "tauplan-replay-bad";
  std::filesystem::create_directories(folder + "/runs");
  std::filesystem::create_directories(folder + "/platforms");
  const std::string file = folder + "/testbed-validation.json";
  const std::string testbed = TAUPLAN_SOURCE_DIR "/experiments/testbed/";
  for (const auto& [matrix, job] :
       {std::pair<std::string, std::string>{"heldout4-matrix.yaml", "fashion-mlp.yaml"},
        {"heldout4-wide-matrix.yaml", "fashion-mlp-wide.yaml"},
        {"heldout3-matrix.yaml", "fashion-mlp.yaml"}}) {
    INFO(matrix);
    std::ofstream(file) << "{\"results\": []}\n";
    expect_bad_input({"validate", testbed + job, "--testbed", testbed + matrix, "--replay", folder,
                      "--out", folder + "-out"},
                     file + ": networks: expected what an earlier validate --testbed wrote");
  }
  std::ofstream(file) << "not json\n";
  expect_bad_input({"validate", kTestbedValidateJob, "--testbed", testbed + "heldout4-matrix.yaml",
                    "--replay", folder, "--out", folder + "-out"},
                   file + ": (file): expected the JSON an earlier validate --testbed wrote");
  std::filesystem::remove_all(folder);
  std::filesystem::remove_all(folder + "-out");
}

TEST_CASE("validate --testbed: bad matrices, one line naming the file and key, exit 2") {
  expect_bad_matrix("m-top.yaml", "groups: []\nextra: 1\n", "extra");
  expect_bad_matrix("m-empty.yaml", "groups: []\n", "groups: expected a list of at least one");
  expect_bad_matrix("m-platform.yaml",
                    "groups:\n  - {name: a, platform: nowhere.xml, configs: []}\n",
                    "groups[0].platform: expected a platform file");
  expect_bad_matrix("m-key.yaml", one_config("{strategy: sync, colective: ring, hosts: [h0, h1]}"),
                    "groups[0].configs[0].colective");
  expect_bad_matrix("m-single.yaml",
                    one_config("{strategy: single, collective: ring, hosts: [h0, h1]}"),
                    "groups[0].configs[0].strategy: expected a data-parallel strategy");
  expect_bad_matrix("m-async.yaml",
                    one_config("{strategy: async-ps, collective: ps, hosts: [h0, h1]}"),
                    "groups[0].configs[0].collective: expected none for an asynchronous strategy");
  expect_bad_matrix("m-async-beside.yaml",
                    one_config("{strategy: async-ps, hosts: [h0], beside: [h1]}"),
                    "groups[0].configs[0].beside: expected a configuration whose collective uses "
                    "no servers");
  expect_bad_matrix("m-collective.yaml",
                    one_config("{strategy: sync, collective: carrier-pigeon, hosts: [h0, h1]}"),
                    "collective");
  expect_bad_matrix("m-one-host.yaml",
                    one_config("{strategy: sync, collective: ring, hosts: [h0]}"),
                    "groups[0].configs[0].hosts: expected a list of at least 2 worker host(s)");
  expect_bad_matrix("m-no-host.yaml", one_config("{strategy: async-ps, hosts: []}"),
                    "groups[0].configs[0].hosts: expected a list of at least 1 worker host(s)");
  expect_bad_matrix("m-twice.yaml",
                    one_config("{strategy: sync, collective: ring, hosts: [h0, h0]}"),
                    "groups[0].configs[0].hosts: expected each host once (in hosts and beside), "
                    "got h0 twice");
  // A copy of the configuration beside it (two jobs sharing links).
  expect_bad_matrix("m-beside-count.yaml",
                    one_config("{strategy: sync, collective: ring, hosts: [h0, h1], beside: [h2]}"),
                    "groups[0].configs[0].beside: expected a list of 2 worker hosts (a copy of "
                    "the configuration), got 1 hosts");
  expect_bad_matrix(
      "m-beside-overlap.yaml",
      one_config("{strategy: sync, collective: ring, hosts: [h0, h1], beside: [h1, h2]}"),
      "groups[0].configs[0].beside: expected each host once (in hosts and beside), got h1 twice");
  expect_bad_matrix(
      "m-beside-unknown.yaml",
      one_config("{strategy: sync, collective: ring, hosts: [h0, h1], beside: [h2, nowhere]}"),
      "groups[0].configs[0].beside: expected hosts of " + kStar + ", got nowhere");
  expect_bad_matrix("m-beside-ps.yaml",
                    one_config("{strategy: sync, collective: ps, servers: 1, hosts: [h0, h1], "
                               "beside: [h2, h3]}"),
                    "groups[0].configs[0].beside: expected a configuration whose collective "
                    "uses no servers");
  // Testbed runs of a configuration: a whole number from 1 to 20.
  expect_bad_matrix("m-runs-zero.yaml",
                    one_config("{strategy: sync, collective: ring, hosts: [h0, h1], runs: 0}"),
                    "groups[0].configs[0].runs: expected");
  expect_bad_matrix("m-runs-fraction.yaml",
                    one_config("{strategy: sync, collective: ring, hosts: [h0, h1], runs: 2.5}"),
                    "groups[0].configs[0].runs: expected a whole number of testbed runs, got 2.5");
  expect_bad_matrix(
      "m-runs-top.yaml",
      "runs: 0.5\n" + one_config("{strategy: sync, collective: ring, hosts: [h0, h1]}"),
      "runs: expected a number in [1, 20], got '0.5'");
  expect_bad_matrix("m-runs-text.yaml",
                    one_config("{strategy: sync, collective: ring, hosts: [h0, h1], runs: many}"),
                    "groups[0].configs[0].runs: expected");
  expect_bad_matrix("m-unknown-host.yaml",
                    one_config("{strategy: sync, collective: ring, hosts: [h0, h99]}"),
                    "groups[0].configs[0].hosts: expected hosts of " + kStar + ", got h99");
  expect_bad_matrix("m-server-host.yaml",
                    one_config("{strategy: sync, collective: ring, hosts: [h0, ps0]}"),
                    "groups[0].configs[0].hosts: expected worker hosts (role worker), got ps0");
  expect_bad_matrix("m-servers.yaml",
                    one_config("{strategy: sync, collective: ps, servers: 3, hosts: [h0, h1]}"),
                    "groups[0].configs[0].servers: expected at most the 2 server host(s)");
  expect_bad_matrix("m-tau.yaml",
                    one_config("{strategy: sync, tau: 4, collective: ring, hosts: [h0, h1]}"),
                    "groups[0].configs[0].tau: expected 1");
  expect_bad_matrix("m-batch.yaml",
                    one_config("{strategy: sync, batch: 2.5, collective: ring, hosts: [h0, h1]}"),
                    "groups[0].configs[0].batch: expected a whole number");
  expect_bad_matrix("m-contended.yaml",
                    one_config("{strategy: sync, collective: ring, hosts: [h0, h1], "
                               "contended: maybe}"),
                    "groups[0].configs[0].contended: expected true or false");
  expect_bad_matrix("m-names.yaml",
                    "groups:\n  - {name: a, platform: " + kStar +
                        ", configs: [{strategy: sync, collective: ring, hosts: [h0, h1]}]}\n"
                        "  - {name: a, platform: " +
                        kStar +
                        ", configs: [{strategy: sync, collective: ring, hosts: [h0, h1]}]}\n",
                    "groups[1].name: expected a name used once, got a twice");
  // A group that brings up some hosts only: its configurations may use no other.
  expect_bad_matrix(
      "m-group-hosts.yaml",
      "groups:\n  - {name: a, platform: " + kStar +
          ", hosts: [h0, h1, ps0], configs: [{strategy: sync, collective: ring, "
          "hosts: [h0, h3]}]}\n",
      "groups[0].configs[0].hosts: expected hosts of " + kStar + " in the group's hosts, got h3");
  expect_bad_matrix("m-group-servers.yaml",
                    "groups:\n  - {name: a, platform: " + kStar +
                        ", hosts: [h0, h1, ps0], configs: [{strategy: sync, collective: ps, "
                        "servers: 2, hosts: [h0, h1]}]}\n",
                    "groups[0].configs[0].servers: expected at most the 1 server host(s)");
  expect_bad_matrix("m-group-unknown.yaml",
                    "groups:\n  - {name: a, platform: " + kStar +
                        ", hosts: [h0, h42], configs: [{strategy: sync, collective: ring, "
                        "hosts: [h0, h1]}]}\n",
                    "groups[0].hosts: expected hosts of " + kStar + ", got h42");
}

TEST_CASE(
    "validate --testbed: no --set, --slow-worker or --calibration beside it, --convergence-seeds "
    "from 1 to 100") {
  const std::string file = write_temp_file(
      "m-ok.yaml", one_config("{strategy: sync, collective: ring, hosts: [h0, h1]}"));
  expect_bad_input({"validate", kTestbedValidateJob, "--testbed", file, "--set", "batch=32,64"},
                   "--testbed");
  expect_bad_input({"validate", kTestbedValidateJob, "--testbed", file, "--slow-worker", "2"},
                   "--testbed");
  expect_bad_input({"validate", kTestbedValidateJob, "--testbed", file, "--convergence-seeds", "0"},
                   "--convergence-seeds: expected a whole number from 1 to 100, got 0");
  expect_bad_input(
      {"validate", kTestbedValidateJob, "--testbed", file, "--convergence-seeds", "101"},
      "--convergence-seeds: expected a whole number from 1 to 100, got 101");
}
