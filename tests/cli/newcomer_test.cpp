// newcomer_test.cpp: what a new user ran into (issue 25, "Tried as a new user would"), each as a
// test that now passes: relative workload paths resolved against the job file by every verb,
// trace files written where the user runs the command and said so, a flag a verb cannot use
// refused, errors from flags naming the flag, a host list that no longer matches --workers
// saying what to do, plan's straggler part zero on identical GPUs, and relative paths in flags
// taken from the current folder.
#include <catch2/catch.hpp>

#include <filesystem>
#include <functional>
#include <string>

#include <nlohmann/json.hpp>

#include "tests/cli/expect_bad_input.hpp"
#include "tests/cli/run_command.hpp"

using tauplan::test::expect_bad_input;
using tauplan::test::run_tauplan;
using tauplan::test::write_temp_file;

namespace {

// A job whose workload is a file beside it, named relatively (block-small.yaml).
const std::string kTransformerJob = TAUPLAN_SOURCE_DIR "/experiments/transformer/single.yaml";

/// A fresh empty folder to run the command in (not the job's).
std::string elsewhere() {
  const std::string marker = write_temp_file("elsewhere.txt", "");
  return std::filesystem::path(marker).parent_path().string();
}

}  // namespace

TEST_CASE("newcomer: layout and sweep find a relative workload beside the job, as predict does") {
  const std::string folder = elsewhere();
  const auto predict = run_tauplan({"predict", kTransformerJob}, folder);
  INFO(predict.err);
  CHECK(predict.exit_code == 0);
  const auto layout = run_tauplan({"layout", kTransformerJob}, folder);
  INFO(layout.err);
  CHECK(layout.exit_code == 0);
  CHECK(layout.out.find("block-small") != std::string::npos);
  const auto sweep = run_tauplan(
      {"sweep", kTransformerJob, "--set", "batch=8,16", "--out", folder + "/sweep"}, folder);
  INFO(sweep.err);
  CHECK(sweep.exit_code == 0);
}

TEST_CASE("newcomer: a relative path in a flag is the current folder's, not the job's") {
  // The same name in both folders: the job's folder holds block-small.yaml too.
  const std::string folder = elsewhere();
  const std::string beside = TAUPLAN_SOURCE_DIR "/experiments/transformer/block-small.yaml";
  std::filesystem::copy_file(beside, folder + "/block-small.yaml",
                             std::filesystem::copy_options::overwrite_existing);
  const auto r =
      run_tauplan({"predict", kTransformerJob, "--workload", "block-small.yaml", "--json"}, folder);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const std::string workload = nlohmann::json::parse(r.out)["context"]["workload"];
  // The current folder as the process sees it (getcwd: symbolic links resolved).
  CHECK(workload.find(std::filesystem::canonical(folder).string() + "/block-small.yaml") !=
        std::string::npos);
  CHECK(workload.find("experiments/transformer") == std::string::npos);
}

TEST_CASE("newcomer: simulate --trace writes where the command runs and says so") {
  const std::string folder = elsewhere();
  const auto r = run_tauplan({"simulate", kTransformerJob, "--trace", "t.json"}, folder);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const std::string written = folder + "/t.json";
  CHECK(std::filesystem::is_regular_file(written));
  CHECK_FALSE(std::filesystem::exists(TAUPLAN_SOURCE_DIR "/experiments/transformer/t.json"));
  CHECK(r.err.find("wrote the Chrome trace " +
                   std::filesystem::path(written).lexically_normal().string()) !=
        std::string::npos);
}

TEST_CASE("newcomer: predict refuses --trace instead of ignoring it") {
  expect_bad_input({"predict", kTransformerJob, "--trace", "x.json"},
                   "command line: --trace: expected no --trace for predict");
}

TEST_CASE("newcomer: an error in a flag's value names the flag, not the job file") {
  expect_bad_input({"predict", kTransformerJob, "--platform", "no-such-platform"},
                   "command line: --platform: expected a platform XML file");
  expect_bad_input({"predict", kTransformerJob, "--workload", "no-such-workload"},
                   "command line: --workload: expected");
  // From the file, the file and key are named, as before.
  const std::string job = write_temp_file("job.yaml", "workload: fashion-mlp\nplatform: nowhere\n");
  expect_bad_input({"predict", job}, job + ": platform: expected");
}

TEST_CASE("newcomer: --workers that no longer matches a shipped host list says what to do") {
  expect_bad_input({"predict", TAUPLAN_SOURCE_DIR "/experiments/examples/sparknet-alexnet.yaml",
                    "--workers", "3"},
                   "or --hosts '' to let tauplan pick its worker hosts");
  const auto r =
      run_tauplan({"predict", TAUPLAN_SOURCE_DIR "/experiments/examples/sparknet-alexnet.yaml",
                   "--workers", "3", "--hosts", ""});
  INFO(r.err);
  CHECK(r.exit_code == 0);
}

TEST_CASE("newcomer: plan puts no straggler time on identical GPUs") {
  const auto r =
      run_tauplan({"plan", TAUPLAN_SOURCE_DIR "/experiments/planning/inventories/gpt3-h200.yaml",
                   "--recheck", "0", "--json", "--out", elsewhere() + "/plan"});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const nlohmann::json j = nlohmann::json::parse(r.out);
  int parts = 0;
  std::function<void(const nlohmann::json&)> walk = [&](const nlohmann::json& x) {
    if (x.is_object()) {
      for (auto it = x.begin(); it != x.end(); ++it) {
        if (it.key() == "straggler" && it.value().is_number()) {
          ++parts;
          CHECK(it.value().get<double>() == 0.0);
        }
        walk(it.value());
      }
    } else if (x.is_array()) {
      for (const auto& v : x)
        walk(v);
    }
  };
  walk(j);
  CHECK(parts > 0);
}

TEST_CASE("newcomer: help-keys lists the keys of a job, a workload, an inventory and a platform") {
  const auto r = tauplan::test::run_tauplan({"help-keys"});
  REQUIRE(r.exit_code == 0);
  for (const char* heading :
       {"workload YAML keys (a transformer", "workload YAML keys (a workload file of layers",
        "inventory keys", "platform props", "cluster spec keys", "config.json fields"})
    CHECK(r.out.find(heading) != std::string::npos);
  for (const char* key : {"\nworkers ", "\nnode_types[].network.bandwidth ", "\nsearch.zero_stage ",
                          "\ngpu_memory_bytes ", "\nmessage_protocol ", "\nflop_per_sample ",
                          "\nwidths ", "\npreset ", "\nnic_bandwidth ", "\ncore_oversubscription "})
    CHECK(r.out.find(key) != std::string::npos);
  CHECK(r.out.find("(no description)") == std::string::npos);  // every cluster spec key has one
}
