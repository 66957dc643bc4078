// cli_test.cpp: the tauplan executable end to end: bad inputs and the predict output contract.
#include <catch2/catch.hpp>

#include <algorithm>

#include <nlohmann/json.hpp>

#include "tests/cli/expect_bad_input.hpp"
#include "tests/cli/run_command.hpp"

using tauplan::test::expect_bad_input;
using tauplan::test::run_tauplan;
using tauplan::test::write_temp_file;

namespace {

// Bad input: exit code 2 and exactly one line on stderr that contains `fragment`.
std::string write_job(const std::string& name, const std::string& yaml) {
  return write_temp_file(name, yaml);
}

const char* kBase =
    "platform: " TAUPLAN_SOURCE_DIR "/platforms/test-crossbar-4.xml\nworkload: fashion-mlp\n";

}  // namespace

TEST_CASE("unknown key") {
  const auto f = write_job("unknown.yaml", std::string(kBase) + "wokers: 4\n");
  expect_bad_input({"predict", f},
                   f + ": wokers: expected a known job key (did you mean 'workers'?)");
}

TEST_CASE("missing job file") {
  expect_bad_input({"predict", "/nonexistent/job.yaml"},
                   "/nonexistent/job.yaml: job: expected a readable file");
}

TEST_CASE("wrong unit") {
  const auto f = write_job("unit.yaml", std::string(kBase) + "bucket_bytes: 3s\n");
  expect_bad_input({"predict", f}, f + ": bucket_bytes: expected bytes");
  const auto g = write_job("unit2.yaml", std::string(kBase) + "comm_s: 10MB\n");
  expect_bad_input({"predict", g}, g + ": comm_s: expected seconds");
}

TEST_CASE("negative or zero batch") {
  const auto f = write_job("neg.yaml", std::string(kBase) + "batch: -8\n");
  expect_bad_input({"predict", f}, f + ": batch: expected a whole number between 1 and 1e+09");
  const auto g = write_job("zero.yaml", std::string(kBase) + "batch: 0\n");
  expect_bad_input({"predict", g},
                   g + ": batch: expected a whole number between 1 and 1e+09, got '0'");
}

TEST_CASE("more workers than hosts") {
  const auto f = write_job("k.yaml", std::string(kBase) + "workers: 9\n");
  expect_bad_input({"predict", f}, f + ": workers: expected at most 4");
}

TEST_CASE("a batch that does not fit in GPU memory") {
  const auto f = write_job("mem.yaml", "platform: " TAUPLAN_SOURCE_DIR
                                       "/platforms/test-crossbar-4.xml\n"
                                       "workload: resnet-50\nstrategies: [single]\nbatch: 4096\n");
  expect_bad_input({"predict", f},
                   f + ": batch: expected a per-worker batch that fits in the 16.00 GiB of host h");
}

TEST_CASE("malformed XML platform") {
  const auto xml = write_temp_file("broken.xml",
                                   "<?xml version='1.0'?>\n<platform version=\"4.1\">\n<zone "
                                   "id=\"w\" routing=\"Full\">\n<host id=\"a\"\n</platform>\n");
  const auto f = write_job("badxml.yaml", "platform: " + xml + "\n");
  expect_bad_input({"predict", f}, xml);
}

TEST_CASE("malformed YAML job") {
  const auto f = write_job("bad.yaml", "workers: [4\nbatch: 3\n");
  expect_bad_input({"predict", f}, f + ": line");
}

TEST_CASE("missing platform and unknown workload") {
  const auto f = write_job("noplat.yaml", "platform: nowhere.xml\n");
  expect_bad_input({"predict", f}, f + ": platform: expected a platform XML file");
  const auto g =
      write_job("nowork.yaml", std::string("platform: ") + TAUPLAN_SOURCE_DIR +
                                   "/platforms/test-crossbar-4.xml\nworkload: lenet-9\n");
  expect_bad_input({"predict", g}, g + ": workload: expected");
}

TEST_CASE("bad flag values and unknown flags") {
  expect_bad_input({"predict", "--workers", "many"},
                   "command line: --workers: expected a whole number");
  expect_bad_input({"predict", "--wrokers", "3"}, "command line");
}

TEST_CASE("predict JSON keeps the result contract") {
  const auto r =
      run_tauplan({"predict", "--platform", "test-crossbar-4", "--workload", "fashion-mlp",
                   "--workers", "4", "--batch", "64", "--tau", "8", "--json"});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const auto doc = nlohmann::json::parse(r.out);
  const auto& context = doc.at("context");
  for (const char* key : {"version", "commit", "date", "engine", "network_model", "platform_file",
                          "platform_hash", "seed", "workload", "convergence"})
    CHECK(context.contains(key));
  CHECK(context.at("engine") == "analytic");
  const auto& rows = doc.at("results");
  REQUIRE(rows.size() == 3);
  const double t0 = rows[0].at("total_s").get<double>();
  for (const auto& row : rows) {
    for (const char* key : {"strategy", "workers", "tau", "batch", "round_s", "compute_s", "comm_s",
                            "rounds", "total_s", "speedup", "engine"})
      CHECK(row.contains(key));
    const double rounds = row.at("rounds").get<double>();
    CHECK(row.at("total_s").get<double>() ==
          Approx(rounds * row.at("round_s").get<double>()).epsilon(1e-12));
    CHECK(row.at("speedup").get<double>() ==
          Approx(t0 / row.at("total_s").get<double>()).epsilon(1e-12));
  }
  // local-sgd on the homogeneous fixture: round = tau x compute + comm
  const auto& local = rows[2];
  CHECK(local.at("strategy") == "local-sgd");
  CHECK(local.at("round_s").get<double>() ==
        Approx(8 * local.at("compute_s").get<double>() + local.at("comm_s").get<double>())
            .epsilon(1e-12));
}

TEST_CASE("predict prints a table on stdout and provenance on stderr") {
  const auto r =
      run_tauplan({"predict", "--platform", "test-crossbar-4", "--workload", "fashion-mlp"});
  REQUIRE(r.exit_code == 0);
  CHECK(r.out.find("strategy") == 0);
  CHECK(r.out.find("local-sgd") != std::string::npos);
  CHECK(r.err.find("engine=analytic") != std::string::npos);
}

TEST_CASE("same job twice gives the same numbers") {
  const std::vector<std::string> args = {
      "predict", "--platform", "hetseq-university", "--workload", "bert-base", "--workers", "16",
      "--batch", "64",         "--split",           "speed",      "--json"};
  auto a = nlohmann::json::parse(run_tauplan(args).out);
  auto b = nlohmann::json::parse(run_tauplan(args).out);
  CHECK(a.at("results") == b.at("results"));
}

TEST_CASE("the example jobs predict without error") {
  for (const char* name : {"hetseq-bert.yaml", "sparknet-alexnet.yaml"}) {
    const auto r =
        run_tauplan({"predict", std::string(TAUPLAN_SOURCE_DIR) + "/experiments/examples/" + name});
    INFO(name << ": " << r.err);
    CHECK(r.exit_code == 0);
    CHECK(r.out.find("local-sgd") != std::string::npos);
  }
}
