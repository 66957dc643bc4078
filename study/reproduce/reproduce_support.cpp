// reproduce_support.cpp: see reproduce_support.hpp.
#include "study/reproduce/reproduce_support.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <exception>
#include <fstream>
#include <iostream>
#include <mutex>
#include <sstream>
#include <stdexcept>
#include <thread>

#include <fmt/format.h>

#include "exec/cpu_blas.hpp"
#include "model/base/error.hpp"
#include "study/common/child_process.hpp"
#include "study/common/engines.hpp"
#include "study/common/files.hpp"
#include "study/common/inputs.hpp"

#ifndef TAUPLAN_PLATFORM_DIR
#define TAUPLAN_PLATFORM_DIR "platforms"
#endif

namespace tauplan::study::reproduction {

fs::path experiments_dir(const ReproduceRequest& args) {
  if (!args.experiments.empty()) return args.experiments;
  if (const char* env = std::getenv("TAUPLAN_EXPERIMENTS_DIR"); env && *env) return env;
  return fs::path(TAUPLAN_PLATFORM_DIR).parent_path() / "experiments";
}

std::string join_ints(const std::vector<int>& values, const char* sep) {
  std::string s;
  for (size_t i = 0; i < values.size(); ++i)
    s += (i ? sep : "") + std::to_string(values[i]);
  return s;
}

json context_json(const std::string& experiment, const ReproduceRequest& args) {
  return {{"verb", "reproduce"},
          {"experiment", experiment},
          {"version", model::tauplan_version()},
          {"commit", model::tauplan_git_commit()},
          {"date", model::utc_now_iso8601()},
          {"grid", args.reduced ? "reduced" : "full"},
          {"compute_backend", exec::compute_backend_description()}};
}

std::string cell_key(const Cell& c) {
  return fmt::format("{}|{}|{}|{:g}|{}|{}", c.strategy, c.workers, c.tau, c.batch, c.seed,
                     c.timing_only ? 1 : 0);
}

Measurer::Measurer(const fs::path& job_file) : job_file_(job_file.string()) {
  base_ = load_inputs(job_file_, {});
  // The cache key: every setting that changes the counts, except what cells override.
  for (const auto& [key, value] : base_.job.values())
    if (key != "workers" && key != "tau" && key != "seed" && key != "strategies" &&
        key != "batch" && key != "trace")
      settings_key_ += key + "=" + value + ";";
}

/// Measures one cell through the exec engine: the job with the cell's strategy, K, tau,
/// batch and seed (a timing-only cell runs kTimingSteps steps without a target).
CellResult Measurer::run(const Cell& cell) const {
  model::JobInputs inputs;
  inputs.job = base_.job;
  inputs.job.set_raw("strategies", cell.strategy);
  inputs.job.set_raw("workers", std::to_string(cell.workers));
  inputs.job.set_raw("tau", std::to_string(cell.tau));
  inputs.job.set_raw("batch", fmt::format("{:g}", cell.batch));
  inputs.job.set_raw("seed", std::to_string(cell.seed));
  inputs.job.set_raw("hosts", "");
  inputs.job.set_raw("trace", "");
  if (cell.timing_only) {
    inputs.job.set_raw("target_accuracy", "0");
    inputs.job.set_raw("max_steps", std::to_string(kTimingSteps));
    inputs.job.set_raw("eval_every", std::to_string(kTimingSteps));
  }
  inputs.workload = base_.workload;
  inputs.platform_path = base_.platform_path;
  inputs.platform = base_.platform;
  inputs.convergence = model::convergence_model(inputs.job);
  inputs.options = model::strategy_options(inputs.job);
  inputs.strategies = {cell.strategy};
  inputs.log = nullptr;  // the progress bar says how far the cells are
  model::RunContext context;
  const std::vector<model::ResultRow> rows = engine("exec").run(inputs, context);
  const model::ResultRow& row = rows.at(0);
  auto extra = [&row](const char* key) {
    const auto it = row.extra.find(key);
    if (it == row.extra.end())
      throw std::logic_error(std::string("reproduce: exec row without ") + key);
    return *it;
  };
  CellResult r;
  r.cell = cell;
  r.rounds = row.rounds;
  r.steps = extra("steps").get<long long>();
  r.reached = extra("reached_target").get<bool>();
  r.final_accuracy = extra("final_accuracy").get<double>();
  r.compute_median_s = extra("compute_median_s").get<double>();
  r.train_s = row.total_s;
  return r;
}

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
  write_text(path.string(), text);
}

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
    tasks.push_back(std::move(t));
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

json report_published(const std::vector<Published>& rows, const fs::path& dir, std::ostream& out) {
  std::string csv = "quantity,source,published,ours,unit,error,kind,note\n";
  json list = json::array();
  std::vector<double> errors;
  out << "  published numbers beside ours:\n";
  for (const Published& p : rows) {
    const bool identity = !p.calibrated_from_it.empty();
    if (!identity) errors.push_back(std::fabs(p.error()));
    out << fmt::format(
        "    {:<52} published {:>9.4g} {:<2} ours {:>9.4g} {:<2} error {:>+7.1f}%{}\n", p.quantity,
        p.published, p.unit, p.ours, p.unit, 100 * p.error(),
        identity ? "  (identity: " + p.calibrated_from_it + ")" : "");
    out << fmt::format("      source: {}{}\n", p.source, p.note.empty() ? "" : "; " + p.note);
    csv += fmt::format("\"{}\",\"{}\",{:.6g},{:.6g},{},{:.4f},{},\"{}\"\n", p.quantity, p.source,
                       p.published, p.ours, p.unit, p.error(), identity ? "identity" : "comparison",
                       p.note);
    list.push_back({{"quantity", p.quantity},
                    {"source", p.source},
                    {"published", p.published},
                    {"ours", p.ours},
                    {"unit", p.unit},
                    {"error", p.error()},
                    {"kind", identity ? "identity" : "comparison"},
                    {"calibrated_from_it", p.calibrated_from_it},
                    {"note", p.note}});
  }
  std::sort(errors.begin(), errors.end());
  const double median = errors.empty() ? 0 : errors[errors.size() / 2];
  const double worst = errors.empty() ? 0 : errors.back();
  if (!errors.empty())
    out << fmt::format(
        "    median |error| {:.1f}%, largest {:.1f}% over {} independent comparisons\n",
        100 * median, 100 * worst, errors.size());
  std::ofstream(dir / "published.csv") << csv;
  return {{"rows", list},
          {"independent_comparisons", errors.size()},
          {"median_abs_error", errors.empty() ? json(nullptr) : json(median)},
          {"max_abs_error", errors.empty() ? json(nullptr) : json(worst)}};
}

}  // namespace tauplan::study::reproduction
