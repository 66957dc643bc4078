// reproduce_study_test.cpp: what `tauplan reproduce` computes in this process
// (study/reproduce/reproduce.hpp, study/reproduce/reproduce_support.hpp), not its long runs: bad
// requests refused before any work; where the experiments are; cell keys; the measured-cell cache
// round trip (a stale settings key or a damaged line is measured again); SparkNet's measured cells
// through the exec engine (a timing cell runs its fixed steps with the cell's workers and tau; only
// cells the cache lacks are measured); and the published-numbers table (median and largest |error|
// over the independent comparisons only, identities shown but left out).
#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include "model/ir/strategy.hpp"
#include "study/common/files.hpp"
#include "study/common/study_test_support.hpp"
#include "study/reproduce/reproduce.hpp"
#include "study/reproduce/reproduce_support.hpp"

namespace fs = std::filesystem;
using namespace tauplan;
using namespace tauplan::study::reproduction;

namespace {

CellResult result(const Cell& cell, long long rounds, double accuracy) {
  CellResult r;
  r.cell = cell;
  r.rounds = rounds;
  r.steps = rounds * cell.tau;
  r.reached = accuracy >= 0.8;
  r.final_accuracy = accuracy;
  r.compute_median_s = 0.00125;
  r.train_s = 3.5;
  return r;
}

void check_same(const CellResult& a, const CellResult& b) {
  CHECK(cell_key(a.cell) == cell_key(b.cell));
  CHECK(a.rounds == b.rounds);
  CHECK(a.steps == b.steps);
  CHECK(a.reached == b.reached);
  CHECK(a.final_accuracy == b.final_accuracy);
  CHECK(a.compute_median_s == b.compute_median_s);
  CHECK(a.train_s == b.train_s);
}

Published comparison(const std::string& quantity, double published, double ours) {
  Published p;
  p.quantity = quantity;
  p.source = "a table";
  p.published = published;
  p.ours = ours;
  p.unit = "s";
  return p;
}

}  // namespace

TEST_CASE("reproduce: bad requests are refused before any work") {
  const test::Scratch scratch("reproduce-bad");
  study::ReproduceRequest r;
  r.out = scratch.path("out");
  std::ostringstream out;
  std::vector<std::string> notes;
  auto error = [&] { return test::input_error([&] { study::run_reproduce(r, out, notes); }); };
  r.name = "alexnet";
  CHECK(error() == "command line: experiment: expected sparknet or hetseq, got alexnet");
  r.name = study::hetseq_experiment();
  r.jobs = 0;
  CHECK(error() == "command line: --jobs: expected at least 1, got 0");
  r.jobs = 2;
  // --fresh measures sparknet's counts again; hetseq alone measures nothing it would reuse.
  r.fresh = true;
  CHECK(error() ==
        "command line: --fresh: expected no --fresh for hetseq alone (it measures nothing; "
        "sparknet's cached counts are what --fresh measures again), got --fresh");
  r.fresh = false;
  // A folder with sparknet/ only: hetseq (and both) are refused, naming the folder.
  fs::create_directories(scratch.path("experiments/sparknet"));
  r.experiments = scratch.path("experiments");
  const std::string expected =
      "command line: --experiments: expected a folder with sparknet/ and "
      "hetseq/ job files, got " +
      r.experiments;
  CHECK(error() == expected);
  r.name.clear();
  CHECK(error() == expected);
  CHECK_FALSE(fs::exists(r.out));
  CHECK(out.str().empty());
}

TEST_CASE("reproduce: the experiments are --experiments, $TAUPLAN_EXPERIMENTS_DIR or the tree's") {
  study::ReproduceRequest r;
  r.experiments = "/given";
  CHECK(experiments_dir(r) == "/given");
  r.experiments.clear();
  {
    const test::ScopedEnv env("TAUPLAN_EXPERIMENTS_DIR", std::string("/from-env"));
    CHECK(experiments_dir(r) == "/from-env");
  }
  const test::ScopedEnv unset("TAUPLAN_EXPERIMENTS_DIR", std::nullopt);
  const fs::path tree = experiments_dir(r);
  CHECK(fs::equivalent(tree, test::source_path("experiments")));
  CHECK(fs::is_directory(tree / study::sparknet_experiment()));
  CHECK(fs::is_directory(tree / study::hetseq_experiment()));
}

TEST_CASE("reproduce: cell keys, joined integers and the context") {
  const Cell cell{"local-sgd", 2, 5, 16, 1, false};
  CHECK(cell_key(cell) == "local-sgd|2|5|16|1|0");
  CHECK(cell_key({"single", 1, 1, 12.5, 2, true}) == "single|1|1|12.5|2|1");
  Cell timing = cell;
  timing.timing_only = true;
  CHECK(cell_key(timing) != cell_key(cell));
  CHECK(join_ints({1, 2, 3}) == "1,2,3");
  CHECK(join_ints({4, 5}, " x ") == "4 x 5");
  CHECK(join_ints({}).empty());
  study::ReproduceRequest r;
  r.reduced = true;
  const auto context = context_json(study::sparknet_experiment(), r);
  CHECK(context.at("verb") == "reproduce");
  CHECK(context.at("experiment") == "sparknet");
  CHECK(context.at("grid") == "reduced");
  r.reduced = false;
  CHECK(context_json(study::hetseq_experiment(), r).at("grid") == "full");
}

TEST_CASE("reproduce: the measured-cell cache reads back what it saved, for its settings only") {
  const test::Scratch scratch("reproduce-cache");
  const fs::path path = scratch.path("measured.csv");
  std::map<std::string, CellResult> cache;
  for (const CellResult& r : {result({"single", 1, 1, 16, 1, false}, 812, 0.8125),
                              result({"local-sgd", 4, 25, 16, 2, false}, 40, 0.8075),
                              result({"single", 1, 1, 4, 1, true}, 60, 0.5)})
    cache[cell_key(r.cell)] = r;
  save_cache(path, "lr=0.1;", cache);
  CHECK(study::read_text(path.string()).rfind("# settings: lr=0.1;\nstrategy,workers,", 0) == 0);
  const auto back = load_cache(path, "lr=0.1;");
  REQUIRE(back.size() == cache.size());
  for (const auto& [key, r] : cache) {
    CAPTURE(key);
    REQUIRE(back.count(key) == 1);
    check_same(back.at(key), r);
  }
  // Other settings: nothing is reused. No file: nothing.
  CHECK(load_cache(path, "lr=0.2;").empty());
  CHECK(load_cache(scratch.path("absent.csv"), "lr=0.1;").empty());
  // A damaged line is left out (measured again); the others are kept.
  study::write_text(path.string(), study::read_text(path.string()) +
                                       "single,1,1,8,1,0,many,60,1,0.5,0.001,2\nshort,line\n");
  CHECK(load_cache(path, "lr=0.1;").size() == cache.size());
}

TEST_CASE("reproduce: SparkNet's cells are measured by the exec engine, only those not cached") {
  const test::Scratch scratch("reproduce-measure");
  // The experiment's job on the synthetic task (a folder without Fashion-MNIST), 2000 samples.
  fs::create_directories(scratch.path("no-data"));
  const std::string job = scratch.write(
      "fashion-mlp.yaml",
      study::read_text(test::source_path("experiments/sparknet/fashion-mlp.yaml")) +
          "allow_synthetic: true\ntrain_samples: 2000\ndata_dir: " + scratch.path("no-data") +
          "\n");
  Measurer measurer(job);
  CHECK(measurer.batch() == 16);
  const std::string key = measurer.settings_key();
  CHECK(key.find("learning_rate=0.1;") != std::string::npos);
  for (const char* cell_key_name : {"workers=", "tau=", "seed=", "batch=", "strategies="}) {
    CAPTURE(cell_key_name);
    CHECK(key.rfind(cell_key_name, 0) != 0);
    CHECK(key.find(std::string(";") + cell_key_name) == std::string::npos);
  }
  const std::string single = model::baseline_strategy().name();
  const Cell timing{single, 1, 1, 16, 1, true};
  const CellResult one = measurer.run(timing);
  CHECK(cell_key(one.cell) == cell_key(timing));
  CHECK(one.steps == kTimingSteps);
  CHECK(one.rounds == kTimingSteps);
  CHECK(one.compute_median_s > 0);

  const fs::path cache_path = scratch.path("measured.csv");
  std::map<std::string, CellResult> cache{{cell_key(timing), one}};
  measure_cells(measurer, {timing}, cache, cache_path, 2);
  CHECK_FALSE(fs::exists(cache_path));  // nothing to measure, nothing written
  const Cell local{"local-sgd", 2, 5, 16, 1, true};
  measure_cells(measurer, {timing, local}, cache, cache_path, 2);
  REQUIRE(cache.size() == 2);
  const CellResult& two = cache.at(cell_key(local));
  CHECK(two.cell.workers == 2);
  CHECK(two.cell.tau == 5);
  CHECK(two.rounds * 5 == two.steps);
  check_same(cache.at(cell_key(timing)), one);  // kept, not measured again
  const auto saved = load_cache(cache_path, key);
  REQUIRE(saved.size() == 2);
  CHECK(saved.at(cell_key(local)).rounds == two.rounds);
  CHECK(saved.at(cell_key(timing)).steps == kTimingSteps);
}

TEST_CASE("reproduce: published numbers beside ours, summarised over the independent ones") {
  const test::Scratch scratch("reproduce-published");
  std::vector<Published> rows = {comparison("a", 10, 11), comparison("b", 10, 8),
                                 comparison("c", 2, 2.1), comparison("d", 4, 3.4),
                                 comparison("e", 2, 3)};
  rows.back().calibrated_from_it = "the platform is fitted to it";
  std::ostringstream out;
  const auto j = report_published(rows, scratch.path(""), out);
  // |errors| of the independent rows: 0.1, 0.2, 0.05, 0.15; sorted, the median is the third.
  CHECK(j.at("independent_comparisons") == 4);
  CHECK(j.at("median_abs_error").get<double>() == Approx(0.15));
  CHECK(j.at("max_abs_error").get<double>() == Approx(0.2));
  REQUIRE(j.at("rows").size() == 5);
  CHECK(j.at("rows")[1].at("error").get<double>() == Approx(-0.2));
  CHECK(j.at("rows")[1].at("kind") == "comparison");
  CHECK(j.at("rows")[4].at("kind") == "identity");
  CHECK(j.at("rows")[4].at("error").get<double>() == Approx(0.5));
  CHECK(out.str().find("median |error| 15.0%, largest 20.0% over 4 independent comparisons") !=
        std::string::npos);
  CHECK(out.str().find("(identity: the platform is fitted to it)") != std::string::npos);
  const std::string csv = study::read_text(scratch.path("published.csv"));
  CHECK(csv.rfind("quantity,source,published,ours,unit,error,kind,note\n", 0) == 0);
  CHECK(std::count(csv.begin(), csv.end(), '\n') == 6);
  // Only identities: no summary. A published 0 has no error.
  std::ostringstream quiet;
  const auto none = report_published({rows.back()}, scratch.path(""), quiet);
  CHECK(none.at("median_abs_error").is_null());
  CHECK(quiet.str().find("median |error|") == std::string::npos);
  CHECK(comparison("z", 0, 5).error() == 0);
}

TEST_CASE("reproduce: row_of finds a simulated point's row of a strategy, or says it has none") {
  SimPoint p{"K=3",
             {},
             nlohmann::json::array({{{"strategy", "single"}, {"round_s", 2.0}},
                                    {{"strategy", "local-sgd"}, {"round_s", 9.0}}})};
  CHECK(row_of(p, "local-sgd").at("round_s") == 9.0);
  CHECK(row_of(p, "single").at("round_s") == 2.0);
  CHECK_THROWS_WITH(row_of(p, "sync"), "reproduce: no sync row in K=3");
}
