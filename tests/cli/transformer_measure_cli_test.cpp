// transformer_measure_cli_test.cpp: `tauplan measure` of the shipped transformer jobs
// (experiments/transformer/), end to end: tensor-2 and pipeline-2 run a few steps, exit 0, and
// their loss falls; a layout that does not split the heads, a workload exec's block cannot
// follow, and lockstep timing are refused with one line and exit 2.
#include <catch2/catch.hpp>

#include <algorithm>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tests/cli/expect_bad_input.hpp"
#include "tests/cli/run_command.hpp"

using tauplan::test::expect_bad_input;
using tauplan::test::run_tauplan;
using tauplan::test::write_temp_file;

namespace {

const std::string kJobs = TAUPLAN_SOURCE_DIR "/experiments/transformer/";

}  // namespace

TEST_CASE("measure: the transformer's tensor-2 and pipeline-2 jobs train and the loss falls") {
  for (const std::string job : {"tensor-2", "pipeline-2"}) {
    SECTION(job) {
      const auto r = run_tauplan({"measure", kJobs + job + ".yaml", "--max_steps", "30", "--json"});
      INFO("stderr: " << r.err);
      REQUIRE(r.exit_code == 0);
      const auto doc = nlohmann::json::parse(r.out);
      REQUIRE(doc.at("results").size() == 1);
      const auto& row = doc.at("results")[0];
      CHECK(row.at("strategy") == "mesh");
      CHECK(row.at("workers") == 2);
      CHECK(row.at("engine") == "exec-cpu");
      CHECK(row.at("timing") == "concurrent");
      CHECK(row.at("rounds") == 30);
      CHECK(row.at("round_s").get<double>() > 0);
      CHECK(row.at("ranks").size() == 2);
      CHECK(row.at("layout") == (job == "tensor-2" ? "d1 t2 p1 m1" : "d1 t1 p2 m4 1f1b"));
      const auto& loss = row.at("loss");
      const double first = loss.at("first").get<double>(), last = loss.at("final").get<double>();
      INFO("loss " << first << " -> " << last);
      CHECK(row.at("loss_per_step").size() == 30);
      CHECK(first > loss.at("entropy_floor").get<double>());
      CHECK(last < 0.9 * first);
    }
  }
  // The table's row carries the loss in its note.
  const auto table = run_tauplan({"measure", kJobs + "tensor-2.yaml", "--max_steps", "5"});
  INFO("stderr: " << table.err);
  CHECK(table.exit_code == 0);
  CHECK(table.out.find("loss ") != std::string::npos);
  CHECK(table.out.find("(floor ") != std::string::npos);
}

TEST_CASE(
    "measure: the transformer's sync through thread-messages gives the shared-memory "
    "combine's losses") {
  const auto losses = [](const std::vector<std::string>& extra, const std::string& communicator) {
    std::vector<std::string> args{"measure", kJobs + "sync-2.yaml", "--max_steps", "4", "--json"};
    args.insert(args.end(), extra.begin(), extra.end());
    const auto r = run_tauplan(args);
    INFO("stderr: " << r.err);
    REQUIRE(r.exit_code == 0);
    const auto row = nlohmann::json::parse(r.out).at("results").at(0);
    CHECK(row.at("communicator") == communicator);
    return row.at("loss_per_step").get<std::vector<double>>();
  };
  const std::vector<double> shared = losses({"--communicator", "threads"}, "threads");
  REQUIRE(shared.size() == 4);
  // Steps 2 to 4 start from parameters the combine made: a wrong mean moves their losses.
  for (const std::vector<std::string>& collective :
       {std::vector<std::string>{"--collective", "tree"},
        std::vector<std::string>{"--collective", "ps", "--platform", "test-ps"}}) {
    INFO(collective[1]);
    std::vector<std::string> extra{"--communicator", "thread-messages"};
    extra.insert(extra.end(), collective.begin(), collective.end());
    const std::vector<double> measured = losses(extra, "thread-messages");
    REQUIRE(measured.size() == shared.size());
    for (std::size_t s = 0; s < shared.size(); ++s)
      CHECK(measured[s] == Approx(shared[s]).epsilon(1e-6));
  }
  CHECK(shared.back() < shared.front());
}

TEST_CASE("measure: a transformer layout or workload exec cannot train is exit 2, one line") {
  const std::string tensor = kJobs + "tensor-2.yaml";
  // block-small has 4 heads.
  expect_bad_input({"measure", tensor, "--workers", "3", "--tensor_parallel", "3"},
                   "command line: --tensor_parallel: expected a divisor of the 4 heads");
  expect_bad_input({"measure", tensor, "--timing", "lockstep"}, "command line: --timing: expected");
  // Messages between threads are sync's; MPI needs mpirun.
  expect_bad_input({"measure", tensor, "--communicator", "thread-messages"},
                   "command line: --communicator: expected threads or auto with a transformer "
                   "mesh");
  const std::string sync = kJobs + "sync-2.yaml";
  expect_bad_input({"measure", sync, "--communicator", "mpi"},
                   "command line: --communicator: expected threads, thread-messages or auto");
  const std::string rotary = write_temp_file(
      "rotary.yaml",
      "name: rotary\nbytes_per_parameter: 4\nsample_unit: sequence\ntransformer:\n"
      "  layers: 2\n  hidden: 32\n  heads: 4\n  kv_heads: 2\n  ffn_hidden: 64\n"
      "  feed_forward: swiglu\n  normalization: rmsnorm\n  positions: rotary\n  sequence: 16\n"
      "  vocabulary: 32\n  tied_embeddings: false\n  linear_bias: false\n");
  expect_bad_input({"measure", tensor, "--workload", rotary},
                   rotary + ": transformer.positions: expected learned");
}
