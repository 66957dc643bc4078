// planning_cli_test.cpp: `tauplan sweep` and `tauplan plan` end to end: grids, resuming a killed
// sweep, MPI ranks, the revocation model against simulated faults, plan's answers and errors.
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "study/plan/planner.hpp"
#include "tests/cli/expect_bad_input.hpp"
#include "tests/cli/run_command.hpp"

using tauplan::test::expect_bad_input;
using tauplan::test::run_tauplan;
using tauplan::test::write_temp_file;
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

std::string slurp_path(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

fs::path fresh_dir(const std::string& name) {
  const fs::path dir = fs::path(write_temp_file(name + ".keep", "")).parent_path() / name;
  fs::remove_all(dir);
  return dir;
}

size_t count_lines(const std::string& text) {
  return static_cast<size_t>(std::count(text.begin(), text.end(), '\n'));
}

const std::string kCrossbar = TAUPLAN_SOURCE_DIR "/platforms/test-crossbar-4.xml";

std::string seeds(int n) {
  std::string s;
  for (int i = 1; i <= n; ++i)
    s += (i > 1 ? "," : "") + std::to_string(i);
  return s;
}

// Bad input: exit code 2 and exactly one line on stderr that contains `fragment`.
}  // namespace

TEST_CASE("sweep: analytic grid of every combination, CSV and JSON, resumed without work") {
  const auto job =
      write_temp_file("sweep-grid.yaml", "platform: " + kCrossbar +
                                             "\nworkload: fashion-mlp\n"
                                             "strategies: [single, sync, local-sgd]\n");
  const fs::path out = fresh_dir("sweep-grid");
  const auto r = run_tauplan({"sweep", job, "--set", "workers=2,4", "--set", "batch=32,64,128",
                              "--out", out.string(), "--quiet"});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  // Header + 6 points x 3 strategies.
  CHECK(count_lines(r.out) == 1 + 18);
  CHECK(r.out.rfind("point,set.workers,set.batch,status,strategy,workers,tau,batch,", 0) == 0);
  CHECK(r.out.find("\n0,2,32,ok,single,1,1,32,") != std::string::npos);
  CHECK(r.out.find("\n5,4,128,ok,local-sgd,4,10,128,") != std::string::npos);
  CHECK(slurp_path(out / "sweep.csv") == r.out);
  size_t files = 0;
  for (const auto& entry : fs::directory_iterator(out / "points"))
    files += entry.is_regular_file();
  CHECK(files == 6);
  const json doc = json::parse(slurp_path(out / "sweep.json"));
  CHECK(doc["results"].size() == 18);
  CHECK(doc["context"]["points"] == 6);
  // Where the points came from: the platform every verb resolves, and the seed.
  CHECK(doc["context"]["platform_file"].get<std::string>().find("test-crossbar") !=
        std::string::npos);
  CHECK(doc["context"]["seed"] == 1);
  CHECK(doc["results"][0]["workers"] == 1);  // the single row of point 0

  const auto again = run_tauplan({"sweep", job, "--set", "workers=2,4", "--set", "batch=32,64,128",
                                  "--out", out.string(), "--quiet"});
  CHECK(again.exit_code == 0);
  CHECK(again.out == r.out);
  CHECK(again.err.find("6 points (6 resumed, 0 computed, 0 failed)") != std::string::npos);
  // A changed job file is a different sweep: nothing is resumed.
  std::ofstream(job, std::ios::app) << "step_overhead_s: 1ms\n";
  const auto changed = run_tauplan({"sweep", job, "--set", "workers=2,4", "--set",
                                    "batch=32,64,128", "--out", out.string(), "--quiet"});
  CHECK(changed.err.find("(0 resumed, 6 computed") != std::string::npos);
}

TEST_CASE("sweep: a point whose platform file changed is computed again, not resumed") {
  std::ifstream original(kCrossbar);
  std::string xml((std::istreambuf_iterator<char>(original)), std::istreambuf_iterator<char>());
  const auto platform = write_temp_file("sweep-edited-platform.xml", xml);
  const auto job = write_temp_file("sweep-edited.yaml",
                                   "platform: sweep-edited-platform.xml\nworkload: fashion-mlp\n"
                                   "strategies: [sync]\n");
  const fs::path out = fresh_dir("sweep-edited");
  const std::vector<std::string> args = {"sweep", job,          "--set",  "workers=2,4",
                                         "--out", out.string(), "--quiet"};
  const auto first = run_tauplan(args);
  INFO(first.err);
  REQUIRE(first.exit_code == 0);
  CHECK(run_tauplan(args).err.find("(2 resumed, 0 computed") != std::string::npos);
  // Every host ten times slower: the same job text, another platform.
  for (std::string::size_type at = 0; (at = xml.find("speed=\"1Tf\"", at)) != std::string::npos;)
    xml.replace(at, 11, "speed=\"100Gf\"");
  std::ofstream(platform, std::ios::trunc) << xml;
  const auto edited = run_tauplan(args);
  INFO(edited.err);
  CHECK(edited.err.find("(0 resumed, 2 computed") != std::string::npos);
  CHECK(edited.out != first.out);
}

TEST_CASE("sweep: bad input is one line and exit 2, before any work") {
  const auto job = write_temp_file("sweep-bad.yaml", "platform: " + kCrossbar + "\n");
  const fs::path out = fresh_dir("sweep-bad");
  expect_bad_input({"sweep", job, "--set", "wokers=1,2", "--out", out.string()},
                   "command line --set: wokers: expected a job key");
  expect_bad_input(
      {"sweep", job, "--set", "batch=32,-1", "--out", out.string()},
      "command line: --set batch=-1: expected a whole number between 1 and 1e+09, got '-1'");
  expect_bad_input({"sweep", job, "--set", "batch", "--out", out.string()},
                   "expected KEY=V1,V2,...");
  expect_bad_input({"sweep", job, "--out", out.string()}, "--set: expected at least one");
  CHECK_FALSE(fs::exists(out / "points"));
}

TEST_CASE("sweep: points that fail are reported with status error and exit 3") {
  const auto job = write_temp_file(
      "sweep-mem.yaml", "platform: " + kCrossbar + "\nworkload: resnet-50\nstrategies: [sync]\n");
  const fs::path out = fresh_dir("sweep-mem");
  const auto r =
      run_tauplan({"sweep", job, "--set", "batch=64,100000", "--out", out.string(), "--quiet"});
  CHECK(r.exit_code == 3);
  CHECK(r.out.find("\n0,64,ok,sync,") != std::string::npos);
  CHECK(r.out.find("\n1,100000,error,") != std::string::npos);
  CHECK(r.err.find("# point 1: ") != std::string::npos);
  CHECK(r.err.find("batch: expected a per-worker batch that fits") != std::string::npos);
}

TEST_CASE("sweep: a killed simgrid sweep resumes without recomputing finished points") {
  // Each point simulates 1000 ring all-reduces on 4 hosts: about a tenth of a second.
  const auto job = write_temp_file("sweep-kill.yaml", "platform: " + kCrossbar +
                                                          "\nworkload: fashion-mlp\n"
                                                          "strategies: [sync]\nworkers: 4\n"
                                                          "iterations: 1000\n");
  const fs::path out = fresh_dir("sweep-kill");
  const std::vector<std::string> args = {
      "sweep",  job, "--engine", "simgrid",    "--set",  "batch=16,32,48,64,80,96",
      "--jobs", "1", "--out",    out.string(), "--quiet"};
  const pid_t pid = tauplan::test::start_tauplan(args);
  REQUIRE(pid > 0);
  // Kill it once two points are done (and before all are).
  auto count_points = [&] {
    size_t n = 0;
    if (fs::is_directory(out / "points"))
      for (const auto& e : fs::directory_iterator(out / "points"))
        n += e.path().extension() == ".json";
    return n;
  };
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (count_points() < 2 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  kill(pid, SIGKILL);
  int status = 0;
  waitpid(pid, &status, 0);
  const size_t finished = count_points();
  REQUIRE(finished >= 2);
  REQUIRE(finished < 6);
  CHECK_FALSE(fs::exists(out / "sweep.csv"));
  std::map<std::string, std::pair<std::string, fs::file_time_type>> before;
  for (const auto& e : fs::directory_iterator(out / "points"))
    if (e.path().extension() == ".json")
      before[e.path().filename().string()] = {slurp_path(e.path()), fs::last_write_time(e.path())};

  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  const auto resumed = run_tauplan(args);
  INFO(resumed.err);
  REQUIRE(resumed.exit_code == 0);
  CHECK(resumed.err.find("6 points (" + std::to_string(finished) + " resumed, " +
                         std::to_string(6 - finished) + " computed") != std::string::npos);
  for (const auto& [name, content] : before) {
    CHECK(slurp_path(out / "points" / name) == content.first);
    CHECK(fs::last_write_time(out / "points" / name) == content.second);  // not rewritten
  }
  // The resumed result equals an uninterrupted sweep.
  const fs::path clean = fresh_dir("sweep-kill-clean");
  auto fresh_args = args;
  fresh_args[fresh_args.size() - 2] = clean.string();
  fresh_args[7] = "2";  // --jobs 2
  const auto uninterrupted = run_tauplan(fresh_args);
  REQUIRE(uninterrupted.exit_code == 0);
  CHECK(uninterrupted.out == resumed.out);
  CHECK(count_lines(resumed.out) == 7);
  CHECK(resumed.out.find(",simgrid,") != std::string::npos);
}

#ifdef TAUPLAN_MPIEXEC
TEST_CASE("sweep: 2 MPI ranks give the same CSV as 1 process") {
  const auto job = write_temp_file("sweep-mpi.yaml", "platform: " + kCrossbar +
                                                         "\nworkload: fashion-mlp\n"
                                                         "strategies: [sync, local-sgd]\n"
                                                         "iterations: 200\n");
  for (const std::string engine : {"simgrid", "analytic"}) {
    const fs::path one = fresh_dir("sweep-mpi-1-" + engine);
    const fs::path two = fresh_dir("sweep-mpi-2-" + engine);
    const auto single = run_tauplan({"sweep", job, "--engine", engine, "--set", "workers=2,3,4",
                                     "--set", "tau=1,5", "--out", one.string(), "--quiet"});
    REQUIRE(single.exit_code == 0);
    // mpirun -np 2 tauplan sweep ...: run through the test helper's fork/exec of a shell-less
    // argv, with mpirun as the program.
    const pid_t pid = fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
      const std::string log = (two.parent_path() / ("mpi-" + engine + ".log")).string();
      const int fd = open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      dup2(fd, STDOUT_FILENO);
      dup2(fd, STDERR_FILENO);
      setenv("OMPI_MCA_mpi_warn_on_fork", "0", 1);
      std::vector<std::string> a = {TAUPLAN_MPIEXEC,
                                    "--allow-run-as-root",
                                    "--oversubscribe",
                                    "-np",
                                    "2",
                                    TAUPLAN_BINARY,
                                    "sweep",
                                    job,
                                    "--engine",
                                    engine,
                                    "--set",
                                    "workers=2,3,4",
                                    "--set",
                                    "tau=1,5",
                                    "--out",
                                    two.string(),
                                    "--jobs",
                                    "1",
                                    "--quiet"};
      std::vector<char*> argv;
      for (auto& s : a)
        argv.push_back(s.data());
      argv.push_back(nullptr);
      alarm(120);
      execv(a[0].c_str(), argv.data());
      _exit(127);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    INFO(slurp_path(two.parent_path() / ("mpi-" + engine + ".log")));
    REQUIRE(WIFEXITED(status));
    REQUIRE(WEXITSTATUS(status) == 0);
    CHECK(slurp_path(two / "sweep.csv") == slurp_path(one / "sweep.csv"));
    CHECK(count_lines(slurp_path(two / "sweep.csv")) == 1 + 12);
    const json doc = json::parse(slurp_path(two / "sweep.json"));
    CHECK(doc["context"]["mpi_ranks"] == 2);
  }
}
#endif

TEST_CASE("revocations: the analytic expectation matches simulated faults over seeds") {
  // 4 workers, C and S fixed (round 0.45 s), 400 rounds; every worker fails at MTBF 100 s
  // (L = 0.04/s) and a failure stalls the job 5 s, then the round restarts.
  const auto job = write_temp_file(
      "revoc.yaml", "platform: " + kCrossbar +
                        "\nworkload: fashion-mlp\nstrategies: [sync]\nworkers: 4\nbatch: 64\n"
                        "compute_s: 1\ncomm_s: 0.2\niterations: 400\n"
                        "failures: [\"*~100s\"]\nfailure_restart_s: 5\n");
  const fs::path analytic_dir = fresh_dir("revoc-analytic");
  const auto a = run_tauplan(
      {"sweep", job, "--set", "seed=1", "--out", analytic_dir.string(), "--json", "--quiet"});
  REQUIRE(a.exit_code == 0);
  const json row = json::parse(a.out)["results"][0];
  const double expected = row["total_s"];
  const double failure_free = row["failure_free_total_s"];
  const double stddev = row["total_s_stddev"];
  CHECK(failure_free == Approx(400 * 0.45));
  CHECK(row["failure_rate_per_s"].get<double>() == Approx(0.04));

  constexpr int kSeeds = 30;
  const fs::path sim_dir = fresh_dir("revoc-sim");
  const auto s = run_tauplan({"sweep", job, "--engine", "simgrid", "--set", "seed=" + seeds(kSeeds),
                              "--out", sim_dir.string(), "--json", "--quiet"});
  INFO(s.err);
  REQUIRE(s.exit_code == 0);
  const json results = json::parse(s.out)["results"];
  REQUIRE(results.size() == kSeeds);
  double sum = 0;
  size_t failures = 0;
  for (const auto& r : results) {
    sum += r["total_s"].get<double>();
    failures += r["failures"].size();
    CHECK(r["extrapolated"] == false);
  }
  const double mean = sum / kSeeds;
  // 99% interval of the mean of 30 runs (study/common/revocation.hpp states the derivation).
  const double half = 2.5758293035489 * stddev / std::sqrt(static_cast<double>(kSeeds));
  INFO("analytic " << expected << " +- " << half << " (99%), simulated mean " << mean << " over "
                   << kSeeds << " seeds, " << failures << " failures, failure-free "
                   << failure_free);
  CHECK(std::abs(mean - expected) <= half);
  CHECK(std::abs(mean - failure_free) > 3 * half);  // the faults matter: the test can fail
  CHECK(failures > 100);
}

namespace {

const char* kPlanInventory =
    "workload: fashion-mlp\n"
    "target: {accuracy: '88% test', convergence: critical-batch, min_steps: 800, "
    "critical_batch: 512, drift: 0.2}\n"
    "objective: OBJECTIVE\n"
    "node_types:\n"
    "  - {name: v100, gpu_model: V100-SXM2-16GB, gpus_per_node: 2, nodes: 2, price_per_hour: "
    "6.0,\n"
    "     network: {bandwidth: 10Gbps, latency: 10us}}\n"
    "  - {name: k80, gpu_model: K80, nodes: 2, price_per_hour: 0.9}\n"
    "  - {name: k80s, gpu_model: K80, nodes: 2, price_per_hour: 0.3, market: revocable,\n"
    "     revocations_per_hour: 2, restart_s: 30}\n"
    "servers: {max: 1, price_per_hour: 0.2}\n"
    "search: {batch_per_worker: [32, 128], tau: [1, 8], servers: [1]}\n"
    "recheck: {top: 3, sim_rounds: 20}\n";

std::string plan_inventory(const std::string& name, const std::string& objective) {
  std::string text = kPlanInventory;
  text.replace(text.find("OBJECTIVE"), 9, objective);
  return write_temp_file(name, text);
}

}  // namespace

TEST_CASE("plan: frontier, best, simgrid re-check of the top candidates and the plot") {
  const auto inventory = plan_inventory("plan-ok.yaml", "min-cost-under-deadline\ndeadline: 1h");
  const fs::path out = fresh_dir("plan-ok");
  const auto r = run_tauplan({"plan", inventory, "--out", out.string(), "--json"});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const json doc = json::parse(r.out);
  CHECK(doc["objective_met"] == true);
  CHECK(doc["context"]["seed"].is_number_integer());
  const auto& frontier = doc["frontier"];
  REQUIRE(frontier.size() >= 2);
  // Every frontier point is non-dominated by any evaluated configuration (evaluated.csv).
  std::istringstream csv(slurp_path(out / "evaluated.csv"));
  std::string line;
  std::getline(csv, line);
  size_t evaluated = 0;
  while (std::getline(csv, line)) {
    ++evaluated;
    const double t = std::stod(line.substr(0, line.find(',')));
    const double c = std::stod(line.substr(line.find(',') + 1));
    for (const auto& f : frontier)
      CHECK_FALSE(
          tauplan::study::dominates(t, c, f["time_s"].get<double>(), f["cost"].get<double>()));
  }
  CHECK(evaluated == doc["search"]["feasible"].get<size_t>());
  for (const auto& f : frontier) {
    const std::string b = f["bottleneck"];
    CHECK((b == "compute" || b == "communication" || b == "straggler" || b == "memory" ||
           b == "revocations"));
  }
  const json best = doc["best"];
  CHECK(best["time_s"].get<double>() <= 3600);
  // Re-check: the top 3 ran in simgrid; without faults the simulated time is close to the
  // analytic one on these contention-free collectives.
  REQUIRE(doc["recheck"].size() == 3);
  for (const auto& c : doc["recheck"]) {
    INFO(c.dump());
    REQUIRE(c["status"] == 0);
    CHECK(c["simgrid_time_s"].get<double>() > 0);
    if (c["config"]["revocations_per_hour"].get<double>() == 0)
      CHECK(std::abs(c["time_difference"].get<double>()) < 0.05);
  }
  CHECK(fs::exists(out / "candidates" / "01" / "platform.xml"));
  CHECK(fs::exists(out / "candidates" / "01" / "job.yaml"));
  // The generated XML gives the planner's analytic round exactly (same routes in code and XML).
  const auto predicted =
      run_tauplan({"predict", (out / "candidates" / "01" / "job.yaml").string(), "--json"});
  REQUIRE(predicted.exit_code == 0);
  const double round = json::parse(predicted.out)["results"][0]["round_s"];
  CHECK(round == Approx(doc["recheck"][0]["config"]["round_s"].get<double>()).epsilon(1e-9));
  if (std::system("command -v gnuplot > /dev/null 2>&1") == 0) {
    CHECK(fs::file_size(out / "frontier.png") > 1000);
    CHECK(fs::file_size(out / "frontier.svg") > 1000);
  }
}

TEST_CASE("plan: an unreachable deadline names the nearest configuration, exit 3") {
  const auto inventory = plan_inventory("plan-late.yaml", "min-cost-under-deadline\ndeadline: 1ms");
  const fs::path out = fresh_dir("plan-late");
  const auto r =
      run_tauplan({"plan", inventory, "--out", out.string(), "--recheck", "0", "--no-plot"});
  CHECK(r.exit_code == 3);
  CHECK(r.err.find(
            "tauplan plan: no configuration meets the deadline of 0.001 s; the nearest is ") == 0);
  CHECK(count_lines(r.err) == 1);
  CHECK(r.out.find("Pareto frontier") != std::string::npos);
}

TEST_CASE("plan: the frontier shows memory per GPU and MFU, in text and JSON") {
  const auto inventory = plan_inventory("plan-mfu.yaml", "min-time");
  const fs::path out = fresh_dir("plan-mfu");
  const auto r =
      run_tauplan({"plan", inventory, "--out", out.string(), "--recheck", "0", "--no-plot"});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.out.find("mem GiB") != std::string::npos);
  CHECK(r.out.find("MFU") != std::string::npos);
  CHECK(r.out.find("%") != std::string::npos);
  // The table's last line says where the files went.
  CHECK(r.out.find("\nwrote " + out.string() +
                   "/{plan.json,evaluated.csv,frontier.csv,best.csv}\n") != std::string::npos);
  const json doc = json::parse(slurp_path(out / "plan.json"));
  REQUIRE(doc["frontier"].size() >= 1);
  for (const auto& f : doc["frontier"]) {
    INFO(f.dump());
    CHECK(f["memory_per_gpu_bytes"].get<double>() > 0);
    const double mfu = f["mfu"].get<double>();
    CHECK(mfu > 0);
    CHECK(mfu < 1);
    CHECK(mfu == Approx(f["model_flops"].get<double>() / f["peak_flops"].get<double>()));
  }
}

TEST_CASE("plan: bad inventories are one line and exit 2") {
  auto bad = [](const std::string& name, const std::string& from, const std::string& to) {
    std::string text = kPlanInventory;
    text.replace(text.find("OBJECTIVE"), 9, "min-time");
    text.replace(text.find(from), from.size(), to);
    return write_temp_file(name, text);
  };
  const auto gpu = bad("bad-gpu.yaml", "gpu_model: K80, nodes: 2, price_per_hour: 0.9",
                       "gpu_model: K8O, nodes: 2, price_per_hour: 0.9");
  expect_bad_input({"plan", gpu}, gpu + ": node_types[1].gpu_model: expected a GPU of the catalog");
  const auto price = bad("bad-price.yaml", "price_per_hour: 0.9", "price_per_hour: -0.9");
  expect_bad_input(
      {"plan", price},
      price + ": node_types[1].price_per_hour: expected a number in [0, 1e+09], got '-0.9'");
  const auto count =
      bad("bad-count.yaml", "nodes: 2, price_per_hour: 0.9", "nodes: 0, price_per_hour: 0.9");
  expect_bad_input({"plan", count},
                   count + ": node_types[1].nodes: expected a whole number >= 1, got '0'");
  expect_bad_input({"plan", "/nonexistent/inventory.yaml"},
                   "/nonexistent/inventory.yaml: inventory: expected a readable file");
}

TEST_CASE("plan: an fp32 node type is timed at its fp32 speed, not by the GPU's bf16 profile") {
  // The A100's catalog profile times bf16 GEMMs; an inventory that asks for the fp32 peak (the
  // default precision) must not get bf16 times against an fp32 peak (an MFU above 100%).
  const auto f = write_temp_file(
      "fp32-a100.yaml",
      "workload: gpt2-medium\ntarget: {tokens: 1B}\nnode_types:\n"
      "  - {name: a100, gpu_model: A100-SXM4-80GB, gpus_per_node: 8, nodes: 1, "
      "price_per_hour: 10, network: {bandwidth: 100Gbps, latency: 10us, gpu_bandwidth: 300GBps, "
      "gpu_latency: 3us}}\n"
      "search: {strategies: [mesh], batch_per_worker: [8], tensor_parallel: [1], "
      "pipeline_parallel: [1], zero_stage: [0], recompute: [none], micro_batch_size: [1]}\n"
      "recheck: {top: 0}\n");
  const auto r = run_tauplan({"plan", f, "--no-plot", "--json", "--out", f + ".plan"});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const json best = json::parse(r.out)["best"];
  // flop / (fp32 peak x efficiency 0.5): the MFU is the efficiency less the communication.
  CHECK(best["mfu"].get<double>() > 0.4);
  CHECK(best["mfu"].get<double>() <= 0.5);
}
