// job_test.cpp: the job loader's contract: defaults, flags over file, units, and bad input.
#include <catch2/catch.hpp>

#include "model/base/error.hpp"
#include "model/ir/job.hpp"

using namespace tauplan;

namespace {
model::Job parse_job_yaml(const std::string& yaml,
                          const std::map<std::string, std::string>& flags = {}) {
  return model::parse_job_yaml(yaml, "job.yaml", "jobs", model::model_job_keys(), flags);
}
}  // namespace

TEST_CASE("defaults apply and a flag overrides the file") {
  const auto job = parse_job_yaml("workers: 8\nbatch: 128\n", {{"workers", "3"}});
  CHECK(job.integer("workers") == 3);
  CHECK(job.integer("batch") == 128);
  CHECK(job.integer("tau") == 10);
  CHECK(job.text("collective") == "ring");
  CHECK(job.list("strategies") == std::vector<std::string>{"single", "sync", "local-sgd"});
}

TEST_CASE("units: bytes and seconds with explicit units") {
  const auto job = parse_job_yaml("bucket_bytes: 25MiB\nstep_overhead_s: 2ms\ncomm_s: 1.5\n");
  CHECK(job.real("bucket_bytes") == 25.0 * 1024 * 1024);
  CHECK(job.real("step_overhead_s") == Approx(2e-3));
  CHECK(job.real("comm_s") == 1.5);
  CHECK(model::parse_bytes("1GB", "f", "k") == 1e9);
  CHECK(model::parse_bytes("4 KiB", "f", "k") == 4096);
  CHECK(model::parse_seconds("250us", "f", "k") == Approx(250e-6));
}

TEST_CASE("lists come from YAML sequences or comma-separated flags") {
  CHECK(parse_job_yaml("strategies: [sync, local-sgd]\n").list("strategies") ==
        std::vector<std::string>{"sync", "local-sgd"});
  CHECK(parse_job_yaml("", {{"strategies", "single,sync"}}).list("strategies") ==
        std::vector<std::string>{"single", "sync"});
}

TEST_CASE("paths resolve against the job file's folder") {
  CHECK(parse_job_yaml("convergence_table: runs.csv\n").path("convergence_table") ==
        "jobs/runs.csv");
  CHECK(parse_job_yaml("convergence_table: /abs/runs.csv\n").path("convergence_table") ==
        "/abs/runs.csv");
}

TEST_CASE("bad job input names the file and the key") {
  auto fails_with = [](const std::string& yaml, const std::string& fragment,
                       const std::map<std::string, std::string>& flags = {}) {
    try {
      parse_job_yaml(yaml, flags);
      FAIL("no error for: " << yaml);
    } catch (const InputError& e) {
      const std::string message = e.what();
      CHECK(message.find(fragment) != std::string::npos);
      CHECK(message.find('\n') == std::string::npos);
    }
  };
  fails_with("wokers: 4\n", "job.yaml: wokers: expected a known job key (did you mean 'workers'?)");
  fails_with("batch: 0\n", "job.yaml: batch: expected a whole number between 1 and 1e+09, got '0'");
  fails_with("batch: -32\n", "job.yaml: batch");
  fails_with("batch: 3.5\n", "job.yaml: batch: expected a whole number");
  fails_with("bucket_bytes: 25ms\n", "job.yaml: bucket_bytes: expected bytes");
  fails_with("comm_s: 3GB\n", "job.yaml: comm_s: expected seconds");
  fails_with("step_overhead_s: -1\n", "job.yaml: step_overhead_s");
  fails_with("split: random\n", "job.yaml: split: expected one of even, speed");
  fails_with("strategies: [sync, async]\n", "job.yaml: strategies");
  fails_with("overlap: maybe\n", "job.yaml: overlap: expected true or false");
  fails_with("workers: [1, 2]\n", "job.yaml: workers: expected a whole number, got a list");
  fails_with("workers: 4\n  batch: [\n", "job.yaml: line");
  fails_with("- 1\n- 2\n", "job.yaml: (top level)");
  fails_with("", "command line: --workers", {{"workers", "many"}});
  fails_with("", "command line: colective", {{"colective", "ring"}});
  CHECK_THROWS_WITH(model::load_job("/nonexistent/job.yaml", model::model_job_keys()),
                    Catch::Contains("/nonexistent/job.yaml: job: expected a readable file"));
}

TEST_CASE("convergence models from a job") {
  auto cb = model::convergence_model(
      parse_job_yaml("convergence: critical-batch\nmin_steps: 100\ncritical_batch: 50\n"));
  CHECK(cb->serial_steps(50) == Approx(200));
  CHECK_THROWS_WITH(
      model::convergence_model(parse_job_yaml("convergence: critical-batch\nmin_steps: 100\n")),
      Catch::Contains("job.yaml: critical_batch"));
  CHECK_THROWS_WITH(model::convergence_model(parse_job_yaml("convergence: table\n")),
                    Catch::Contains("job.yaml: convergence_table"));
  CHECK_THROWS_WITH(
      model::convergence_model(parse_job_yaml("convergence: table\nconvergence_table: none.csv\n")),
      Catch::Contains("jobs/none.csv: convergence_table: expected a readable file"));
}
