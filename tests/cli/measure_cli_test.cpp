// measure_cli_test.cpp: `tauplan measure` with threads, end to end: a missed target is exit 3
// after the rows are printed, a reached one exit 0, and the MPI deadline key is checked.
// (The same under mpirun: tests/exec/mpi_measure.sh.)
#include <catch2/catch.hpp>

#include <algorithm>
#include <string>

#include <nlohmann/json.hpp>

#include "tests/cli/run_command.hpp"

using tauplan::test::run_tauplan;
using tauplan::test::write_temp_file;

namespace {

const char* kMeasureJob = "platform: " TAUPLAN_SOURCE_DIR
                          "/platforms/test-crossbar-4.xml\n"
                          "workload: fashion-mlp\n"
                          "strategies: [single, sync]\n"
                          "workers: 2\nbatch: 32\nhidden: [32]\n"
                          "data_dir: /nonexistent/fashion-mnist\nallow_synthetic: true\n"
                          "train_samples: 2000\neval_samples: 500\neval_every: 8\n";

}  // namespace

TEST_CASE("measure: a target missed at max_steps is exit 3, after every row is printed") {
  const auto f = write_temp_file("missed.yaml", std::string(kMeasureJob) +
                                                    "target_accuracy: 0.99\n"
                                                    "max_steps: 16\n");
  const auto table = run_tauplan({"measure", f});
  INFO("stderr: " << table.err);
  CHECK(table.exit_code == 3);
  // Both rows, each saying so.
  CHECK(std::count(table.out.begin(), table.out.end(), '\n') == 3);
  CHECK(table.out.find("single") != std::string::npos);
  CHECK(table.out.find("sync") != std::string::npos);
  const std::string note = "target 0.99 NOT reached";
  std::size_t notes = 0;
  for (std::size_t at = table.out.find(note); at != std::string::npos;
       at = table.out.find(note, at + 1))
    ++notes;
  CHECK(notes == 2);

  const auto json = run_tauplan({"measure", f, "--json"});
  CHECK(json.exit_code == 3);
  const auto doc = nlohmann::json::parse(json.out);
  REQUIRE(doc.at("results").size() == 2);
  for (const auto& row : doc.at("results")) {
    CHECK(row.at("reached_target") == false);
    CHECK(row.at("steps") == 16);
  }
}

TEST_CASE("measure: a reached target is exit 0 with no note") {
  const auto f = write_temp_file("reached.yaml", std::string(kMeasureJob) +
                                                     "target_accuracy: 0.5\n"
                                                     "max_steps: 400\n");
  const auto r = run_tauplan({"measure", f});
  INFO("stderr: " << r.err);
  CHECK(r.exit_code == 0);
  CHECK(r.out.find("NOT reached") == std::string::npos);
}

TEST_CASE("measure: mpi_timeout_s must be a positive time") {
  for (const std::string bad : {"0", "-1", "10MB"}) {
    const auto f =
        write_temp_file("timeout.yaml", std::string(kMeasureJob) + "mpi_timeout_s: " + bad + "\n");
    const auto r = run_tauplan({"measure", f});
    INFO("stderr: " << r.err);
    CHECK(r.exit_code == 2);
    CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
    CHECK(r.err.find(f + ": mpi_timeout_s: expected") != std::string::npos);
  }
}
