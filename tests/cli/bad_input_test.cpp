// bad_input_test.cpp: the bad-input battery, run with the real tauplan binary.
//
// Every case is bad input in a job, a workload, a platform, an inventory, a convergence table or
// on the command line, and must end the same way: exit code 2 (never a signal, an abort or a
// core: those give 128 + N; a hang is killed by an alarm and gives 142), exactly one line on
// stderr, "tauplan: error: FILE: KEY: expected ...", that names the file and the key (each
// case's fragment), and nothing on stdout. The fixtures live in tests/fixtures/bad/ ("@/" in a
// case), each platform and table opening with what is wrong with it; a few inputs that are too
// large to keep (a 100,000-character name, a 64 MiB stream) are made here. The failures the
// issue found on main are cases: bandwidth 0 (SimGrid aborted), a host without a route (simulate
// aborted, predict invented a time), a negative latency, steps 1e308 (a negative total time),
// flop_per_sample 1e308 (inf), layers that do not add up, an empty job file and a folder as the
// job (the defaults ran, exit 0), duplicate keys, a 100,000-character name (exit 1).
#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "tests/cli/run_command.hpp"

using tauplan::test::run_tauplan;
using tauplan::test::write_temp_file;

namespace {

const std::string kBad = TAUPLAN_SOURCE_DIR "/tests/fixtures/bad/";

struct Case {
  std::string name;
  std::vector<std::string> args;  ///< "@/" at the start of an argument is the fixtures folder
  std::string fragment;           ///< names the key (and the file, unless `file` does)
  std::string file = "";          ///< when not empty: "FILE: " must be in the message too
};

// A scratch folder as the working folder: `plan` writes its results next to where it runs.
std::string scratch_folder() {
  static const std::string folder =
      std::filesystem::path(write_temp_file("bad-input-scratch", "")).parent_path().string();
  return folder;
}

void check(const Case& c) {
  std::vector<std::string> args;
  for (const std::string& a : c.args)
    args.push_back(a.rfind("@/", 0) == 0 ? kBad + a.substr(2) : a);
  const auto r = run_tauplan(args, scratch_folder(), 60);
  INFO("case: " << c.name << "\nstderr: " << r.err << "\nstdout: " << r.out.substr(0, 400));
  CHECK(r.exit_code == 2);
  CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
  CHECK(r.err.rfind("tauplan: error: ", 0) == 0);
  CHECK(r.err.find(c.fragment) != std::string::npos);
  if (!c.file.empty()) CHECK(r.err.find(c.file + ": ") != std::string::npos);
  CHECK(r.out.empty());
}

void check_all(const std::vector<Case>& cases) {
  for (const Case& c : cases)
    check(c);
}

// `verb` on a platform fixture with a workload that needs no memory check.
Case platform(const std::string& file, const std::string& fragment,
              const std::string& verb = "predict", const std::string& workers = "2") {
  return {verb + " " + file,
          {verb, "--platform", "@/" + file, "--workload", "fashion-mlp", "--check_memory", "false",
           "--iterations", "3", "--workers", workers},
          fragment,
          file};
}

Case job(const std::string& file, const std::string& fragment) {
  return {"predict " + file, {"predict", "@/" + file}, fragment};
}

Case workload(const std::string& file, const std::string& fragment) {
  return {"workload " + file,
          {"predict", "--platform", "test-crossbar-4", "--workload", "@/" + file},
          "command line: --workload: expected " + kBad + file + ": " + fragment};
}

Case inventory(const std::string& file, const std::string& fragment) {
  return {"plan " + file, {"plan", "@/" + file}, fragment, file};
}

Case table(const std::string& file, const std::string& fragment) {
  return {"table " + file,
          {"predict", "@/job-" + file.substr(0, file.size() - 4) + ".yaml"},
          fragment,
          file};
}

}  // namespace

TEST_CASE("bad input: job files") {
  check_all({
      job("job-empty.yaml", "job-empty.yaml: job: expected a job file with at least one key"),
      job("job-comments.yaml",
          "job-comments.yaml: job: expected a job file with at least one "
          "key (tauplan help-keys lists them), got no keys"),
      job("job-duplicate.yaml",
          "job-duplicate.yaml: workers: expected a key given once, got "
          "twice (lines 2 and 3)"),
      job("job-unknown-key.yaml", "job-unknown-key.yaml: wokers: expected a known job key"),
      job("job-list-key.yaml", "job-list-key.yaml: (key): expected keys that are words"),
      job("job-top-list.yaml", "job-top-list.yaml: (top level): expected a map of job keys"),
      job("job-malformed.yaml", "job-malformed.yaml: line 2: expected valid YAML"),
      job("job-map-value.yaml", "job-map-value.yaml: workers: expected a whole number, got a map"),
      job("job-alias-bomb.yaml",
          "job-alias-bomb.yaml: f[7][8][8][8][8][9]: expected a document of "
          "at most 1000000 values"),
      job("job-alias-loop.yaml", "job-alias-loop.yaml: a[2][2]"),
      job("job-critical-batch-huge.yaml",
          "job-critical-batch-huge.yaml: min_steps, critical_batch: expected a model that gives "
          "Na(b) = Smin (1 + Bcrit / b) in (0, 1e+15], got 1e+27"),
      job("job-critical-batch-missing.yaml",
          "job-critical-batch-missing.yaml: min_steps: expected a number > 0"),
      job("job-table-missing.yaml", "job-table-missing.yaml: convergence_table: expected a CSV"),
      job("job-table-no-file.yaml",
          "no-such-table.csv: convergence_table: expected a readable file"),
      job("job-table-folder.yaml", "bad/: convergence_table: expected a file, got a folder"),
      job("job-workload-flop-huge.yaml", "job-workload-flop-huge.yaml: workload: expected " + kBad +
                                             "w-flop-huge.yaml: flop_per_sample: "
                                             "expected a number in (0, 1e+21], got '1e308'"),
      job("job-workload-layers.yaml",
          "job-workload-layers.yaml: workload: expected " + kBad +
              "w-layers-sum.yaml: layers[].parameters: "
              "expected layers that add up to parameters = 1000, got a sum of 800"),
      job("job-platform-bandwidth-zero.yaml",
          "p-bandwidth-zero.xml: line 8: <link id=\"l\"> bandwidth: expected a value in [1, "
          "1e+18] B/s, got '0GBps'"),
      job("job-platform-missing.yaml", "job-platform-missing.yaml: platform: expected a platform"),
      job("job-platform-folder.yaml", "job-platform-folder.yaml: platform: expected a platform"),
      {"folder as the job", {"predict", "@/"}, "bad/: job: expected a file, got a folder"},
      {"missing job file",
       {"predict", "@/no-such-job.yaml"},
       "no-such-job.yaml: job: expected a readable file"},
      {"/dev/null as the job",
       {"predict", "/dev/null"},
       "/dev/null: job: expected a job file with at least one key"},
      {"an endless job stream",
       {"predict", "/dev/zero"},
       "/dev/zero: job: expected a file of at most 64 MiB"},
  });
}

TEST_CASE("bad input: job files made here") {
  const auto key_file = write_temp_file("long-key.yaml", std::string(100000, 'k') + ": 1\n");
  const auto key300_file = write_temp_file("key-300.yaml", std::string(300, 'k') + ": 1\n");
  const auto name_file =
      write_temp_file("long-name.yaml", "workload: " + std::string(100000, 'w') + "\n");
  const auto nan_file = write_temp_file("nan.yaml", "iterations: .nan\n");
  const auto inf_file = write_temp_file("inf.yaml", "comm_s: .inf\n");
  const auto big_file = write_temp_file("big-integer.yaml", "seed: 1e300\n");
  // A layout whose Plan would need terabytes: refused before it is built (issue 24), by simulate
  // as by predict, naming what to change.
  const auto huge_layout = write_temp_file(
      "huge-layout.yaml",
      "workload: gpt3-175b\nplatform: selene-a100\nstrategies: [mesh]\nworkers: 524288\n"
      "tensor_parallel: 8\npipeline_parallel: 8\nbatch: 33554432\nmicro_batches: 4096\n"
      "sequence_parallel: true\n");
  check_all({
      {"a layout too large to simulate",
       {"simulate", huge_layout},
       huge_layout + ": micro_batches: expected a layout whose Plan has at most 2e+07 ops: fewer "
                     "micro_batches or workers"},
      {"a rank order the trainer does not run",
       {"measure", TAUPLAN_SOURCE_DIR "/experiments/parallelism/fashion-mlp-layouts.yaml",
        "--timing", "concurrent", "--rank-order", "tp-pp-dp"},
       "command line: --rank_order: expected tp-dp-pp to measure strategy mesh"},
      {"ZeRO, which the MLP's layout trainer does not shard",
       {"measure", TAUPLAN_SOURCE_DIR "/experiments/parallelism/fashion-mlp-layouts.yaml",
        "--timing", "concurrent", "--zero-stage", "1"},
       "command line: --zero_stage: expected 0 to measure strategy mesh on an MLP"},
      {"a rank order of no framework",
       {"predict", huge_layout, "--rank-order", "dp-tp-pp"},
       "rank_order: expected one of tp-dp-pp, tp-pp-dp, got 'dp-tp-pp'"},
      {"a layout too large to predict",
       {"predict", huge_layout},
       huge_layout + ": micro_batches: expected a layout whose Plan has at most 2e+07 ops"},
      // yaml-cpp refuses keys over 1024 characters itself; tauplan refuses them over 256.
      {"a 100,000-character key",
       {"predict", key_file},
       key_file + ": line 1: expected valid YAML"},
      {"a 300-character key",
       {"predict", key300_file},
       ": expected a key of at most 256 characters, got 300 characters",
       key300_file},
      {"a 100,000-character workload name",
       {"predict", name_file},
       name_file + ": workload: expected at most 4096 characters, got 100000 characters"},
      {"a job path of 5000 characters",
       {"predict", "/" + std::string(5000, 'p') + ".yaml"},
       ": job: expected a path of at most 4096 characters, got 5006 characters"},
      {"iterations nan",
       {"predict", nan_file},
       nan_file + ": iterations: expected a number without unit, got '.nan'"},
      {"comm_s inf", {"predict", inf_file}, inf_file + ": comm_s: expected seconds"},
      {"seed 1e300",
       {"predict", big_file},
       big_file + ": seed: expected a whole number of at most 1e+15, got '1e300'"},
  });
}

TEST_CASE("bad input: command-line flags") {
  const std::string huge(100000, 'a');
  check_all({
      {"--mpi-sizes below the eager limit",
       {"testbed", "calibrate", "--out", "/tmp/tauplan-bad-input.xml", "--mpi", "--mpi-sizes",
        "1024,131072"},
       "--mpi-sizes: expected message sizes in bytes above the eager limit (65536"},
      {"--mpi-sizes twice the same size (no slope to fit)",
       {"testbed", "calibrate", "--out", "/tmp/tauplan-bad-input.xml", "--mpi", "--mpi-sizes",
        "131072,131072"},
       "command line: --mpi-sizes: expected at least 2 distinct sizes and --mpi-repeats >= 1, got "
       "1 distinct sizes"},
      {"--mpi-waiters neither spin nor asleep",
       {"testbed", "calibrate", "--out", "/tmp/tauplan-bad-input.xml", "--mpi", "--mpi-waiters",
        "polling"},
       "command line: --mpi-waiters: expected spin or asleep, got polling"},
      {"--workers abc",
       {"predict", "--workers", "abc"},
       "command line: --workers: expected a whole number, got 'abc'"},
      {"--workers 0",
       {"predict", "--workers", "0"},
       "command line: --workers: expected a whole number between 1 and 1e+06"},
      {"--workers 1e300",
       {"predict", "--workers", "1e300"},
       "command line: --workers: expected a whole number of at most 1e+06"},
      {"--workers 2.5",
       {"predict", "--workers", "2.5"},
       "command line: --workers: expected a whole number"},
      {"--batch 0",
       {"predict", "--batch", "0"},
       "command line: --batch: expected a whole number between 1 and 1e+09, got '0'"},
      {"--tau 1e7",
       {"predict", "--tau", "1e7"},
       "command line: --tau: expected a whole number between 1 and 1e+06"},
      {"--iterations inf",
       {"simulate", "--iterations", "inf"},
       "command line: --iterations: expected a number without unit, got 'inf'"},
      {"failures with some rounds extrapolated",
       {"simulate", "--platform", "test-crossbar-4", "--workload", "fashion-mlp", "--workers", "2",
        "--iterations", "100", "--sim_rounds", "2", "--failures", "h0@1s"},
       "sim_rounds: expected 0 (every round) when the job has failures: they are not "
       "extrapolated, got 2 of 100"},
      {"failures with some async updates extrapolated",
       {"simulate", "--platform", "test-ps", "--workload", "fashion-mlp", "--workers", "2",
        "--strategies", "async-ps", "--iterations", "100", "--sim_rounds", "2", "--failures",
        "h0@1s"},
       "sim_rounds: expected 0 (every round) when the job has failures"},
      {"latency_jitter in coarse mode",
       {"simulate", "--platform", "test-crossbar-4", "--workload", "fashion-mlp", "--workers", "2",
        "--strategies", "sync", "--sim_mode", "coarse", "--latency_jitter", "0.05"},
       "command line: --latency_jitter: expected 0 for 'sync' (sim_mode coarse"},
      {"latency_jitter with an asynchronous strategy among others",
       {"simulate", "--platform", "test-ps", "--workload", "fashion-mlp", "--workers", "2",
        "--strategies", "sync,async-ps", "--latency_jitter", "0.05"},
       "command line: --latency_jitter: expected 0 for 'async-ps' (an asynchronous strategy)"},
      {"tau beside round_budget_s",
       {"predict", "--strategies", "local-sgd", "--tau", "50", "--round_budget_s", "10s"},
       "command line: --tau: expected tau 1 (or none) with round_budget_s: the budget decides "
       "the local steps, "
       "got 50"},
      {"layout --count 0",
       {"layout", TAUPLAN_SOURCE_DIR "/experiments/scale/jobs/gpt3-1024-p8.yaml", "--fit",
        "--count", "0"},
       "command line: --count: expected a whole number of layouts >= 1, got 0"},
      {"layout --count without --fit",
       {"layout", TAUPLAN_SOURCE_DIR "/experiments/scale/jobs/gpt3-1024-p8.yaml", "--count", "3"},
       "command line: --count: expected --count with --fit"},
      {"reproduce --out a file",
       {"reproduce", "hetseq", "--reduced", "--out", "@/p-empty.xml"},
       "command line: --out: expected a folder that can be created, got "},
      {"--iterations 1e308",
       {"predict", "--iterations", "1e308"},
       "command line: --iterations: expected a number above 0 and at most 1e+15"},
      {"--iterations 0",
       {"predict", "--iterations", "0"},
       "command line: --iterations: expected a number above 0 and at most 1e+15"},
      {"--seed -1", {"predict", "--seed", "-1"}, "command line: --seed: expected"},
      {"--comm_s -1ms", {"predict", "--comm_s", "-1ms"}, "command line: --comm_s: expected"},
      {"--comm_s 5parsec",
       {"predict", "--comm_s", "5parsec"},
       "command line: --comm_s: expected seconds"},
      {"--compute_s 0",
       {"predict", "--compute_s", "0"},
       "command line: --compute_s: expected seconds"},
      {"--step_overhead_s 1e10",
       {"predict", "--step_overhead_s", "1e10"},
       "command line: --step_overhead_s: expected seconds between 0 and 1e+09"},
      {"--bucket_bytes 25Mb (bits)",
       {"predict", "--bucket_bytes", "25Mb"},
       "command line: --bucket_bytes: expected bytes"},
      {"--bucket_bytes 25mib (lower case)",
       {"predict", "--bucket_bytes", "25mib"},
       "command line: --bucket_bytes: expected bytes"},
      {"--bucket_bytes 0",
       {"predict", "--bucket_bytes", "0"},
       "command line: --bucket_bytes: expected bytes"},
      {"--drift 1.5",
       {"predict", "--drift", "1.5"},
       "command line: --drift: expected a number between 0 and 1"},
      {"--split random",
       {"predict", "--split", "random"},
       "command line: --split: expected one of even, speed"},
      {"--strategies async",
       {"predict", "--strategies", "async"},
       "command line: --strategies: expected items among"},
      {"--strategies sync,,single",
       {"predict", "--strategies", "sync,,single"},
       "command line: --strategies: expected a list without empty items"},
      {"--strategies ''",
       {"predict", "--strategies", ""},
       "<command line>: strategies: expected at least one strategy"},
      {"--collective allreduce",
       {"predict", "--collective", "allreduce"},
       "command line: --collective: expected one of"},
      {"--overlap maybe",
       {"predict", "--overlap", "maybe"},
       "command line: --overlap: expected true or false"},
      {"--workload of 100,000 characters",
       {"predict", "--workload", huge},
       "command line: --workload: expected at most 4096 characters, got 100000"},
      {"--platform of 100,000 characters",
       {"predict", "--platform", huge},
       "command line: --platform: expected at most 4096 characters, got 100000"},
      {"--single_host of 100,000 characters",
       {"predict", "--single_host", huge},
       "command line: --single_host: expected at most 256 characters"},
      {"--hosts with a 100,000-character host",
       {"predict", "--hosts", "h0," + huge},
       "command line: --hosts: expected at most 256 characters"},
      {"--hosts unknown",
       {"predict", "--platform", "test-crossbar-4", "--hosts", "nohost", "--workers", "1"},
       "command line: --hosts: expected hosts of platform"},
      {"--workers beyond the hosts",
       {"predict", "--platform", "test-crossbar-4", "--workers", "9"},
       "command line: --workers: expected at most 4"},
      {"--batch beyond GPU memory",
       {"predict", "--platform", "test-crossbar-4", "--workload", "resnet-50", "--strategies",
        "single", "--batch", "4096"},
       "command line: --batch: expected a per-worker batch that fits"},
      {"--convergence critical-batch without min_steps",
       {"predict", "--convergence", "critical-batch", "--critical_batch", "100"},
       "<command line>: min_steps: expected a number > 0"},
      {"--network_model ns3",
       {"simulate", "--network_model", "ns3"},
       "command line: --network_model: expected one of CM02, LV08"},
      {"--crosstraffic maybe",
       {"simulate", "--crosstraffic", "maybe"},
       "command line: --crosstraffic: expected one of auto, on, off"},
      {"--tcp_gamma 0",
       {"simulate", "--tcp_gamma", "0"},
       "command line: --tcp_gamma: expected bytes"},
      {"--sim_rounds -1",
       {"simulate", "--sim_rounds", "-1"},
       "command line: --sim_rounds: expected a whole number"},
      {"--failures h0@soon",
       {"simulate", "--failures", "h0@soon"},
       "command line: --failures: expected seconds"},
      {"--stragglers h0:0",
       {"simulate", "--stragglers", "h0:0"},
       "command line: --stragglers: expected HOST:FACTOR:FRACTION"},
      {"--failure_restart_s -5",
       {"simulate", "--failure_restart_s", "-5"},
       "command line: --failure_restart_s: expected seconds"},
      {"--trace into a missing folder",
       {"simulate", "--trace", "/nonexistent/dir/t.json"},
       "/nonexistent/dir/t.json: trace: expected a writable file"},
      {"unknown flag",
       {"predict", "--wokers", "3"},
       "command line: --wokers: expected a flag of predict (did you mean '--workers'?)"},
      {"--cfg unknown item",
       {"simulate", "--cfg=bogus/item:1"},
       "command line: --cfg=bogus/item:1: expected an item SimGrid accepts, got Bad config key"},
      {"--cfg without a colon",
       {"simulate", "--cfg=noColon"},
       "command line: --cfg=noColon: expected NAME:VALUE"},
      {"--cfg of a job key",
       {"simulate", "--cfg=network/model:LV08"},
       "command line: --cfg=network/model:LV08: expected the job key network_model"},
      {"--cfg bad value",
       {"simulate", "--cfg=network/crosstraffic:maybe"},
       "command line: --cfg=network/crosstraffic:maybe: expected the job key crosstraffic"},
      {"--cfg bad double",
       {"simulate", "--cfg=maxmin/precision:abc"},
       "command line: --cfg=maxmin/precision:abc: expected an item SimGrid accepts"},
      {"--log bad control string",
       {"simulate", "--log=bogus"},
       "command line: --log=bogus: expected an item SimGrid accepts, got Invalid control string"},
      {"--log bad priority",
       {"simulate", "--log=root.thres:bogus"},
       "command line: --log=root.thres:bogus: expected an item SimGrid accepts, got Unknown "
       "priority name"},
      {"sweep --set unknown key",
       {"sweep", "--set", "wokers=1,2"},
       "command line --set: wokers: expected a job key"},
      {"plan of a missing inventory",
       {"plan", "@/no-such-inventory.yaml"},
       "no-such-inventory.yaml: inventory: expected a readable file"},
  });
}

TEST_CASE("bad input: workloads") {
  check_all({
      workload("w-layers-sum.yaml", "layers[].parameters: expected layers that add up"),
      workload("w-flop-huge.yaml", "flop_per_sample: expected a number in (0, 1e+21], got '1e308'"),
      workload("w-parameters-negative.yaml", "parameters: expected a number in (0, 1e+15]"),
      workload("w-parameters-nan.yaml", "parameters: expected a number, got '.nan'"),
      workload("w-duplicate-key.yaml", "parameters: expected a key given once"),
      workload("w-no-name.yaml", "name: expected the workload's name"),
      workload("w-unknown-key.yaml", "flops: expected one of the known keys"),
      workload("w-bytes-per-parameter-zero.yaml", "bytes_per_parameter: expected a number in (0"),
      workload("w-layers-not-list.yaml", "layers: expected a list of layers"),
      workload("w-layer-unknown-key.yaml", "layers[0].kind: expected one of the known keys"),
      workload("w-empty.yaml", "(top level): expected a map of workload keys"),
      workload("w-not-map.yaml", "(top level): expected a map of workload keys"),
      workload("w-activation-negative.yaml", "activation_bytes_per_sample: expected a number in"),
      workload("w-flop-text.yaml", "flop_per_sample: expected a number, got 'lots'"),
  });
}

TEST_CASE("bad input: convergence tables") {
  check_all({
      table("t-steps-huge.csv",
            "line 2 column steps: expected a number in (0, 1e+15], got '1e308'"),
      table("t-steps-zero.csv", "line 2 column steps: expected a number in (0, 1e+15], got '0'"),
      table("t-batch-zero.csv", "line 2 column batch: expected a number in (0, 1e+12], got '0'"),
      table("t-workers-fraction.csv", "line 2 column workers: expected a whole number in [1"),
      table("t-tau-zero.csv", "line 2 column tau: expected a whole number in [1, 1e+06], got '0'"),
      table("t-header.csv", "header: expected the columns batch,workers,tau,steps"),
      table("t-columns.csv", "line 2: expected 4 columns, got 5"),
      table("t-duplicate.csv", "batch 256: expected one row per (batch, workers=1, tau=1)"),
      table("t-empty.csv", "rows: expected at least one measured row after the header"),
      table("t-text.csv", "line 2 column steps: expected a number, got 'many'"),
      table("t-inf.csv", "line 2 column steps: expected a number, got 'inf'"),
      table("t-outside.csv", "Na(b): expected a batch inside the measured range [16, 32]"),
  });
}

TEST_CASE("bad input: platforms, read before SimGrid") {
  check_all({
      platform("p-bandwidth-zero.xml", "line 8: <link id=\"l\"> bandwidth: expected a value in"),
      platform("p-bandwidth-zero.xml", "line 8: <link id=\"l\"> bandwidth: expected a value in",
               "simulate"),
      platform("p-bandwidth-negative.xml", "line 8: <link id=\"l\"> bandwidth: expected a value"),
      platform("p-bandwidth-unitless.xml",
               "line 8: <link id=\"l\"> bandwidth: expected a bandwidth (a number with a unit"),
      platform("p-bandwidth-word.xml", "line 8: <link id=\"l\"> bandwidth: expected a bandwidth"),
      platform("p-bandwidth-huge.xml", "line 8: <link id=\"l\"> bandwidth: expected a bandwidth"),
      platform("p-bandwidth-list.xml", "line 8: <link id=\"l\"> bandwidth: expected one bandwidth"),
      platform("p-latency-negative.xml",
               "line 8: <link id=\"l\"> latency: expected a value in [0, 1e+06] s, got '-10us'"),
      platform("p-latency-negative.xml", "line 8: <link id=\"l\"> latency: expected a value in",
               "simulate"),
      platform("p-latency-unitless.xml", "line 8: <link id=\"l\"> latency: expected seconds"),
      platform("p-latency-huge.xml", "line 8: <link id=\"l\"> latency: expected a value in"),
      platform("p-speed-zero.xml", "line 6: <host id=\"a\"> speed: expected a value in [1, 1e+24]"),
      platform("p-speed-negative.xml", "line 6: <host id=\"a\"> speed: expected a value in"),
      platform("p-speed-unitless.xml", "line 6: <host id=\"a\"> speed: expected a speed"),
      platform("p-speed-pstate-zero.xml", "line 6: <host id=\"a\"> speed: expected a value in"),
      platform("p-speed-bad-unit.xml", "line 6: <host id=\"a\"> speed: expected a speed"),
      platform("p-core-zero.xml", "line 6: <host id=\"a\"> core: expected a whole number in [1"),
      platform("p-pstate-beyond.xml", "line 6: <host id=\"a\"> pstate: expected a whole number"),
      platform("p-state-file.xml", "line 6: <host id=\"a\"> state_file: expected no state_file"),
      platform("p-speed-file-missing.xml",
               "line 6: <host id=\"a\"> speed_file: expected a readable profile file"),
      platform("p-speed-file-absolute.xml",
               "line 6: <host id=\"a\"> speed_file: expected a path relative to"),
      {"profile with dates going back",
       {"predict", "--platform", "@/p-speed-file-unsorted.xml", "--workload", "fashion-mlp"},
       "profile-unsorted.txt: line 3: expected a date >= the previous one (10), got 5"},
      {"bandwidth profile dropping to 0",
       {"predict", "--platform", "@/p-bandwidth-file-zero.xml", "--workload", "fashion-mlp"},
       "profile-bandwidth-zero.txt: line 2: expected a value in [1, 1e+18]"},
      platform("p-link-twice.xml", "line 9: <link id=\"l\"> id: expected a link name used once"),
      platform("p-host-twice.xml", "line 7: <host id=\"a\"> id: expected a host, router or zone"),
      platform("p-routing-unknown.xml",
               "line 5: <zone id=\"world\"> routing: expected one of Full"),
      platform("p-include.xml", "line 6: <include>: expected <prop>"),
      platform("p-config.xml", "line 4: <config>: expected <zone> or <cluster> here"),
      platform("p-torus-mismatch.xml", "<cluster id=\"c\"> topo_parameters: expected dimensions"),
      platform("p-dragonfly-bad.xml", "<cluster id=\"c\"> topo_parameters: expected GROUPS"),
      platform("p-fattree-bad.xml", "<cluster id=\"c\"> topo_parameters: expected LEVELS"),
      platform("p-radical-reversed.xml", "<cluster id=\"c\"> radical: expected numbers or ranges"),
      platform("p-radical-twice.xml", "<cluster id=\"c\"> radical: expected a host, router or"),
      platform("p-radical-huge.xml", "<cluster id=\"c\"> radical: expected numbers or ranges"),
      platform("p-cluster-backbone-zero.xml", "<cluster id=\"c\"> bb_bw: expected a value in"),
      platform("p-cluster-link-name.xml",
               "<link id=\"c_link_0\">: expected a link name that cluster c does not make"),
      platform("p-no-doctype.xml",
               "line 2: DOCTYPE: expected <!DOCTYPE platform SYSTEM "
               "\"https://simgrid.org/simgrid.dtd\"> before <platform>"),
      platform("p-not-xml.xml", "line 1: file: expected a SimGrid platform"),
      platform("p-empty.xml", "line 1: file: expected a SimGrid platform"),
      platform("p-version-3.xml", "line 3: <platform> version: expected version=\"4.1\""),
      platform("p-no-version.xml", "line 3: <platform> version: expected a value (required)"),
      platform("p-cdata.xml", "line 5: <zone>: expected elements and comments only"),
      platform("p-text.xml", "line 5: <zone>: expected elements only"),
      platform("p-entity.xml", "line 5: <host> id: expected one of the XML entities"),
      platform("p-unclosed.xml", "line 6: </platform>: expected </zone>"),
      platform("p-no-hosts.xml", "platform: expected at least one <host> or <cluster>"),
      platform("p-two-root-zones.xml", "line 5: <zone id=\"b\">: expected one <zone> or"),
      platform("p-prop-twice.xml", "<prop id=\"gpu_model\"> id: expected a prop given once"),
      platform("p-prop-memory.xml", "host a prop gpu_memory_bytes: expected bytes"),
      platform("p-prop-role.xml", "host a prop role: expected worker or server"),
      platform(
          "p-prop-efficiency.xml",
          "host a prop efficiency: expected a fraction of the catalog peak in (0, 1], got nan"),
      platform("p-prop-precision.xml", "host a prop precision: expected fp32, fp16, bf16 or fp64"),
      platform("p-prop-gpu.xml", "host a prop gpu_model: expected a GPU of the catalog"),
      platform("p-empty-id.xml", "line 5: <host id=\"\"> id: expected a non-empty name"),
      platform("p-unknown-attribute.xml", "<host id=\"a\"> colour: expected one of the attributes"),
      platform("p-control-character.xml", "line 5: file: expected XML text"),
      platform("p-attribute-twice.xml", "line 5: <host> speed: expected an attribute given once"),
      platform("p-deep-nesting.xml", "element: expected at most 64 nested elements"),
      platform("p-route-twice.xml", "line 12: <route> src: expected one route between two ends"),
      platform("p-route-reverse.xml", "line 12: <route> src: expected one route between two ends"),
      {"platform is a folder",
       {"predict", "--platform", "@/", "--workload", "fashion-mlp"},
       "command line: --platform: expected a platform XML file"},
  });
}

TEST_CASE("bad input: platforms without the routes a plan uses") {
  const char* route = "route b -> c: expected a route between these hosts";
  check_all({
      platform("p-floyd-missing-route.xml", route, "predict", "3"),
      platform("p-floyd-missing-route.xml", route, "simulate", "3"),
      platform("p-full-missing-route.xml", route, "predict", "3"),
      platform("p-full-missing-route.xml", route, "simulate", "3"),
      platform("p-zones-no-gateway.xml", route, "predict", "3"),
      platform("p-zones-no-gateway.xml", route, "simulate", "3"),
  });
}

TEST_CASE("bad input: inventories") {
  check_all({
      inventory("i-duplicate-key.yaml",
                "objective: expected a key given once, got twice (lines 5 and 6)"),
      inventory("i-price-negative.yaml",
                "node_types[0].price_per_hour: expected a number in [0, 1e+09], got '-0.9'"),
      inventory("i-price-huge.yaml", "node_types[0].price_per_hour: expected a number in [0"),
      inventory("i-gpu-unknown.yaml", "node_types[0].gpu_model: expected a GPU of the catalog"),
      inventory("i-nodes-zero.yaml", "node_types[0].nodes: expected a whole number >= 1"),
      inventory("i-bandwidth-zero.yaml", "node_types[0].network.bandwidth: expected a bandwidth"),
      inventory("i-bandwidth-bits.yaml", "node_types[0].network.bandwidth: expected a bandwidth"),
      inventory("i-bandwidth-no-unit.yaml",
                "node_types[0].network.bandwidth: expected a number with its unit (e.g. 25Gbps"),
      inventory("i-latency-no-unit.yaml",
                "node_types[0].network.latency: expected a number with its unit (e.g. 18us"),
      inventory("i-latency-negative.yaml", "node_types[0].network.latency: expected a latency in"),
      inventory("i-deadline-zero.yaml", "deadline: expected a duration in (0, 1e+12] s"),
      inventory("i-deadline-bare.yaml",
                "deadline: expected a duration with its unit (e.g. 12h, 90min), got '12'"),
      {"plan --deadline for min-time",
       {"plan", TAUPLAN_SOURCE_DIR "/experiments/planning/inventories/llama3-70b-15t.yaml",
        "--deadline", "8h"},
       "command line: --deadline: expected --deadline with the objective min-cost-under-deadline"},
      {"plan --deadline without its unit",
       {"plan", TAUPLAN_SOURCE_DIR "/experiments/planning/inventories/cloud-on-demand.yaml",
        "--deadline", "8"},
       "command line: --deadline: expected a duration with its unit"},
      inventory("i-min-steps-huge.yaml", "target.min_steps: expected a number in (0, 1e+15]"),
      inventory("i-epochs-huge.yaml",
                "target.epochs, target.dataset_samples: expected epochs x dataset_samples"),
      inventory("i-no-workload.yaml", "workload: expected a catalog workload name"),
      inventory("i-empty.yaml", "(top level): expected a map of inventory keys"),
      inventory("i-unknown-key.yaml", "budget: expected one of the known keys"),
      inventory("i-search-tau-zero.yaml", "search.tau: expected a whole number >= 1"),
      inventory("i-recheck-model.yaml", "recheck.network_model: expected CM02 or LV08"),
      inventory("i-name-long.yaml", "node_types[0].name: expected at most 256 characters"),
      inventory("i-name-200.yaml", "node_types[0].name: expected a word of at most 128 letters"),
      inventory("i-node-type-twice.yaml", "node_types[1].name: expected a name used once"),
      inventory("i-speed-zero.yaml", "servers.speed_flops: expected a number in [1, 1e+24]"),
      {"plan of a folder", {"plan", "@/"}, "bad/: inventory: expected a file, got a folder"},
  });
}
