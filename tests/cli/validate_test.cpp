// validate_test.cpp: `tauplan validate` end to end on a small matrix, with the compute and the
// communication errors held under bounds of their own, both calibrations reported, the
// repeatability label in every output, and its bad inputs (one line, exit 2).
//
// What this run is: on one machine, in lockstep, the measured round is rebuilt from per-op
// thread CPU times by the same longest-path rule the analytic engine uses, on a platform
// calibrated from the same ops: a repeatability check of the timing model (said so in the
// output), not a validation of the model.
//
// The bounds, about three times the spread observed. Four runs of this very matrix (5
// configurations, tests' job below) on this 2-core VM while other builds were running
// (2026-11-23, commit eb852c3 plus the before/after reporting): median |compute error| 2.2% to
// 4.3%, per configuration at most 8.2%; median |comm error| (K > 1) 3.4% to 11.9%, per
// configuration at most 24.0% (local SGD's parameter averaging is predicted 6-24% short: the
// calibration times the gradient combine); median |round error| 3.0% to 5.1%. Since the faster
// CPU step (a combine of 0.17-0.28 ms, a step of 0.5-0.8 ms) the comm errors spread wider: in 4
// runs alone (ctest, a fresh calibration each) median |comm error| 24-34% and 40% with another
// test beside it (ctest -j2), one configuration up to 82.5% in 8 runs; this test now runs alone
// (RUN_SERIAL, tag [timing]); in the same runs one configuration's compute error reached
// 27.6% and its round error 30.8%. Bounds: compute median 15%, any configuration 40%; comm
// median 50%, any configuration 95% (a model without a communication term is -100% on every
// configuration and fails both); round median 15%, any configuration 50%; and a worker twice
// as slow must slow local SGD's round by more than 20% in the measurement and both engines
// (measured: 1.83 -> 3.60 ms). They catch
// breakage of the pipeline (wrong units, the wrong thing calibrated, a slow worker the platform
// does not slow: -42% on those rows); smaller model errors are the business of the
// deterministic tests (tests/sim/calibrated_platform_test.cpp: closed form to 1e-9) and of the
// experiments.
//
// The medians' bounds widen by the machine's own spread in the same run (changed after a CI
// failure, 2026-11-27: median |compute error| 19.9%, comm 34.9%, the rows not printed): each
// measurement sits between a calibration before and one after it, and the median over rows of
// how far those two predictions are apart is what the machine moved while the test watched. On
// the Firecracker guests this runs on, /proc/stat's steal column stays 0, so time the host takes
// from a vCPU lands in thread CPU time: the run (tens of milliseconds) and the faster of two
// calibrations can see different hosts (on a quiet machine here the spread was 13% in one run).
// The widened bounds stop at 30% (comm 75%), short of the breakage above. Every row is
// printed, so that a failure says which.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <vector>

#include <nlohmann/json.hpp>

#include "tests/cli/run_command.hpp"

using tauplan::test::run_tauplan;
using tauplan::test::write_temp_file;

namespace {

/// How both jobs train: the seed, the target, the MLP and its steps.
const std::string kTraining = R"(seed: 1
target_accuracy: 0.7
learning_rate: 0.1
max_steps: 1500
eval_every: 16
timing: lockstep
hidden: [256, 128]
)";

const std::string kValidateJob = R"(workload: fashion-mlp
platform: test-crossbar-4
strategies: [single, sync, local-sgd]
workers: 2
batch: 64
tau: 2
split: speed
)" + kTraining;

constexpr double kMedianRoundErrorBound = 0.15;
constexpr double kMaxRoundErrorBound = 0.50;
constexpr double kMedianComputeErrorBound = 0.15;
constexpr double kMaxComputeErrorBound = 0.40;
constexpr double kMedianCommErrorBound = 0.50;
constexpr double kMaxCommErrorBound = 0.95;

/// A row's `part` ("round_s", "compute_s", "comm_s") as `who` ("measured" or an engine) gave it:
/// the row's `measured` or `engines.<who>` (validate_support.hpp's schema, the testbed's too).
const nlohmann::json& part_of(const nlohmann::json& row, const char* part, const std::string& who) {
  return who == "measured" ? row["measured"][part] : row["engines"][who][part];
}

/// A row's relative error of `part` by `engine` (its engines.<engine>.error_round, ...).
double error_of(const nlohmann::json& row, const std::string& part, const std::string& engine) {
  return row["engines"][engine]["error_" + part.substr(0, part.size() - 2)].get<double>();
}

/// Median over rows of |round predicted on the calibration before / on the one after - 1|.
double machine_spread(const nlohmann::json& results) {
  std::vector<double> spreads;
  for (const auto& row : results) {
    const auto& by = row["round_s_by_calibration"];
    spreads.push_back(
        std::abs(by["analytic_before"].get<double>() / by["analytic_after"].get<double>() - 1));
  }
  std::sort(spreads.begin(), spreads.end());
  const std::size_t n = spreads.size();
  return n == 0 ? 0 : n % 2 ? spreads[n / 2] : 0.5 * (spreads[n / 2 - 1] + spreads[n / 2]);
}

/// Every row's measured and predicted parts, and both calibrations' rounds, for the log.
void print_rows(const nlohmann::json& results) {
  for (const auto& row : results) {
    std::cout << "  " << row["config"].get<std::string>() << ":";
    for (const char* part : {"round_s", "compute_s", "comm_s"})
      if (part_of(row, part, "measured").is_number() && part_of(row, part, "analytic").is_number())
        std::cout << " " << part << " measured " << part_of(row, part, "measured").get<double>()
                  << " analytic " << part_of(row, part, "analytic").get<double>() << ";";
    const auto& by = row["round_s_by_calibration"];
    std::cout << " round on the calibration before " << by["analytic_before"].get<double>()
              << ", after " << by["analytic_after"].get<double>() << "\n";
  }
}

}  // namespace

TEST_CASE("validate: a small matrix end to end, round-time error within the bound", "[timing]") {
  const std::string job = write_temp_file("validate-small.yaml", kValidateJob);
  const std::string out = std::filesystem::path(job).parent_path().string() + "/validate-out";
  // In a clean-clone CI run (2026-11-27) the calibration before a row, its measurement (a child
  // process) and the calibration after it each ran fast or slow as a whole, the slow 1.6-1.8x
  // the fast: as if one vCPU's host were busier than the other's (thread CPU time counts the
  // host's time away on these guests), and a phase ran at the speed of the vCPU it landed on.
  // The test then pinned validate to one CPU; validate now pins its lockstep phases itself
  // (study/common/cpu_affinity.hpp), and says on which CPU (checked below).
  const auto r =
      run_tauplan({"validate", job, "--slow-worker", "1,2", "--out", out, "--json"}, "", 400);
  INFO("stderr: " << r.err);
  REQUIRE(r.exit_code == 0);
  const auto j = nlohmann::json::parse(r.out);
  // single, sync K=2, local-sgd K=2 tau=2, and both again with worker h0 twice as slow.
  const auto& results = j["results"];
  REQUIRE(results.size() == 5);
  for (const auto& row : results) {
    INFO(row.dump());
    CHECK(row["reached_target"] == true);
    for (const char* key : {"compute_s", "round_s"})
      for (const char* engine : {"measured", "analytic", "simgrid"})
        CHECK(part_of(row, key, engine).get<double>() > 0);
    // The simulator and the analytic engine agree on an uncontended calibrated platform.
    CHECK(part_of(row, "round_s", "simgrid").get<double>() ==
          Approx(part_of(row, "round_s", "analytic").get<double>()).epsilon(1e-6));
    CHECK(row["rounds"]["measured"].get<double>() > 0);
  }
  const auto& summary = j["summary"];
  const double analytic = summary["analytic"]["median_abs_error_round"];
  const double simgrid = summary["simgrid"]["median_abs_error_round"];
  double worst = 0, worst_compute = 0, worst_comm = 0;
  for (const auto& row : results)
    for (const char* engine : {"analytic", "simgrid"}) {
      worst = std::max(worst, std::abs(error_of(row, "round_s", engine)));
      worst_compute = std::max(worst_compute, std::abs(error_of(row, "compute_s", engine)));
      if (row["workers"].get<int>() > 1)
        worst_comm = std::max(worst_comm, std::abs(error_of(row, "comm_s", engine)));
      else  // one worker has no communication to compare
        CHECK(row["engines"][engine]["error_comm"].is_null());
    }
  // The summary is the rows' (validate_support.hpp's schema, as the testbed's): its largest
  // |round error| is the largest row's.
  for (const char* engine : {"analytic", "simgrid"}) {
    double largest = 0;
    for (const auto& row : results)
      largest = std::max(largest, std::abs(error_of(row, "round_s", engine)));
    CHECK(summary[engine]["max_abs_error_round"].get<double>() == Approx(largest));
  }
  const double compute = summary["analytic"]["median_abs_error_compute"];
  const double comm = summary["analytic"]["median_abs_error_comm"];
  const double spread = machine_spread(results);
  print_rows(results);
  std::cout << "validate small matrix: the machine's spread (median over rows of |before / after "
               "- 1| of the predicted round) "
            << 100 * spread << "%, added to each median's bound (at most 30%, comm 75%)\n";
  // Never so wide that the breakage this test is for (-42%, above) would pass.
  const double median_compute_bound = std::min(kMedianComputeErrorBound + spread, 0.30);
  const double median_comm_bound = std::min(kMedianCommErrorBound + spread, 0.75);
  const double median_round_bound = std::min(kMedianRoundErrorBound + spread, 0.30);
  std::cout << "validate small matrix: median |compute error| " << 100 * compute << "% (bound "
            << 100 * median_compute_bound << "%), worst " << 100 * worst_compute << "% (bound "
            << 100 * kMaxComputeErrorBound << "%); median |comm error| " << 100 * comm
            << "% (bound " << 100 * median_comm_bound << "%), worst " << 100 * worst_comm
            << "% (bound " << 100 * kMaxCommErrorBound << "%)\n";
  CHECK(compute <= median_compute_bound);
  CHECK(summary["simgrid"]["median_abs_error_compute"].get<double>() <= median_compute_bound);
  CHECK(comm <= median_comm_bound);
  CHECK(summary["simgrid"]["median_abs_error_comm"].get<double>() <= median_comm_bound);
  CHECK(worst_compute <= kMaxComputeErrorBound);
  CHECK(worst_comm <= kMaxCommErrorBound);
  // Both calibrations are kept: the error against each is reported beside the faster one's.
  for (const char* key :
       {"median_abs_error_round_analytic_before", "median_abs_error_round_analytic_after"})
    CHECK(summary[key].is_number());
  for (const auto& row : results)
    for (const char* key : {"error_analytic_before", "error_analytic_after"})
      CHECK(row["round_s_by_calibration"][key].is_number());
  // Labelled for what it is.
  CHECK(j["context"]["kind"].get<std::string>().find("repeatability check") != std::string::npos);
  // The figure, printed for the log (ctest keeps it in Testing/Temporary/LastTest.log, and
  // shows it with --output-on-failure when a bound is exceeded).
  std::cout << "validate small matrix: median |round-time error| analytic " << 100 * analytic
            << "%, simgrid " << 100 * simgrid << "% (bound " << 100 * median_round_bound
            << "%); worst configuration " << 100 * worst << "% (bound " << 100 * kMaxRoundErrorBound
            << "%)\n";
  CHECK(analytic <= median_round_bound);
  CHECK(simgrid <= median_round_bound);
  CHECK(worst <= kMaxRoundErrorBound);
  // A worker twice as slow slows local SGD's round (every worker takes tau steps, then they
  // average), measured and predicted alike: a platform that did not slow it would leave the
  // prediction where it was, the breakage the wide per-configuration bounds no longer catch on
  // their own. (Sync splits its batch by speed here, so its round hardly moves.)
  for (const auto& slow : results) {
    if (slow["slow_worker"].get<double>() != 2 || slow["strategy"] != "local-sgd") continue;
    for (const auto& plain : results) {
      if (plain["slow_worker"].get<double>() != 1 || plain["strategy"] != slow["strategy"] ||
          plain["workers"] != slow["workers"])
        continue;
      INFO(slow["strategy"].get<std::string>());
      for (const char* engine : {"measured", "analytic", "simgrid"})
        CHECK(part_of(slow, "round_s", engine).get<double>() >
              1.2 * part_of(plain, "round_s", engine).get<double>());
    }
  }
  CHECK(j["context"]["timing"].get<std::string>().find("reconstructed") != std::string::npos);
  CHECK(j["context"]["lockstep_cpu"].is_number_integer());
  CHECK(std::filesystem::exists(out + "/validation.csv"));
  CHECK(std::filesystem::exists(out + "/validation.json"));
  CHECK(std::filesystem::exists(out + "/calibration/K2.xml"));

  // The calibration it wrote can be reused: no measuring of the machine, same configurations.
  // Job flags reach the engines once each, even those validate also sets (communicator).
  const auto again =
      run_tauplan({"validate", job, "--set", "strategies=sync", "--calibration",
                   out + "/calibration", "--out", out + "-reuse", "--json", "--no-plot",
                   "--communicator", "threads", "--learning_rate", "0.1"},
                  "", 200);
  INFO("reuse stderr: " << again.err);
  REQUIRE(again.exit_code == 0);
  const auto reused = nlohmann::json::parse(again.out);
  CHECK(reused["results"].size() == 1);
  CHECK(reused["calibration"].empty());  // nothing was measured for the platforms

  // The table says what the run is before any number.
  const auto text = run_tauplan({"validate", job, "--set", "strategies=single", "--calibration",
                                 out + "/calibration", "--out", out + "-text", "--no-plot"},
                                "", 200);
  REQUIRE(text.exit_code == 0);
  CHECK(text.out.rfind("note: repeatability check of the timing model", 0) == 0);
  CHECK(text.out.find("calibration taken before the measurement") != std::string::npos);
}

TEST_CASE(
    "validate: tensor- and pipeline-parallel layouts of the MLP are measured on the wall clock "
    "beside their predictions, against single") {
  const std::string job = write_temp_file("validate-layouts.yaml", R"(workload: fashion-mlp
platform: test-crossbar-4
strategies: [single, mesh]
workers: 2
batch: 64
micro_batches: 2
)" + kTraining);
  const std::string out = std::filesystem::path(job).parent_path().string() + "/validate-layouts";
  const auto r = run_tauplan(
      {"validate", job, "--set", "pipeline_parallel=1,2", "--out", out, "--json", "--no-plot"}, "",
      300);
  INFO("stderr: " << r.err);
  REQUIRE(r.exit_code == 0);
  const auto j = nlohmann::json::parse(r.out);
  const auto& results = j["results"];
  // single once (the layout keys are not its own), mesh d2 m2 and mesh d1 p2 m2.
  REQUIRE(results.size() == 3);
  CHECK(results[0]["strategy"] == "single");
  long long single_rounds = 0;
  for (const auto& row : results) {
    INFO(row.dump());
    CHECK(row["reached_target"] == true);
    for (const char* engine : {"measured", "analytic", "simgrid"})
      CHECK(part_of(row, "round_s", engine).get<double>() > 0);
    CHECK(row["engines"]["analytic"]["error_round"].is_number());
    CHECK(row["engines"]["simgrid"]["error_round"].is_number());
    if (row["strategy"] == "single") {
      single_rounds = row["rounds"]["measured"].get<long long>();
      continue;
    }
    // The split model is the unsplit one's SGD at the same batch: the same steps to the target,
    // to within one evaluation (16 steps) for float rounding.
    CHECK(std::abs(row["rounds"]["measured"].get<long long>() - single_rounds) <= 16);
    CHECK(row["speedup"]["measured"].is_number());
  }
  CHECK(results[2]["config"].get<std::string>().find("mesh d1 p2 m2") == 0);
  CHECK(j["context"]["timing"].get<std::string>().find("layouts (mesh)") != std::string::npos);
}

TEST_CASE("validate: bad inputs are one line and exit 2") {
  const std::string job = write_temp_file("validate-bad.yaml", kValidateJob);
  auto expect = [](const std::vector<std::string>& args, const std::string& fragment) {
    const auto r = run_tauplan(args, "", 60);
    INFO("stderr: " << r.err);
    CHECK(r.exit_code == 2);
    CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
    CHECK(r.err.find(fragment) != std::string::npos);
  };
  expect({"validate", job, "--timing", "concurrent"}, "timing: expected lockstep");
  expect({"validate", job, "--communicator", "mpi"}, "communicator: expected threads or auto");
  expect({"validate", job, "--slow-worker", "0.5"}, "--slow-worker: expected factors >= 1");
  expect({"validate", job, "--set", "colour=red"}, "colour: expected a job key");
  expect({"validate", job, "--calibration", "/nonexistent"},
         "command line: --calibration: expected a folder holding ");
  expect({"validate", job, "--workload", "resnet-50"}, "workload: expected fashion-mlp");
  expect({"validate", job, "--collective", "ring"}, "--collective: expected no value");
  expect({"validate", job, "--set", "hidden=64"}, "hidden: expected a key that may vary");
  expect({"validate", job, "--combine", "adasum"}, "combine: expected mean");
  expect({"validate", job, "--calibration-steps", "0"}, "--calibration-steps: expected");
  expect({"validate", job, "--out", "/proc/version/x"}, "expected a folder that can be created");
  {  // a calibration file with a contradictory speed is the checker's own error
    const std::string dir = std::filesystem::path(job).parent_path().string() + "/bad-cal";
    std::filesystem::create_directories(dir);
    const std::string good = tauplan::test::write_temp_file("bad-cal-src.xml", "");
    // Batches 32x apart: with 8 and 16 a stall of the shared machine once made the step time
    // not grow with the batch, and calibrate refused the fit (exit 2; a clean-clone CI run,
    // 2026-11-28).
    const auto c = run_tauplan(
        {"calibrate", "--out", good, "--workers", "1", "--batches", "8,256", "--steps", "5"}, "",
        60);
    INFO("calibrate's stderr: " << c.err);
    REQUIRE(c.exit_code == 0);
    for (int k : {1, 2}) {
      std::ifstream in(good);
      std::stringstream buffer;
      buffer << in.rdbuf();
      std::string text = buffer.str();
      const auto at = text.find("speed=\"");
      text.insert(at + 7, "9");  // a leading digit more: a speed the fit does not give
      std::ofstream(dir + "/K" + std::to_string(k) + ".xml") << text;
    }
    expect({"validate", job, "--calibration", dir}, "h0: speed: expected flop_per_sample");
  }
}
