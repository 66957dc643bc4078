// sweep_test.cpp: `tauplan sweep` in this process (study/sweep/sweep.hpp), analytic points
// evaluated in process: the grid is the product of the --set axes, the first varying slowest, each
// point's rows equal the analytic engine run directly on the job with that point's keys; sweep.csv
// and sweep.json are written, a point's record kept per hash so that a second run resumes every
// point (--fresh none); a point with a bad value is an error row, not a failed sweep; bad
// requests are one-line InputErrors before any folder is made.
#include <catch2/catch.hpp>

#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include "study/common/engines.hpp"
#include "study/common/files.hpp"
#include "study/common/study_test_support.hpp"
#include "study/sweep/sweep.hpp"

using nlohmann::json;
using namespace tauplan;
namespace fs = std::filesystem;

namespace {  // the job and the grid every case sweeps

const std::vector<std::string> kWorkers = {"2", "4"};
const std::vector<std::string> kBatch = {"32", "64", "128"};
const std::vector<std::string> kTau = {"1", "5"};

std::string crossbar_job(const test::Scratch& scratch, const std::string& more) {
  return scratch.write(
      "job.yaml", "platform: " + test::source_path("platforms/test-crossbar-4.xml") + "\n" + more);
}

study::SweepRequest sweep_request(const std::string& job, const std::string& out) {
  study::SweepRequest r;
  r.job_file = job;
  r.sets = {"workers=2,4", "batch=32,64,128", "tau=1,5"};
  r.out = out;
  r.quiet = true;
  return r;
}

}  // namespace

TEST_CASE("sweep: each point of the grid is the analytic engine run on the job with its keys") {
  const test::Scratch scratch("sweep-grid");
  const std::string job =
      crossbar_job(scratch, "workload: fashion-mlp\nstrategies: [sync, local-sgd]\n");
  const study::SweepOutcome out = study::run_sweep(sweep_request(job, scratch.path("out")));
  REQUIRE(out.reporter);
  CHECK(out.failed == 0);
  const json& doc = out.document;
  CHECK(doc.at("context").at("points") == 12);
  CHECK(doc.at("context").at("resumed") == 0);
  CHECK(doc.at("context").at("evaluation") == "in process");
  REQUIRE(doc.at("axes").size() == 3);
  CHECK(doc.at("axes")[1].at("values").get<std::vector<std::string>>() == kBatch);
  const json& results = doc.at("results");
  REQUIRE(results.size() == 12 * 2);
  // sweep.csv: the header with a column per axis, then a line per row, prefixed by its point.
  std::vector<std::string> csv;
  std::istringstream in(out.csv);
  for (std::string line; std::getline(in, line);)
    csv.push_back(line);
  REQUIRE(csv.size() == 1 + 24);
  CHECK(csv[0].rfind("point,set.workers,set.batch,set.tau,status,strategy,workers,tau,batch,", 0) ==
        0);
  for (size_t p = 0; p < 12; ++p) {
    CAPTURE(p);
    // The first axis varies slowest: p = (w x 3 + b) x 2 + t.
    const std::string w = kWorkers[p / 6], b = kBatch[(p / 2) % 3], t = kTau[p % 2];
    const study::EngineOutput direct =
        study::run_engine("analytic", job, {{"workers", w}, {"batch", b}, {"tau", t}});
    REQUIRE(direct.rows.size() == 2);
    for (size_t r = 0; r < 2; ++r) {
      const model::ResultRow& d = direct.rows[r];
      CHECK(csv[1 + 2 * p + r].rfind(
                std::to_string(p) + "," + w + "," + b + "," + t + ",ok," + d.strategy + ",", 0) ==
            0);
      const json& row = results[2 * p + r];
      CHECK(row.at("point") == p);
      CHECK(row.at("strategy") == d.strategy);
      CHECK(row.at("workers") == d.workers);
      CHECK(row.at("tau") == d.tau);
      CHECK(row.at("batch").get<double>() == d.batch);
      CHECK(row.at("round_s").get<double>() == Approx(d.round_s).epsilon(1e-12));
      CHECK(row.at("rounds").get<long long>() == d.rounds);
      CHECK(row.at("total_s").get<double>() == Approx(d.total_s).epsilon(1e-12));
    }
  }
  CHECK(study::read_text(scratch.path("out/sweep.csv")) == out.csv);
  CHECK(json::parse(study::read_text(scratch.path("out/sweep.json"))).at("results") == results);
  size_t kept = 0;
  for (const auto& entry : fs::directory_iterator(scratch.path("out/points")))
    kept += entry.path().extension() == ".json" ? 1 : 0;
  CHECK(kept == 12);
  CHECK_FALSE(fs::exists(scratch.path("out/work")));  // removed when empty
}

TEST_CASE("sweep: a second run resumes every point, --fresh none, a changed job none") {
  const test::Scratch scratch("sweep-resume");
  const std::string job =
      crossbar_job(scratch, "workload: fashion-mlp\nstrategies: [single, sync]\n");
  study::SweepRequest r = sweep_request(job, scratch.path("out"));
  const study::SweepOutcome first = study::run_sweep(r);
  const study::SweepOutcome again = study::run_sweep(r);
  CHECK(again.document.at("context").at("resumed") == 12);
  CHECK(again.csv == first.csv);
  CHECK(again.summary.find("12 points (12 resumed, 0 computed, 0 failed)") != std::string::npos);
  r.fresh = true;
  CHECK(study::run_sweep(r).document.at("context").at("resumed") == 0);
  r.fresh = false;
  crossbar_job(scratch, "workload: fashion-mlp\nstrategies: [single, sync]\nseed: 2\n");
  CHECK(study::run_sweep(r).document.at("context").at("resumed") == 0);
}

TEST_CASE("sweep: a point with a bad value is an error row, the others are computed") {
  const test::Scratch scratch("sweep-error");
  const std::string job = crossbar_job(scratch, "workload: resnet-50\nstrategies: [sync]\n");
  study::SweepRequest r = sweep_request(job, scratch.path("out"));
  r.sets = {"batch=64,100000"};
  const study::SweepOutcome out = study::run_sweep(r);
  CHECK(out.failed == 1);
  const json& errors = out.document.at("errors");
  REQUIRE(errors.size() == 1);
  CHECK(errors[0].at("point") == 1);
  CHECK(errors[0].at("batch") == "100000");
  CHECK(errors[0].at("error").get<std::string>().find("batch: expected a per-worker batch") !=
        std::string::npos);
  CHECK(out.document.at("results").size() == 1);
  CHECK(out.csv.find("\n0,64,ok,sync,") != std::string::npos);
  CHECK(out.csv.find("\n1,100000,error" + std::string(14, ',') + "\n") != std::string::npos);
  CHECK(out.summary.find("# point 1: ") != std::string::npos);
}

TEST_CASE("sweep: bad requests are one-line InputErrors before any folder is made") {
  const test::Scratch scratch("sweep-bad");
  const std::string job = crossbar_job(scratch, "workload: fashion-mlp\n");
  study::SweepRequest r = sweep_request(job, scratch.path("out"));
  auto error = [&r] { return test::input_error([&r] { study::run_sweep(r); }); };
  r.sets = {};
  CHECK(error() ==
        "command line: --set: expected at least one KEY=V1,V2,... to sweep, got nothing");
  r.sets = {"batch=32,-1"};
  CHECK(error().rfind("command line: --set batch=-1: expected a whole number", 0) == 0);
  r.sets = {"batch=32,64"};
  r.overrides = {{"batch", "16"}};
  CHECK(error() ==
        "command line --set: batch: expected a key either swept or given as --batch, "
        "got both");
  r.overrides = {};
  r.engine = "exec";
  CHECK(error().rfind("command line: --engine: expected analytic or simgrid", 0) == 0);
  CHECK_FALSE(fs::exists(scratch.path("out")));
}
