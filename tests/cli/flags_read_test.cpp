// flags_read_test.cpp: every verb accepts or refuses each flag, never ignores one (issue 25,
// "inputs read the same way everywhere"): a job key's flag that the verb's engine does not read
// (KeySpec::read_by) is refused by predict, simulate, measure, layout and sweep; SimGrid's own
// --cfg and --log exist where SimGrid runs; each of calibrate's modes refuses the others'
// flags; validate refuses stragglers and failures it could not compare; an error in
// --stragglers, --failures or --beside_hosts names the flag; a step time below a nanosecond and
// a worker that is also the plan's parameter server are refused; a repeated flag, a mode's flag
// without its mode and a value a flag gave to a check deep in exec are named as the flag; sweep
// says when --jobs had nothing to run at once.
#include <catch2/catch.hpp>

#include <algorithm>
#include <string>
#include <vector>

#include "exec/dataset.hpp"
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
      "command line: --trace: expected no --trace for layout (it reads");
  for (const char* key : {"hosts", "strategies", "compute_s", "network_model", "tau"})
    expect_bad_input(
        {"layout", TAUPLAN_SOURCE_DIR "/experiments/transformer/single.yaml",
         std::string("--") + key, "1"},
        std::string("command line: --") + key + ": expected no --" + key + " for layout");
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

TEST_CASE("flags: validate's modes refuse each other's flags") {
  const std::string job = flags_job();
  expect_bad_input({"validate", job, "--probe-network"},
                   "command line: --probe-network: expected no --probe-network with an MLP job "
                   "on this machine");
  expect_bad_input({"validate", job, "--set", "stragglers=h0:2,h1:2"},
                   "command line --set: stragglers: expected none");
  expect_bad_input({"validate", job, "--max-steal", "10"},
                   "command line: --max-steal: expected no --max-steal with an MLP job on this "
                   "machine");
  const std::string matrix = TAUPLAN_SOURCE_DIR "/experiments/testbed/ci-matrix.yaml";
  for (const char* share : {"0", "-5", "101"})
    expect_bad_input({"validate", job, "--testbed", matrix, "--max-steal", share},
                     "command line: --max-steal: expected a percentage in (0, 100]");
  expect_bad_input(
      {"validate", job, "--testbed", matrix, "--max-steal", "10", "--replay", "/tmp/nowhere"},
      "command line: --max-steal: expected no --max-steal with --replay (nothing is measured)");
  expect_bad_input(
      {"validate", job, "--testbed", matrix, "--queued-window", "--replay", "/tmp/nowhere"},
      "command line: --queued-window: expected no --queued-window with --replay");
  expect_bad_input({"validate", job, "--queued-window"},
                   "command line: --queued-window: expected no --queued-window with an MLP job");
  expect_bad_input({"validate", TAUPLAN_SOURCE_DIR "/experiments/transformer/validate-small.yaml",
                    "--jobs", "2"},
                   "command line: --jobs: expected no --jobs with a transformer job");
}

TEST_CASE("flags: values that would print wrong numbers or never finish are refused") {
  const std::string job = flags_job();
  // A factor of 1e20 printed an exchange of 0 ms beside a round of 1e16 h.
  expect_bad_input({"simulate", job, "--stragglers", "h0:1e20"},
                   "command line: --stragglers: expected HOST:FACTOR:FRACTION with FACTOR from "
                   "1e-4 to 1e4");
  // Failures every 0.5 s (two workers) against a 60 s restart: each round would take about
  // e^120 failures; the simulation ran on, its memory growing.
  expect_bad_input({"simulate", job, "--strategies", "sync", "--failures", "*~1s"},
                   "command line: --failures: expected failures rare enough for rounds to "
                   "complete: a mean time between the job's failures above failure_restart_s / "
                   "10 = 6 s (each round would take at least e^120 failures), got one failure "
                   "every 0.5 s over the job's hosts");
  // An asynchronous plan loses only the failed worker: a rate the sync plan may not have (L R =
  // 12) is simulated.
  const std::string async =
      write_temp_file("flags-read-async.yaml",
                      "workload: fashion-mlp\nplatform: test-ps\nstrategies: [async-ps]\n"
                      "workers: 2\niterations: 200\n");
  const auto async_failing = run_tauplan({"simulate", async, "--failures", "h0~5s"});
  INFO(async_failing.err);
  CHECK(async_failing.exit_code == 0);
  expect_bad_input(
      {"simulate", async, "--strategies", "sync", "--collective", "ring", "--failures", "h0~5s"},
      "each round would take at least e^12 failures");
  const auto rare = run_tauplan({"simulate", job, "--failures", "*~1h"});
  INFO(rare.err);
  CHECK(rare.exit_code == 0);
  // An empty value of a number, a switch or a word of a list was its default, silently.
  const std::string empty =
      write_temp_file("flags-read-empty.yaml", "workload: fashion-mlp\ncollective: \"\"\n");
  expect_bad_input({"predict", empty}, empty + ": collective: expected a value");
  expect_bad_input({"predict", job, "--seed", ""}, "command line: --seed: expected a value");
  expect_bad_input({"predict", job, "--split", ""}, "command line: --split: expected a value");
  const auto any_hosts = run_tauplan({"predict", job, "--hosts", ""});  // '': tauplan picks
  INFO(any_hosts.err);
  CHECK(any_hosts.exit_code == 0);
  // More training samples than exist were taken as all of them.
  expect_bad_input({"measure", job, "--train_samples", "2000000"},
                   "train_samples: expected a whole number between 0 and 1e+06");
  if (tauplan::exec::fashion_mnist_present(tauplan::exec::default_data_dir())) {
    expect_bad_input({"measure", job, "--train_samples", "70000"},
                     "command line: --train_samples: expected at most 60000 (the training "
                     "samples of");
    expect_bad_input({"measure", job, "--eval_samples", "20000"},
                     "command line: --eval_samples: expected at most 10000 (the test samples of");
  }
  // plan's --jobs runs the re-check's simulations.
  expect_bad_input({"plan", TAUPLAN_SOURCE_DIR "/experiments/planning/inventories/older-gpus.yaml",
                    "--recheck", "0", "--jobs", "2"},
                   "command line: --jobs: expected no --jobs with --recheck 0");
}

TEST_CASE("flags: a mistyped flag or verb is named, with what it most likely meant") {
  const std::string job = flags_job();
  expect_bad_input({"predict", job, "--wrokers", "3"},
                   "command line: --wrokers: expected a flag of predict (did you mean "
                   "'--workers'?), got an unknown flag");
  expect_bad_input({"predict", job, "--frobnicate"},
                   "command line: --frobnicate: expected a flag of predict (tauplan predict "
                   "--help)");
  expect_bad_input({"predcit", job},
                   "command line: predcit: expected a verb (did you mean 'predict'?), got an "
                   "unknown verb");
}

TEST_CASE("flags: a key no strategy of the job reads is said, and the rows do not change") {
  const std::string job = flags_job();
  const auto plain = run_tauplan({"predict", job, "--strategies", "sync"});
  const auto tau = run_tauplan({"predict", job, "--strategies", "sync", "--tau", "7"});
  INFO(tau.err);
  REQUIRE(tau.exit_code == 0);
  CHECK(tau.out == plain.out);
  CHECK(tau.err.find("tauplan: note: --tau 7: not read by the strategies run (sync), only by "
                     "local-sgd") != std::string::npos);
  CHECK(plain.err.find("note: --") == std::string::npos);
}

TEST_CASE("flags: layout and plan tables say where they came from") {
  const auto layout =
      run_tauplan({"layout", TAUPLAN_SOURCE_DIR "/experiments/transformer/single.yaml"});
  INFO(layout.err);
  REQUIRE(layout.exit_code == 0);
  CHECK(layout.err.find("# layout engine=analytic") != std::string::npos);
  CHECK(layout.err.find(" seed=1 commit=") != std::string::npos);
  // A one-leaf cluster shows an oversubscription given as unused, not as if it acted.
  const std::string xml = write_temp_file("flags-read-one-leaf.xml", "");
  const auto platform = run_tauplan({"platform", "--preset", "dgx-h100", "--nodes", "4", "--out",
                                     xml, "--oversubscription", "4"});
  INFO(platform.err);
  REQUIRE(platform.exit_code == 0);
  CHECK(platform.out.find("no domain uplink (one leaf domain: oversubscription 4:1 unused)") !=
        std::string::npos);
}

TEST_CASE(
    "flags: a repeated flag, a mode's flag without its mode and a flag-made value are named") {
  const std::string job = flags_job();
  // CLI11's "At Most 1 required but received 2", said as every other refusal says it.
  expect_bad_input({"simulate", job, "--stragglers", "h0:2", "--stragglers", "h1:2"},
                   "tauplan: error: command line: --stragglers: expected one --stragglers (given "
                   "once), got 2 of them: 'h0:2', 'h1:2'");
  expect_bad_input({"predict", job, "--workers", "2", "--workers", "3"},
                   "command line: --workers: expected one --workers (given once), got 2 of them");
  // An MPI communicator outside a launcher is refused for `single` too (it ran on threads).
  expect_bad_input({"measure", job, "--strategies", "single", "--communicator", "mpi"},
                   "command line: --communicator: expected threads, or mpi under an MPI launcher");
  // The MPI messages' sizes are read with --mpi only.
  expect_bad_input(
      {"testbed", "calibrate", "--out", "/tmp/tauplan-flags.xml", "--mpi-sizes", "131072,262144"},
      "command line: --mpi-sizes: expected no --mpi-sizes without --mpi");
  expect_bad_input(
      {"testbed", "calibrate", "--out", "/tmp/tauplan-flags.xml", "--mpi-repeats", "2"},
      "command line: --mpi-repeats: expected no --mpi-repeats without --mpi");
  expect_bad_input(
      {"testbed", "calibrate", "--out", "/tmp/tauplan-flags.xml", "--mpi-waiters", "asleep"},
      "command line: --mpi-waiters: expected no --mpi-waiters without --mpi");
  expect_bad_input({"testbed", "calibrate", "--out", "/tmp/tauplan-flags.xml", "--queued-window"},
                   "command line: --queued-window: expected no --queued-window without --mpi (the "
                   "window is measured with MPI messages)");
  // --fresh measures sparknet's counts again; hetseq alone measures nothing it would reuse.
  expect_bad_input({"reproduce", "hetseq", "--fresh", "--reduced", "--out", "/tmp/tauplan-fresh"},
                   "command line: --fresh: expected no --fresh for hetseq alone");
  // An output folder that cannot be made is said of the flag, with the path as what was given.
  const std::string blocker = write_temp_file("flags-read-blocker", "a file\n");
  expect_bad_input(
      {"published", "--out", blocker},
      "command line: --out: expected a folder that can be created, got " + blocker + " (");
  // A check deep in exec names the flag that gave the value, not the job file.
  const std::string async =
      write_temp_file("flags-read-async-measure.yaml",
                      "workload: fashion-mlp\nplatform: test-ps\nstrategies: [async-ps]\n"
                      "workers: 2\nmax_steps: 2\n");
  expect_bad_input({"measure", async, "--timing", "lockstep"},
                   "command line: --timing: expected concurrent for async-ps");
  expect_bad_input({"measure", job, "--strategies", "sync", "--communicator", "thread-messages",
                    "--collective", "butterfly"},
                   "command line: --collective: expected one of ring");
  // A bad value of a sweep's --set is named as that --set, not as a --batch nobody typed.
  expect_bad_input({"sweep", job, "--set", "batch=32,-1", "--out", "/tmp/tauplan-flags-sweep"},
                   "command line: --set batch=-1: expected a whole number");
  expect_bad_input({"validate", job, "--set", "workers=1,abc"},
                   "command line: --set workers=abc: expected a whole number");
  // ... wherever the point's job is checked, not only where it is read.
  expect_bad_input({"validate", job, "--set", "tensor_parallel=1,2"},
                   "command line: --set tensor_parallel=2: expected its default unless "
                   "`strategies` include mesh");
  // Flags meant to repeat are not blamed for another flag's missing value.
  const auto missing =
      run_tauplan({"sweep", job, "--set", "batch=1", "--set", "tau=2", "--workers"});
  CHECK(missing.exit_code == 2);
  CHECK(missing.err.find("--set: expected one") == std::string::npos);
}

TEST_CASE("flags: sweep says when --jobs had nothing to run at once") {
  const std::string job = flags_job();
  const std::string out = write_temp_file("flags-read-sweep-jobs", "") + ".out";
  const auto swept =
      run_tauplan({"sweep", job, "--set", "workers=2,4", "--jobs", "2", "--out", out, "--fresh"});
  INFO(swept.err);
  REQUIRE(swept.exit_code == 0);
  CHECK(swept.err.find("# note: command line: --jobs 2 unused: the points ran in this process, "
                       "one after another") != std::string::npos);
  // Without --jobs, nothing is said.
  const auto plain = run_tauplan({"sweep", job, "--set", "workers=2,4", "--out", out, "--fresh"});
  REQUIRE(plain.exit_code == 0);
  CHECK(plain.err.find("--jobs") == std::string::npos);
}
