// verb_reproduce.cpp: `tauplan reproduce [sparknet|hetseq] [--out DIR] [--fresh] [--reduced]`.
//
// Reproduces the speedup curves of SparkNet (arXiv 1511.06051) and the scaling of HetSeq
// (arXiv 2009.14783) with tauplan's own engines:
//  - sparknet (a) the zero-overhead speedup Na(b) / (tau Ma(b,K,tau)) over K x tau, with Na and
//    Ma MEASURED by exec (fashion-mlp on Fashion-MNIST, lockstep), beside the critical-batch
//    model fitted to those counts (model/reproduce.hpp); (b) speedup against S / C(b) for naive
//    and SparkNet (several tau and the best tau) at one K, from the measured counts and the
//    measured C(b), C(b/K); (c) SparkNet's AlexNet setup on sparknet-ec2 SIMULATED (time per
//    round, compute and communication, speedup bounds); (d) the paper's qualitative claims
//    checked against the measurements (holds / does not hold, with the numbers).
//  - hetseq: BERT-base synchronous data parallel on 1, 2, 4, 8 nodes of 4 GPUs, and a
//    mixed-generation cluster with even against speed-proportional batch split, SIMULATED.
// Outputs under --out: per experiment a CSV per table, one JSON with every point and its
// provenance, gnuplot scripts and their PNG and SVG (scripts and data only, with a note, when
// gnuplot is absent). Measured counts are cached in <out>/sparknet/measured.csv, keyed by the
// measurement settings, and reused unless --fresh. Measured cells run in this process (two at
// a time); simulations run as child processes (SimGrid: one engine per process).
// What it leaves out: the paper figures' own numbers (not transcribed, see
// ../shared/notes/papers.md), AlexNet/BERT convergence (only time per round or step is
// simulated), the GoogLeNet experiment, concurrent-timing measurements.
#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <map>
#include <memory>
#include <mutex>
#include <sstream>
#include <thread>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli/child_process.hpp"
#include "cli/gnuplot.hpp"
#include "cli/verb.hpp"
#include "exec/cpu_replica.hpp"
#include "exec/dataset.hpp"
#include "exec/job_keys.hpp"
#include "exec/thread_communicator.hpp"
#include "exec/trainer.hpp"
#include "model/error.hpp"
#include "model/reproduce.hpp"
#include "model/strategy.hpp"

#ifndef TAUPLAN_PLATFORM_DIR
#define TAUPLAN_PLATFORM_DIR "platforms"
#endif

namespace tauplan::cli {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

struct ReproduceArgs {
  std::string name;  // sparknet | hetseq | empty (both)
  std::string out = "results/reproduce";
  bool fresh = false;
  bool reduced = false;
  int jobs = 2;
  std::string experiments;  // folder with sparknet/ and hetseq/ job files
};

fs::path experiments_dir(const ReproduceArgs& args) {
  if (!args.experiments.empty()) return args.experiments;
  if (const char* env = std::getenv("TAUPLAN_EXPERIMENTS_DIR"); env && *env) return env;
  return fs::path(TAUPLAN_PLATFORM_DIR).parent_path() / "experiments";
}

std::string join_ints(const std::vector<int>& values, const char* sep = ",") {
  std::string s;
  for (size_t i = 0; i < values.size(); ++i)
    s += (i ? sep : "") + std::to_string(values[i]);
  return s;
}

json context_json(const std::string& experiment, const ReproduceArgs& args) {
  return {{"verb", "reproduce"},
          {"experiment", experiment},
          {"version", model::tauplan_version()},
          {"commit", model::tauplan_git_commit()},
          {"date", model::utc_now_iso8601()},
          {"grid", args.reduced ? "reduced" : "full"}};
}

// ----------------------------------------------------------------------------------------------
// SparkNet: measured cells

struct Cell {
  std::string strategy;  // single | local-sgd | sync
  int workers = 1;
  int tau = 1;
  double batch = 0;
  unsigned seed = 1;
  bool timing_only = false;  // run max_steps steps without a target (for C(b/K))
};

struct CellResult {
  Cell cell;
  long long rounds = 0;
  long long steps = 0;
  bool reached = false;
  double final_accuracy = 0;
  double compute_median_s = 0;
  double train_s = 0;
};

std::string cell_key(const Cell& c) {
  return fmt::format("{}|{}|{}|{:g}|{}|{}", c.strategy, c.workers, c.tau, c.batch, c.seed,
                     c.timing_only ? 1 : 0);
}

constexpr long long kTimingSteps = 60;

class Measurer {
 public:
  explicit Measurer(const fs::path& job_file) {
    JobArgs job_args;
    job_args.job_file = job_file.string();
    inputs_ = load_inputs(job_args);
    settings_ = exec::exec_settings(inputs_.job);
    // The cache key: every setting that changes the counts, except what cells override.
    for (const auto& [key, value] : inputs_.job.values())
      if (key != "workers" && key != "tau" && key != "seed" && key != "strategies" &&
          key != "batch" && key != "trace")
        settings_key_ += key + "=" + value + ";";
  }
  const std::string& settings_key() const { return settings_key_; }
  double batch() const { return inputs_.options.batch; }
  const model::Job& job() const { return inputs_.job; }
  const exec::ExecSettings& settings() const { return settings_; }

  CellResult run(const Cell& cell) {
    std::call_once(data_once_, [this] {
      data_ = std::make_unique<exec::Dataset>(exec::load_dataset(settings_.data));
      shape_ = exec::mlp_shape(settings_.hidden, *data_);
    });
    model::StrategyOptions options = inputs_.options;
    options.workers = cell.workers;
    options.tau = cell.tau;
    options.batch = cell.batch;
    options.hosts.clear();
    const model::Plan plan = model::strategy_generator(cell.strategy, inputs_.job.file)
                                 .generate(options, inputs_.workload, inputs_.platform);
    exec::ThreadCommunicator comm(cell.workers);
    exec::TrainOptions train = settings_.train;
    train.seed = cell.seed;
    train.trace_rounds = 0;
    if (cell.timing_only) {
      train.target_accuracy = 0;
      train.max_steps = kTimingSteps;
      train.eval_every_steps = kTimingSteps;
    }
    const exec::Measurement m = exec::train(plan, inputs_.platform, *data_, shape_, comm,
                                            exec::cpu_replica_factory(), train);
    CellResult r;
    r.cell = cell;
    r.rounds = m.rounds;
    r.steps = m.steps;
    r.reached = m.reached;
    r.final_accuracy = m.final_accuracy;
    r.compute_median_s = m.compute_median_s;
    r.train_s = m.total_s;
    return r;
  }

 private:
  Inputs inputs_;
  exec::ExecSettings settings_;
  std::string settings_key_;
  std::once_flag data_once_;
  std::unique_ptr<exec::Dataset> data_;
  exec::MlpShape shape_;
};

const char* kCacheHeader =
    "strategy,workers,tau,batch,seed,timing_only,rounds,steps,reached,final_accuracy,"
    "compute_median_s,train_s";

std::map<std::string, CellResult> load_cache(const fs::path& path, const std::string& key) {
  std::map<std::string, CellResult> cache;
  std::ifstream in(path);
  std::string line;
  if (!std::getline(in, line) || line != "# settings: " + key) return cache;  // stale or none
  std::getline(in, line);                                                     // header
  while (std::getline(in, line)) {
    std::vector<std::string> f;
    std::stringstream s(line);
    std::string field;
    while (std::getline(s, field, ','))
      f.push_back(field);
    if (f.size() != 12) continue;
    try {
      CellResult r;
      r.cell = {f[0],
                std::stoi(f[1]),
                std::stoi(f[2]),
                std::stod(f[3]),
                static_cast<unsigned>(std::stoul(f[4])),
                f[5] == "1"};
      r.rounds = std::stoll(f[6]);
      r.steps = std::stoll(f[7]);
      r.reached = f[8] == "1";
      r.final_accuracy = std::stod(f[9]);
      r.compute_median_s = std::stod(f[10]);
      r.train_s = std::stod(f[11]);
      cache[cell_key(r.cell)] = r;
    } catch (const std::exception&) {
      // a damaged line is measured again
    }
  }
  return cache;
}

void save_cache(const fs::path& path, const std::string& key,
                const std::map<std::string, CellResult>& cache) {
  std::string text = "# settings: " + key + "\n" + kCacheHeader + "\n";
  for (const auto& [k, r] : cache)
    text += fmt::format("{},{},{},{:g},{},{},{},{},{},{:.6g},{:.6g},{:.6g}\n", r.cell.strategy,
                        r.cell.workers, r.cell.tau, r.cell.batch, r.cell.seed,
                        r.cell.timing_only ? 1 : 0, r.rounds, r.steps, r.reached ? 1 : 0,
                        r.final_accuracy, r.compute_median_s, r.train_s);
  write_text(path, text);
}

// Measures the cells not in the cache, `jobs` at a time, with a progress bar on stderr.
void measure_cells(Measurer& measurer, const std::vector<Cell>& cells,
                   std::map<std::string, CellResult>& cache, const fs::path& cache_path, int jobs) {
  std::vector<Cell> todo;
  for (const Cell& c : cells)
    if (!cache.count(cell_key(c))) todo.push_back(c);
  const size_t cached = cells.size() - todo.size();
  std::cerr << fmt::format(
      "reproduce sparknet: {} measured cells, {} from the cache ({}), {} to "
      "measure\n",
      cells.size(), cached, cache_path.string(), todo.size());
  if (todo.empty()) return;
  // Largest first (more workers x tau), so that two threads finish together.
  std::stable_sort(todo.begin(), todo.end(), [](const Cell& a, const Cell& b) {
    return a.workers * (a.tau + 4) > b.workers * (b.tau + 4);
  });
  child::Progress progress("measuring", cells.size(), cached, true);
  std::mutex mutex;
  std::atomic<size_t> next{0};
  std::exception_ptr error;
  auto worker = [&] {
    for (size_t i = next++; i < todo.size(); i = next++) {
      try {
        CellResult r = measurer.run(todo[i]);
        std::lock_guard<std::mutex> lock(mutex);
        cache[cell_key(r.cell)] = r;
        progress.advance();
      } catch (...) {
        std::lock_guard<std::mutex> lock(mutex);
        if (!error) error = std::current_exception();
        next = todo.size();
      }
    }
  };
  std::vector<std::thread> threads;
  for (int t = 0; t < std::max(1, jobs); ++t)
    threads.emplace_back(worker);
  for (auto& t : threads)
    t.join();
  progress.finish();
  save_cache(cache_path, measurer.settings_key(), cache);
  if (error) std::rethrow_exception(error);
}

// ----------------------------------------------------------------------------------------------
// Simulated points (child processes running `tauplan simulate ... --json`)

struct SimPoint {
  std::string label;
  std::vector<std::string> args;
  json rows;  // results array
};

void simulate_points(std::vector<SimPoint>& points, const fs::path& scratch, int jobs,
                     const std::string& what) {
  fs::create_directories(scratch);
  std::vector<child::Task> tasks;
  for (size_t i = 0; i < points.size(); ++i) {
    child::Task t;
    t.args = points[i].args;
    t.args.push_back("--json");
    t.out_path = (scratch / fmt::format("point-{}.json", i)).string();
    t.err_path = (scratch / fmt::format("point-{}.err", i)).string();
    tasks.push_back(t);
  }
  child::Progress progress(what, tasks.size(), 0, true);
  std::string failure;
  child::run_all(tasks, std::max(1, jobs), [&](size_t index, int status) {
    progress.advance();
    if (status != 0) {
      std::string err = read_text(tasks[index].err_path);
      while (!err.empty() && err.back() == '\n')
        err.pop_back();
      if (failure.empty()) failure = points[index].label + ": " + err.substr(err.rfind('\n') + 1);
      return;
    }
    points[index].rows = json::parse(read_text(tasks[index].out_path)).at("results");
  });
  progress.finish();
  fs::remove_all(scratch);
  if (!failure.empty()) throw InputError("reproduce", what, "simulations that succeed", failure);
}

const json& row_of(const SimPoint& p, const std::string& strategy) {
  for (const json& r : p.rows)
    if (r.at("strategy") == strategy) return r;
  throw std::runtime_error("reproduce: no " + strategy + " row in " + p.label);
}

// ----------------------------------------------------------------------------------------------
// SparkNet

void reproduce_sparknet(const ReproduceArgs& args, std::vector<std::string>& notes) {
  const fs::path dir = fs::path(args.out) / "sparknet";
  fs::create_directories(dir);
  const fs::path exp = experiments_dir(args) / "sparknet";
  Measurer measurer(exp / "fashion-mlp.yaml");
  const double b = measurer.batch();
  const std::vector<int> ks =
      args.reduced ? std::vector<int>{1, 2, 4} : std::vector<int>{1, 2, 3, 4, 5, 6, 7, 8};
  const std::vector<int> taus =
      args.reduced ? std::vector<int>{1, 5, 25} : std::vector<int>{1, 2, 5, 10, 25, 100};
  const int k_s = args.reduced ? 4 : 5;  // K of the S sweep

  // The cells: the heat map (seed 1), Na(K b) for the identity, seed-2 repeats of the tau = 1
  // column, of Na(K b) and of the K_s row (the run-to-run spread), and C(b/K_s).
  std::vector<Cell> cells;
  auto heat_cell = [&](int k, int tau, unsigned seed) {
    return k == 1 && tau == 1 ? Cell{"single", 1, 1, b, seed, false}
                              : Cell{"local-sgd", k, tau, b, seed, false};
  };
  for (unsigned seed : {1u, 2u})
    for (int k : ks)
      for (int tau : taus)
        if (seed == 1 || tau == 1 || k == k_s) cells.push_back(heat_cell(k, tau, seed));
  for (unsigned seed : {1u, 2u})
    for (int k : ks)
      if (k > 1) cells.push_back({"single", 1, 1, k * b, seed, false});
  // C(b) and C(b/K_s): one worker timing kTimingSteps steps at b and at ceil(b/K_s) samples
  // (the largest share of an even split, which a synchronous step waits for).
  const double b_over_k = std::ceil(b / k_s);
  cells.push_back({"single", 1, 1, b, 1, true});
  cells.push_back({"single", 1, 1, b_over_k, 1, true});

  const fs::path cache_path = dir / "measured.csv";
  std::map<std::string, CellResult> cache;
  if (!args.fresh) cache = load_cache(cache_path, measurer.settings_key());
  measure_cells(measurer, cells, cache, cache_path, args.jobs);
  auto get = [&](const Cell& c) -> const CellResult& { return cache.at(cell_key(c)); };

  // Counts: Na(b) = steps of single b; Ma = rounds. A cell that missed the target is reported
  // and left out of the fit and the checks (its count is only a lower bound).
  std::vector<std::string> unreached;
  auto count = [&](const CellResult& r) {
    if (!r.reached)
      unreached.push_back(fmt::format("{} K={} tau={} b={:g} seed={}", r.cell.strategy,
                                      r.cell.workers, r.cell.tau, r.cell.batch, r.cell.seed));
    return r.reached ? static_cast<double>(r.rounds) : std::nan("");
  };
  const double na = count(get(heat_cell(1, 1, 1)));
  if (std::isnan(na))
    throw InputError((exp / "fashion-mlp.yaml").string(), "target_accuracy",
                     "a target that serial SGD reaches within max_steps", "not reached");

  model::SpeedupGrid grid;
  grid.workers = ks;
  grid.taus = taus;
  std::vector<model::StepsPoint> points;
  std::map<std::pair<int, int>, double> ma;
  for (int k : ks)
    for (int tau : taus) {
      const double m = count(get(heat_cell(k, tau, 1)));
      ma[{k, tau}] = m;
      if (std::isnan(m)) continue;
      grid.speedup[{k, tau}] = model::zero_overhead_speedup(na, m, tau);
      points.push_back({b, k, tau, m});
    }
  // Run-to-run spread: cells measured with both seeds (speedup relative difference, each seed's
  // own Na(b) in the numerator).
  const double na2 = count(get(heat_cell(1, 1, 2)));
  std::vector<double> spreads;
  json spread_rows = json::array();
  for (int k : ks)
    for (int tau : taus) {
      if (!(tau == 1 || k == k_s) || (k == 1 && tau == 1)) continue;
      const double m1 = ma[{k, tau}], m2 = count(get(heat_cell(k, tau, 2)));
      if (std::isnan(m1) || std::isnan(m2) || std::isnan(na2)) continue;
      const double s1 = model::zero_overhead_speedup(na, m1, tau);
      const double s2 = model::zero_overhead_speedup(na2, m2, tau);
      const double rel = std::fabs(s1 - s2) / (0.5 * (s1 + s2));
      grid.spread[{k, tau}] = rel;
      spreads.push_back(rel);
      spread_rows.push_back({{"workers", k},
                             {"tau", tau},
                             {"ma_seed1", m1},
                             {"ma_seed2", m2},
                             {"speedup_seed1", s1},
                             {"speedup_seed2", s2},
                             {"relative", rel}});
    }
  double na_spread = std::isnan(na2) ? 0 : std::fabs(na - na2) / (0.5 * (na + na2));
  if (!spreads.empty()) {
    std::vector<double> sorted = spreads;
    std::sort(sorted.begin(), sorted.end());
    grid.default_spread = sorted[sorted.size() / 2];
  }
  const double max_spread =
      spreads.empty() ? na_spread
                      : std::max(na_spread, *std::max_element(spreads.begin(), spreads.end()));

  const model::CriticalBatchFit fit =
      model::fit_critical_batch(points, (dir / "measured.csv").string());

  // (a) heat map CSV: measured and fitted side by side.
  std::string heat = "workers,tau,batch,na,ma,speedup_measured,ma_fitted,speedup_fitted,spread\n";
  std::string heat_dat_m, heat_dat_f;
  double heat_max = 1;  // one colour scale for both panels
  json heat_rows = json::array();
  for (int k : ks)
    for (size_t ti = 0; ti < taus.size(); ++ti) {
      const int tau = taus[ti];
      const double m = ma[{k, tau}];
      const double mf = model::fitted_steps(fit, b, k, tau);
      const double nf = model::fitted_steps(fit, b, 1, 1);
      const double sm = grid.at(k, tau), sf = model::zero_overhead_speedup(nf, mf, tau);
      const auto sp = grid.spread.find({k, tau});
      heat += fmt::format("{},{},{:g},{:g},{:g},{:.4f},{:.4f},{:.4f},{}\n", k, tau, b, na, m, sm,
                          mf, sf, sp == grid.spread.end() ? "" : fmt::format("{:.4f}", sp->second));
      if (!std::isnan(sm)) heat_max = std::max(heat_max, sm);
      heat_max = std::max(heat_max, sf);
      heat_dat_m += fmt::format("{},{},{:.4f}\n", ti, k, sm);
      heat_dat_f += fmt::format("{},{},{:.4f}\n", ti, k, sf);
      heat_rows.push_back({{"workers", k},
                           {"tau", tau},
                           {"batch", b},
                           {"na", na},
                           {"ma", std::isnan(m) ? json(nullptr) : json(m)},
                           {"speedup_measured", std::isnan(sm) ? json(nullptr) : json(sm)},
                           {"ma_fitted", mf},
                           {"speedup_fitted", sf}});
    }
  write_text(dir / "heatmap.csv", heat);
  write_text(dir / "heatmap_measured.csv", heat_dat_m);
  write_text(dir / "heatmap_fitted.csv", heat_dat_f);
  std::string tau_tics;
  for (size_t ti = 0; ti < taus.size(); ++ti)
    tau_tics += fmt::format("{}'{}' {}", ti ? ", " : "", taus[ti], ti);
  const std::string heat_body = fmt::format(
      "set multiplot layout 1,2 title 'Zero-overhead speedup Na(b)/({{/Symbol t}} Ma(b,K,{{/Symbol "
      "t}})), fashion-mlp, b = {0:g}, target {1:g} test accuracy'\n"
      "set xtics ({2})\nset ytics 1\nset xlabel 'local steps per round {{/Symbol t}}'\n"
      "set ylabel 'workers K'\nset cblabel 'speedup (x)'\nset cbrange [0:{6:.3g}]\n"
      "set palette rgbformulae 33,13,10\nset xrange [-0.5:{3}.5]\nset yrange [{4}-0.5:{5}+0.5]\n"
      "set title 'measured (exec, lockstep)'\n"
      "plot 'heatmap_measured.csv' using 1:2:3 with image notitle, '' using "
      "1:2:(sprintf('%.2f',$3)) "
      "with labels notitle\n"
      "set title 'fitted critical-batch model'\n"
      "plot 'heatmap_fitted.csv' using 1:2:3 with image notitle, '' using 1:2:(sprintf('%.2f',$3)) "
      "with labels notitle\n"
      "unset multiplot",
      b, measurer.settings().train.target_accuracy, tau_tics, taus.size() - 1, ks.front(),
      ks.back(), heat_max);
  // multiplot needs the whole body again for SVG: do not use replot.
  auto multiplot_script = [](const std::string& stem, const std::string& size,
                             const std::string& body) {
    return fmt::format(
        "# {0}.gp: written by `tauplan reproduce`; draws {0}.png and {0}.svg from the CSVs beside "
        "it.\nset datafile separator ','\n"
        "set terminal pngcairo size {1} font 'Sans,10'\nset output '{0}.png'\n{2}\n"
        "set terminal svg size {1} font 'Sans,10'\nset output '{0}.svg'\n{2}\nunset output\n",
        stem, size, body);
  };
  write_text(dir / "heatmap.gp", multiplot_script("heatmap", "1200,520", heat_body));
  run_gnuplot(dir, "heatmap.gp", notes);

  // (b) speedup against S / C(b) at K = k_s.
  const double c_b = get({"single", 1, 1, b, 1, true}).compute_median_s;
  const double c_bk = get({"single", 1, 1, b_over_k, 1, true}).compute_median_s;
  const auto s_grid = model::log_space(1e-2, 1e3, 51);
  std::string sweep = "s_over_c,naive";
  for (int tau : taus)
    sweep += fmt::format(",sparknet_tau{}", tau);
  sweep += ",sparknet_best,best_tau\n";
  json sweep_rows = json::array();
  for (double x : s_grid) {
    const double naive = model::naive_speedup(c_b, c_bk, x * c_b);
    sweep += fmt::format("{:.5g},{:.5f}", x, naive);
    json row = {{"s_over_c", x}, {"naive", naive}};
    double best = 0;
    int best_tau = 0;
    for (int tau : taus) {
      const double m = ma[{k_s, tau}];
      const double v = std::isnan(m) ? std::nan("") : model::sparknet_speedup(na, m, tau, 1.0, x);
      sweep += std::isnan(v) ? "," : fmt::format(",{:.5f}", v);
      row[fmt::format("sparknet_tau{}", tau)] = std::isnan(v) ? json(nullptr) : json(v);
      if (!std::isnan(v) && v > best) {
        best = v;
        best_tau = tau;
      }
    }
    sweep += fmt::format(",{:.5f},{}\n", best, best_tau);
    row["sparknet_best"] = best;
    row["best_tau"] = best_tau;
    sweep_rows.push_back(row);
  }
  write_text(dir / "speedup_vs_s.csv", sweep);
  std::string curves = fmt::format(
      "plot 'speedup_vs_s.csv' using 1:2 with lines lw 3 dt 2 lc rgb 'black' title 'naive "
      "C(b)/(C(b/K)+S)'");
  for (size_t i = 0; i < taus.size(); ++i)
    curves += fmt::format(", '' using 1:{} with lines lw 1.5 title 'SparkNet {{/Symbol t}} = {}'",
                          i + 3, taus[i]);
  curves += fmt::format(
      ", '' using 1:{} with lines lw 3 lc rgb 'red' title 'SparkNet, best "
      "{{/Symbol t}} at each S'",
      taus.size() + 3);
  const std::string sweep_body = fmt::format(
      "set key autotitle columnhead\nset logscale xy\nset grid\n"
      "set title 'Speedup over one worker against the communication overhead, K = {}, "
      "fashion-mlp (measured Na, Ma, C(b)={:.3g} ms, C(b/K)={:.3g} ms)'\n"
      "set xlabel 'S / C(b)  (communication time per sync / compute time per step)'\n"
      "set ylabel 'speedup over serial SGD (x)'\nset key outside right\n"
      "set arrow from graph 0, first 1 to graph 1, first 1 nohead dt 3\n{}",
      k_s, 1e3 * c_b, 1e3 * c_bk, curves);
  write_text(dir / "speedup_vs_s.gp",
             two_terminals("reproduce", "speedup_vs_s", "1100,520", sweep_body));
  run_gnuplot(dir, "speedup_vs_s.gp", notes);

  // (c) AlexNet on sparknet-ec2, simulated.
  const std::vector<int> alex_ks = args.reduced ? std::vector<int>{3} : std::vector<int>{3, 5, 10};
  std::vector<SimPoint> alex;
  for (int k : alex_ks) {
    std::string hosts;
    for (int n = 0; n < k; ++n)
      hosts += fmt::format("{}n{}-gpu0", n ? "," : "", n);
    alex.push_back({fmt::format("alexnet K={}", k),
                    {"simulate", (exp / "alexnet-ec2.yaml").string(), "--workers",
                     std::to_string(k), "--hosts", hosts},
                    json()});
  }
  simulate_points(alex, dir / ".scratch", args.jobs, "simulating AlexNet");
  std::string alex_csv =
      "workers,tau,batch,compute_per_step_s,round_s,comm_s,s_over_c,speedup_upper,"
      "speedup_lower\n";
  json alex_rows = json::array();
  for (size_t i = 0; i < alex.size(); ++i) {
    const json& single = row_of(alex[i], "single");
    const json& local = row_of(alex[i], "local-sgd");
    const double c = single.at("round_s").get<double>();
    const double round = local.at("round_s").get<double>();
    const double comm = local.at("comm_s").get<double>();
    const int tau = local.at("tau").get<int>();
    const int k = alex_ks[i];
    // Upper bound: every local step of every worker as useful as a serial step
    // (Ma = Na / (K tau)); lower bound: averaging buys nothing (Ma = Na / tau).
    const double upper = k * tau * c / round, lower = tau * c / round;
    alex_csv +=
        fmt::format("{},{},{:g},{:.6g},{:.6g},{:.6g},{:.4f},{:.4f},{:.4f}\n", k, tau,
                    local.at("batch").get<double>(), c, round, comm, comm / c, upper, lower);
    alex_rows.push_back({{"workers", k},
                         {"tau", tau},
                         {"compute_per_step_s", c},
                         {"round_s", round},
                         {"comm_s", comm},
                         {"s_over_c", comm / c},
                         {"speedup_upper", upper},
                         {"speedup_lower", lower},
                         {"simulated", local}});
  }
  write_text(dir / "alexnet.csv", alex_csv);
  const std::string alex_body =
      "set key autotitle columnhead\nset style data histograms\nset style histogram rowstacked\n"
      "set style fill solid 0.8 border -1\nset boxwidth 0.6\n"
      "set title 'SparkNet AlexNet on EC2 g2.8xlarge (simulated): one round of {/Symbol t} = 50 "
      "local steps, b = 256'\n"
      "set xlabel 'workers K (one GPU per node)'\nset ylabel 'time per round (s)'\n"
      "set y2label 'speedup over one GPU, upper bound (x)'\nset ytics nomirror\nset y2tics\n"
      "set yrange [0:*]\nset y2range [0:*]\nset key below horizontal\n"
      "plot 'alexnet.csv' using (50*$4):xtic(1) title 'compute (50 C(b))', '' using ($5-50*$4) "
      "title 'communication S', '' using 0:8 axes x1y2 with linespoints lw 2 pt 7 lc rgb 'red' "
      "title 'speedup if Ma = Na/(K {/Symbol t})'";
  write_text(dir / "alexnet.gp", two_terminals("reproduce", "alexnet", "900,520", alex_body));
  run_gnuplot(dir, "alexnet.gp", notes);

  // (d) the claims.
  std::vector<std::tuple<int, double, double>> pairs;
  json identity_rows = json::array();
  for (int k : ks) {
    if (k == 1) continue;
    const double m = ma[{k, 1}];
    const double n = count(get({"single", 1, 1, k * b, 1, false}));
    const double n2 = count(get({"single", 1, 1, k * b, 2, false}));
    const double m2 = count(get(heat_cell(k, 1, 2)));
    if (std::isnan(m) || std::isnan(n)) continue;
    pairs.emplace_back(k, m, n);
    identity_rows.push_back({{"workers", k},
                             {"ma_b_k_1", m},
                             {"na_kb", n},
                             {"ma_b_k_1_seed2", std::isnan(m2) ? json(nullptr) : json(m2)},
                             {"na_kb_seed2", std::isnan(n2) ? json(nullptr) : json(n2)}});
  }
  // The identity's tolerance: the largest seed-to-seed spread of the counts involved.
  double identity_spread = na_spread;
  for (const json& r : identity_rows) {
    for (const auto& [a, c] : {std::pair<const char*, const char*>{"ma_b_k_1", "ma_b_k_1_seed2"},
                               {"na_kb", "na_kb_seed2"}}) {
      if (r.at(c).is_null()) continue;
      const double x = r.at(a).get<double>(), y = r.at(c).get<double>();
      identity_spread = std::max(identity_spread, std::fabs(x - y) / (0.5 * (x + y)));
    }
  }
  std::vector<model::ClaimCheck> claims;
  claims.push_back(model::check_naive_no_speedup(k_s, c_b, c_bk));
  claims.push_back(model::check_sparknet_large_s(grid, k_s, 10.0));
  claims.push_back(model::check_tau1_identity(pairs, identity_spread));
  claims.push_back(model::check_tau_shrink(grid));
  std::string claims_csv = "id,claim,verdict,evidence\n";
  json claim_rows = json::array();
  std::cout << "SparkNet claims (fashion-mlp measured, b = " << b << "):\n";
  for (const auto& c : claims) {
    const char* verdict = c.holds ? "holds" : "does not hold";
    std::cout << fmt::format("  [{}] {}: {}\n      {}\n", verdict, c.id, c.claim, c.evidence);
    std::string evidence = c.evidence;
    std::replace(evidence.begin(), evidence.end(), '"', '\'');
    claims_csv += fmt::format("{},\"{}\",{},\"{}\"\n", c.id, c.claim, verdict, evidence);
    claim_rows.push_back(
        {{"id", c.id}, {"claim", c.claim}, {"holds", c.holds}, {"evidence", c.evidence}});
  }
  write_text(dir / "claims.csv", claims_csv);
  std::string spread_csv = "workers,tau,speedup_seed1,speedup_seed2,relative\n";
  for (const json& r : spread_rows)
    spread_csv += fmt::format("{},{},{:.4f},{:.4f},{:.4f}\n", r.at("workers").get<int>(),
                              r.at("tau").get<int>(), r.at("speedup_seed1").get<double>(),
                              r.at("speedup_seed2").get<double>(), r.at("relative").get<double>());
  write_text(dir / "spread.csv", spread_csv);

  std::cout << fmt::format(
      "  fit: Na(b) = {:.4g} (1 + {:.4g}/b), drift {:.3f}; rms log error {:.3f} over {} cells\n"
      "  run-to-run spread (two seeds): Na(b) {:.1f}%, speedup cells median {:.1f}% max {:.1f}%; "
      "identity tolerance {:.1f}%\n",
      fit.min_steps, fit.critical_batch, fit.drift, fit.rms_log_error, fit.points, 100 * na_spread,
      100 * grid.default_spread, 100 * max_spread, 100 * identity_spread);
  for (const auto& u : unreached)
    std::cout << "  not reached within max_steps (left out): " << u << "\n";

  json all = {{"context", context_json("sparknet", args)},
              {"measurement",
               {{"job", (exp / "fashion-mlp.yaml").string()},
                {"settings", measurer.settings_key()},
                {"engine", "exec-cpu"},
                {"timing", "lockstep"},
                {"cache", cache_path.string()}}},
              {"batch", b},
              {"na", na},
              {"compute_b_s", c_b},
              {"compute_b_over_k_s", c_bk},
              {"sweep_workers", k_s},
              {"fit",
               {{"min_steps", fit.min_steps},
                {"critical_batch", fit.critical_batch},
                {"drift", fit.drift},
                {"rms_log_error", fit.rms_log_error},
                {"points", fit.points}}},
              {"heatmap", heat_rows},
              {"speedup_vs_s", sweep_rows},
              {"alexnet", alex_rows},
              {"identity", identity_rows},
              {"identity_tolerance", identity_spread},
              {"spread", spread_rows},
              {"spread_na", na_spread},
              {"spread_median", grid.default_spread},
              {"spread_max", max_spread},
              {"claims", claim_rows},
              {"unreached", unreached}};
  write_text(dir / "results.json", all.dump(2) + "\n");
  std::cout << "  wrote " << dir.string()
            << "/{heatmap,speedup_vs_s,alexnet,claims,spread}.csv, results.json, *.png, *.svg\n";
}

// ----------------------------------------------------------------------------------------------
// HetSeq

std::string gpu_hosts(const std::vector<int>& nodes) {
  std::string hosts;
  for (int n : nodes)
    for (int g = 0; g < 4; ++g)
      hosts += fmt::format("{}n{}-gpu{}", hosts.empty() ? "" : ",", n, g);
  return hosts;
}

void reproduce_hetseq(const ReproduceArgs& args, std::vector<std::string>& notes) {
  const fs::path dir = fs::path(args.out) / "hetseq";
  fs::create_directories(dir);
  const fs::path job = experiments_dir(args) / "hetseq" / "bert-base.yaml";
  constexpr int kPerGpu = 32;
  const std::vector<int> node_counts =
      args.reduced ? std::vector<int>{1, 2} : std::vector<int>{1, 2, 4, 8};
  const std::vector<int> mixed_nodes{0, 2, 4, 6};  // V100, TITAN Xp, RTX 2080 Ti, GTX 1080 Ti
  std::vector<SimPoint> points;
  for (int n : node_counts) {
    std::vector<int> nodes;
    for (int i = 0; i < n; ++i)
      nodes.push_back(i);
    points.push_back(
        {fmt::format("scaling nodes={}", n),
         {"simulate", job.string(), "--workers", std::to_string(4 * n), "--batch",
          std::to_string(kPerGpu * 4 * n), "--hosts", gpu_hosts(nodes), "--split", "speed"},
         json()});
  }
  for (const char* split : {"even", "speed"})
    points.push_back(
        {fmt::format("mixed split={}", split),
         {"simulate", job.string(), "--workers", "16", "--batch", std::to_string(kPerGpu * 16),
          "--hosts", gpu_hosts(mixed_nodes), "--split", split},
         json()});
  simulate_points(points, dir / ".scratch", args.jobs, "simulating BERT-base");

  std::string scaling =
      "nodes,gpus,batch,step_s,compute_s,comm_s,samples_per_s,speedup,efficiency\n";
  json scaling_rows = json::array();
  double base = 0;
  std::cout << "HetSeq BERT-base (simulated, hetseq-university, sync ring, speed split, " << kPerGpu
            << " sequences per GPU):\n";
  for (size_t i = 0; i < node_counts.size(); ++i) {
    const json& r = row_of(points[i], "sync");
    const int n = node_counts[i];
    const double step = r.at("round_s").get<double>(), batch = r.at("batch").get<double>();
    const double rate = batch / step;
    if (i == 0) base = rate;
    const double speedup = rate / base, eff = speedup * node_counts.front() / n;
    scaling += fmt::format("{},{},{:g},{:.6g},{:.6g},{:.6g},{:.2f},{:.4f},{:.4f}\n", n, 4 * n,
                           batch, step, r.at("compute_s").get<double>(),
                           r.at("comm_s").get<double>(), rate, speedup, eff);
    scaling_rows.push_back({{"nodes", n},
                            {"gpus", 4 * n},
                            {"step_s", step},
                            {"samples_per_s", rate},
                            {"speedup", speedup},
                            {"efficiency", eff},
                            {"simulated", r}});
    std::cout << fmt::format(
        "  {} node(s) x 4 GPUs: step {:.3f} s, {:.0f} sequences/s, speedup "
        "{:.2f}, efficiency {:.0f}%\n",
        n, step, rate, speedup, 100 * eff);
  }
  write_text(dir / "scaling.csv", scaling);
  std::string mixed = "split,gpus,batch,step_s,compute_s,comm_s,samples_per_s\n";
  json mixed_rows = json::array();
  double even_step = 0;
  for (size_t i = node_counts.size(); i < points.size(); ++i) {
    const json& r = row_of(points[i], "sync");
    const std::string split = r.at("split").get<std::string>();
    const double step = r.at("round_s").get<double>(), batch = r.at("batch").get<double>();
    if (i == node_counts.size()) even_step = step;
    mixed +=
        fmt::format("{},16,{:g},{:.6g},{:.6g},{:.6g},{:.2f}\n", split, batch, step,
                    r.at("compute_s").get<double>(), r.at("comm_s").get<double>(), batch / step);
    mixed_rows.push_back(
        {{"split", split}, {"step_s", step}, {"samples_per_s", batch / step}, {"simulated", r}});
    std::cout << fmt::format(
        "  mixed V100 + TITAN Xp + 2080 Ti + 1080 Ti (16 GPUs), {} split: "
        "step {:.3f} s{}\n",
        split, step,
        i > node_counts.size()
            ? fmt::format(" ({:.1f}% faster than even)", 100 * (even_step / step - 1))
            : "");
  }
  write_text(dir / "mixed.csv", mixed);
  const std::string scaling_body = fmt::format(
      "set key autotitle columnhead\nset title 'BERT-base data parallel on hetseq-university "
      "(simulated), {} sequences per GPU'\n"
      "set xlabel 'nodes (4 GPUs each)'\nset ylabel 'speedup in sequences/s over 1 node (x)'\n"
      "set y2label 'scaling efficiency (%)'\nset ytics nomirror\nset y2tics\nset logscale x 2\n"
      "set xtics ({})\nset xrange [0.8:10]\nset yrange [0:*]\nset y2range [0:110]\nset grid\nset "
      "key top left\n"
      "plot 'scaling.csv' using 1:8 with linespoints lw 2 pt 7 title 'speedup (simulated)', '' "
      "using 1:1 with lines dt 2 lc rgb 'gray' title 'linear', '' using 1:($9*100) axes x1y2 "
      "with linespoints lw 2 pt 5 title 'efficiency (%)'",
      kPerGpu, join_ints(node_counts));
  write_text(dir / "scaling.gp", two_terminals("reproduce", "scaling", "900,520", scaling_body));
  run_gnuplot(dir, "scaling.gp", notes);
  const std::string mixed_body =
      "set key autotitle columnhead\nset style data histograms\nset style histogram rowstacked\n"
      "set style fill solid 0.8 border -1\nset boxwidth 0.5\n"
      "set title 'BERT-base on 16 mixed GPUs (V100, TITAN Xp, RTX 2080 Ti, GTX 1080 Ti; "
      "simulated)'\nset xlabel 'batch split'\nset ylabel 'time per step (s)'\nset yrange [0:*]\n"
      "set key top right\n"
      "plot 'mixed.csv' using 5:xtic(1) title 'compute (slowest GPU)', '' using ($4-$5) title "
      "'exposed communication'";
  write_text(dir / "mixed.gp", two_terminals("reproduce", "mixed", "800,520", mixed_body));
  run_gnuplot(dir, "mixed.gp", notes);
  json all = {{"context", context_json("hetseq", args)},
              {"job", job.string()},
              {"per_gpu_batch", kPerGpu},
              {"scaling", scaling_rows},
              {"mixed", mixed_rows}};
  write_text(dir / "results.json", all.dump(2) + "\n");
  std::cout << "  wrote " << dir.string() << "/{scaling,mixed}.csv, results.json, *.png, *.svg\n";
}

void register_reproduce(CLI::App& app) {
  auto args = std::make_shared<ReproduceArgs>();
  CLI::App* verb = app.add_subcommand(
      "reproduce", "reproduce SparkNet's and HetSeq's speedup curves (measured + simulated)");
  verb->add_option("experiment", args->name, "sparknet or hetseq (default: both)")
      ->type_name("NAME");
  verb->add_option("--out", args->out, "results folder [default: results/reproduce]")
      ->type_name("DIR");
  verb->add_flag("--fresh", args->fresh, "measure again instead of reusing the cached counts");
  verb->add_flag(
      "--reduced", args->reduced,
      "a reduced grid (K 1,2,4; tau 1,5,25; AlexNet K=3; 1-2 nodes): seconds, for tests");
  verb->add_option("--jobs", args->jobs, "measurements and simulations run at once [default: 2]")
      ->type_name("N");
  verb->add_option("--experiments", args->experiments,
                   "folder holding sparknet/ and hetseq/ job files [default: the source tree's "
                   "experiments/, or $TAUPLAN_EXPERIMENTS_DIR]")
      ->type_name("DIR");
  verb->callback([args] {
    if (!args->name.empty() && args->name != "sparknet" && args->name != "hetseq")
      throw InputError("<command line>", "experiment", "sparknet or hetseq", args->name);
    if (args->jobs < 1)
      throw InputError("<command line>", "jobs", "at least 1", std::to_string(args->jobs));
    for (const char* name : {"sparknet", "hetseq"})
      if ((args->name.empty() || args->name == name) &&
          !fs::is_directory(experiments_dir(*args) / name))
        throw InputError("<command line>", "experiments",
                         "a folder with sparknet/ and hetseq/ job files",
                         experiments_dir(*args).string());
    std::vector<std::string> notes;
    if (args->name.empty() || args->name == "sparknet") reproduce_sparknet(*args, notes);
    if (args->name.empty() || args->name == "hetseq") reproduce_hetseq(*args, notes);
    for (const auto& n : notes)
      std::cout << "note: " << n << "\n";
  });
}

static const VerbRegistration kRegistration{60, register_reproduce};

}  // namespace
}  // namespace tauplan::cli
