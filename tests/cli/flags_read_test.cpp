// flags_read_test.cpp: every verb accepts or refuses each flag, never ignores one (issue 25,
// "inputs read the same way everywhere"): a job key's flag that the verb's engine does not read
// (KeySpec::read_by) is refused by predict, simulate, measure, layout and sweep; SimGrid's own
// --cfg and --log exist where SimGrid runs; each of calibrate's modes refuses the others'
// flags; validate refuses stragglers and failures it could not compare; an error in
// --stragglers, --failures or --beside_hosts names the flag; a step time below a nanosecond and
// a worker that is also the plan's parameter server are refused.
#include <catch2/catch.hpp>

#include <algorithm>
#include <string>
#include <vector>

#include "model/ir/job.hpp"
#include "study/common/engines.hpp"
#include "study/common/inputs.hpp"
#include "tests/cli/expect_bad_input.hpp"
#include "tests/cli/run_command.hpp"

using tauplan::test::expect_bad_input;
using tauplan::test::run_tauplan;
using tauplan::test::write_temp_file;

namespace {

std::string flags_job() {
  return write_temp_file("flags-read.yaml",
                         "workload: fashion-mlp\nplatform: test-crossbar-4\nworkers: 2\n"
                         "iterations: 100\n");
}

bool spec_read_by(const tauplan::model::KeySpec& spec, const std::string& engine) {
  return spec.read_by.empty() ||
         std::find(spec.read_by.begin(), spec.read_by.end(), engine) != spec.read_by.end();
}

}  // namespace

TEST_CASE("flags: each engine's verb refuses every job key its engine does not read") {
  namespace study = tauplan::study;
  const std::string job = flags_job();
  size_t refused = 0;
  for (const std::string& name : study::engine_names()) {
    const std::string verb = study::engine(name).verb();
    for (const tauplan::model::KeySpec& spec : study::all_job_keys()) {
      if (spec_read_by(spec, name)) continue;
      INFO(verb << " --" << spec.name);
      expect_bad_input({verb, job, "--" + spec.name, "x"},
                       "command line: --" + spec.name + ": expected no --" + spec.name + " for " +
                           verb + " (the " + name + " engine does not read it");
      ++refused;
    }
  }
  // The keys of the list, among others: predict --stragglers, --failures,
  // --network_model, --sim_rounds, --timing; simulate --device, --timing, --hidden; measure
  // --stragglers, --sim_rounds, --compute_s.
  CHECK(refused >= 50);
  for (const auto& [verb, key] :
       std::vector<std::pair<std::string, std::string>>{{"predict", "stragglers"},
                                                        {"predict", "failures"},
                                                        {"predict", "network_model"},
                                                        {"predict", "sim_rounds"},
                                                        {"predict", "timing"},
                                                        {"simulate", "device"},
                                                        {"simulate", "timing"},
                                                        {"simulate", "hidden"},
                                                        {"measure", "stragglers"},
                                                        {"measure", "sim_rounds"},
                                                        {"measure", "compute_s"}}) {
    INFO(verb << " --" << key);
    expect_bad_input({verb, job, "--" + key, "1"}, "expected no --" + key + " for " + verb);
  }
  // A key the engine reads is taken: the same flags where they belong.
  const auto simulate = run_tauplan({"simulate", job, "--stragglers", "h0:2", "--sim_rounds", "5"});
  INFO(simulate.err);
  CHECK(simulate.exit_code == 0);
  const auto predict = run_tauplan({"predict", job, "--compute_s", "1ms"});
  INFO(predict.err);
  CHECK(predict.exit_code == 0);
}

TEST_CASE("flags: every engine a key names as its reader is registered") {
  const std::vector<std::string> engines = tauplan::study::engine_names();
  for (const tauplan::model::KeySpec& spec : tauplan::study::all_job_keys())
    for (const std::string& reader : spec.read_by) {
      INFO(spec.name << " read by " << reader);
      CHECK(std::find(engines.begin(), engines.end(), reader) != engines.end());
    }
  // A study running several engines hands each only its keys.
  const auto& exec = tauplan::study::engine("exec");
  const auto kept = tauplan::study::keys_read_by(
      exec, {{"stragglers", "h0:2"}, {"timing", "concurrent"}, {"workers", "2"}});
  CHECK(kept == std::map<std::string, std::string>{{"timing", "concurrent"}, {"workers", "2"}});
}

TEST_CASE("flags: SimGrid's own --cfg and --log belong to simulate alone") {
  const std::string job = flags_job();
  expect_bad_input({"predict", job, "--cfg", "network/model:LV08"}, "--cfg");
  expect_bad_input({"measure", job, "--log", "root.thres:info"}, "--log");
  const auto simulate = run_tauplan({"simulate", job, "--log", "root.thres:critical"});
  INFO(simulate.err);
  CHECK(simulate.exit_code == 0);
}

TEST_CASE("flags: layout and sweep refuse a key the engine they run does not read") {
  const std::string job = flags_job();
  expect_bad_input(
      {"layout", TAUPLAN_SOURCE_DIR "/experiments/transformer/single.yaml", "--trace", "x.json"},
      "command line: --trace: expected no --trace for layout (the analytic engine");
  expect_bad_input({"sweep", job, "--engine", "analytic", "--set", "trace=a.json,b.json"},
                   "command line --set: trace: expected no trace for sweep --engine analytic");
  expect_bad_input(
      {"sweep", job, "--engine", "analytic", "--stragglers", "h0:2", "--set", "workers=2,4"},
      "command line: --stragglers: expected no --stragglers for sweep --engine analytic");
}

TEST_CASE("flags: each of calibrate's modes refuses the flags of the others") {
  const std::string platform = TAUPLAN_SOURCE_DIR "/platforms/test-crossbar-4.xml";
  expect_bad_input({"calibrate", "--check", platform, "--workers", "3"},
                   "command line: --workers: expected no --workers with --check");
  expect_bad_input({"calibrate", "--check", platform, "--out", "x.xml"},
                   "command line: --out: expected no --out with --check");
  expect_bad_input({"calibrate", "--compute-threads", "2"},
                   "command line: --compute-threads: expected no --compute-threads without");
  expect_bad_input({"calibrate", "--pings", "5"}, "command line: --pings: expected no --pings");
  expect_bad_input({"calibrate", "--compute", "p.json", "--workers", "3"},
                   "command line: --workers: expected no --workers with --compute");
}

TEST_CASE("flags: an error in --stragglers, --failures or --beside_hosts names the flag") {
  const std::string job = flags_job();
  expect_bad_input({"simulate", job, "--stragglers", "h0"},
                   "command line: --stragglers: expected HOST:FACTOR:FRACTION");
  expect_bad_input({"simulate", job, "--stragglers", "nowhere:2"},
                   "command line: --stragglers: expected a host of");
  expect_bad_input({"simulate", job, "--failures", "h0"},
                   "command line: --failures: expected HOST@TIME or HOST~MTBF");
  expect_bad_input({"simulate", job, "--failures", "nowhere@1s"},
                   "command line: --failures: expected a host of");
  expect_bad_input({"simulate", job, "--beside_hosts", "h2"},
                   "command line: --beside_hosts: expected at least the 2 worker host(s)");
  // From the job file, the file and its key are named, as before.
  const std::string from_file = write_temp_file(
      "flags-read-stragglers.yaml",
      "workload: fashion-mlp\nplatform: test-crossbar-4\nworkers: 2\nstragglers: [h0]\n");
  expect_bad_input({"simulate", from_file}, from_file + ": stragglers: expected HOST:FACTOR");
}

TEST_CASE("flags: values no engine could use are refused") {
  const std::string job = flags_job();
  // A step of 5e-324 s printed a speedup of 2.1e-322.
  expect_bad_input({"predict", job, "--compute_s", "5e-324"},
                   "compute_s: expected seconds between 1e-09 and 1e+09, got '5e-324'");
  expect_bad_input({"predict", job, "--strategies", "local-sgd", "--round_budget_s", "1e-12"},
                   "round_budget_s: expected seconds between 1e-09 and 1e+09");
  // A worker host that the platform declares a parameter server (test-ps: workers h0..h3,
  // server ps0).
  const std::string ps = write_temp_file("flags-read-ps.yaml",
                                         "workload: fashion-mlp\nplatform: test-ps\nworkers: 2\n"
                                         "strategies: [sync]\ncollective: ps\n");
  expect_bad_input({"predict", ps, "--hosts", "h0,ps0"},
                   "hosts: expected worker hosts (not the platform's role=server hosts, which "
                   "serve parameters), got 'ps0'");
  const auto apart = run_tauplan({"predict", ps, "--hosts", "h0,h1"});
  INFO(apart.err);
  CHECK(apart.exit_code == 0);
}

TEST_CASE("flags: validate refuses stragglers and failures its measurements would not have") {
  const std::string job = flags_job();
  expect_bad_input({"validate", job, "--failures", "h0@1s"},
                   "command line: --failures: expected none (the measured runs have none");
  expect_bad_input({"validate", job, "--stragglers", "h0:2"},
                   "command line: --stragglers: expected none");
}

TEST_CASE("flags: a number flag out of range says what it expected, in one line") {
  const std::string job = flags_job();
  expect_bad_input({"sweep", job, "--jobs", "0", "--set", "workers=2,4"},
                   "command line: --jobs: expected a whole number of processes >= 1, got '0'");
  const std::string inventory =
      TAUPLAN_SOURCE_DIR "/experiments/planning/inventories/older-gpus.yaml";
  expect_bad_input({"plan", inventory, "--deadline-confidence", "2"},
                   "--deadline-confidence: expected a probability from 0.5 to 0.999999, got '2'");
  expect_bad_input({"plan", inventory, "--recheck", "-1"},
                   "--recheck: expected a whole number of candidates >= 0, got '-1'");
}
