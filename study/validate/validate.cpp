// validate.cpp: the study behind `tauplan validate` (see validate.hpp).
#include "study/validate/validate.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <sstream>
#include <thread>

#include <fmt/format.h>

#include "exec/calibrate.hpp"
#include "exec/compute_calibration.hpp"
#include "exec/exchange_calibration.hpp"
#include "exec/job_keys.hpp"
#include "model/base/error.hpp"
#include "model/convergence/validation.hpp"
#include "model/inputs/calibration.hpp"
#include "model/ir/layout.hpp"
#include "model/ir/strategy.hpp"
#include "study/common/child_process.hpp"
#include "study/common/cpu_affinity.hpp"
#include "study/common/engines.hpp"
#include "study/common/files.hpp"
#include "study/common/gnuplot.hpp"
#include "study/common/grid.hpp"
#include "study/common/inputs.hpp"
#include "study/validate/validate_support.hpp"

namespace tauplan::study {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

using validation::EngineRow;
using validation::kNaN;
using validation::ms;
using validation::number_or_null;
using validation::parse_row;
using validation::passed_on_error;
using validation::pct_text;
using validation::run_children;

/// One configuration: a strategy and the job keys that make it.
struct Config {
  std::string strategy;
  int workers = 1;
  int tau = 1;
  double batch = 0;
  std::string split = "even";
  double slow = 1;
  std::vector<std::pair<std::string, std::string>> extra;  ///< other swept keys
  std::string name;                                        ///< e.g. "sync K=4 speed slow=2"
  double micro_batch = 0;  ///< a layout: samples per micro-batch (calibrated around it)
  int micro_batches = 1;   ///< a layout: its micro-batches per step (a pass's fixed cost)
  int pipeline = 1;        ///< a layout: its stages
  /// A layout: the ranks of the all-reduces its network is calibrated with: its tensor group, or
  /// its data group without one, or pairs for a pipeline alone (a ring of two is two messages of
  /// half the buffer each way: a stage's send); 0: no layout.
  int allreduce_group = 0;
  std::string platform;  ///< calibrated XML
};

/// The engines a validation predicts with, chosen by capability: every registered engine that
/// predicts, at its default network model (analytic, simgrid CM02), each run in a child.
const std::vector<Predictor>& validate_engines() {
  static const std::vector<Predictor> engines =
      predictors(NetworkModels::Default, RunsIn::ChildProcess);
  return engines;
}

/// The index in validate_engines() of the closed form (the first engine that shares the
/// process): it also predicts on each calibration alone, and its speedup error is reported.
size_t closed_form_engine() {
  return closed_form_predictor(validate_engines(), "validate");
}

struct Outcome {
  Config config;
  EngineRow measured;
  std::vector<EngineRow> predicted;  ///< by validate_engines()
  /// The closed form on the calibration taken just before and just after the measurement
  /// (the platform above keeps the faster of the two, point by point); NaN when reused.
  EngineRow analytic_before, analytic_after;
  double rounds_loo = kNaN;    ///< predicted without this configuration
  double rounds_group = kNaN;  ///< predicted without any configuration at its (K b, tau)
  double rounds_fit = kNaN;    ///< fitted to every configuration
  // Derived, by validate_engines(): time to target with rounds_loo and with rounds_group, and
  // the speedup against single.
  std::vector<double> time_loo, time_group, speedup;
  double speedup_measured = kNaN;
};

/// Whether a strategy's workers exchange with a server without rounds (async-ps).
bool asynchronous(const std::string& strategy) {
  return model::strategy(strategy).asynchronous();
}

/// Whether a configuration is measured with its workers running at once on the wall clock
/// (asynchronous strategies, and the ranks of a layout), rather than in lockstep.
bool wall_clock(const std::string& strategy) {
  return model::strategy(strategy).splits_model() || asynchronous(strategy);
}

using KeyValues = std::vector<std::pair<std::string, std::string>>;

/// The swept keys that make a configuration of `strategy`: layout keys only where it reads them
/// (the others run at the default layout: engine_child).
KeyValues keys_of(const std::string& strategy, const KeyValues& keys) {
  static const std::set<std::string> layout_keys = [] {
    std::set<std::string> names;
    for (const model::KeySpec& spec : model::layout_job_keys())
      names.insert(spec.name);
    return names;
  }();
  KeyValues out;
  for (const auto& [k, v] : keys)
    if (!layout_keys.count(k) || model::strategy(strategy).uses(k)) out.emplace_back(k, v);
  return out;
}

/// The configurations of one point of the grid (`overrides`: the job's flags and the point's
/// values), added to `configs` unless `seen` has their name.
void add_point_configs(const ValidateRequest& a, const std::vector<Axis>& axes,
                       const KeyValues& point, const std::map<std::string, std::string>& overrides,
                       std::vector<Config>& configs, std::set<std::string>& seen) {
  const model::Job job = load_point_job(a.job_file, all_job_keys(), overrides, axes);
  const model::StrategyOptions options = model::strategy_options(job);
  for (const std::string& name : job.list("strategies")) {
    const model::Strategy& strategy = model::strategy(name, job.file);
    const model::StrategyOptions normalised = strategy.normalise(options);
    for (double slow : a.slow) {
      Config c;
      c.strategy = name;
      c.batch = normalised.batch;
      c.workers = normalised.workers;
      c.tau = normalised.tau;
      // A layout's ranks are not slowed (exec emulates no slow host in a layout).
      c.slow = c.workers < 2 || strategy.splits_model() ? 1.0 : slow;
      if (strategy.splits_model()) {
        c.micro_batch = normalised.layout.micro_batch(normalised.batch);
        c.pipeline = normalised.layout.pipeline;
        c.micro_batches = normalised.layout.micro_batches;
        const model::Layout& layout = normalised.layout;
        c.allreduce_group = layout.tensor > 1 ? layout.tensor
                            : layout.data > 1 ? layout.data
                            : c.workers > 1   ? 2
                                              : 0;
      }
      // An even and a speed split differ only when some worker is slower.
      const bool speed_split =
          strategy.uses("split") && c.slow > 1 && normalised.split == model::BatchSplit::Speed;
      c.split = speed_split ? "speed" : "even";
      for (const auto& [k, v] : keys_of(name, point))
        if (k != "workers" && k != "tau" && k != "split" && k != "strategies")
          c.extra.emplace_back(k, v);
      model::StrategyOptions named = normalised;
      named.split = speed_split ? model::BatchSplit::Speed : model::BatchSplit::Even;
      c.name = strategy.label(named);
      if (c.slow > 1) c.name += fmt::format(" slow={:g}", c.slow);
      for (const auto& [k, v] : c.extra)
        c.name += " " + k + "=" + v;
      if (seen.insert(c.name).second) configs.push_back(c);
    }
  }
}

/// The configurations of the job and axes, without duplicates, in a stable order. A bad value a
/// --set gave is named as that --set, wherever the point's job is checked (naming_sets).
std::vector<Config> make_configs(const ValidateRequest& a, const std::vector<Axis>& axes) {
  std::vector<Config> configs;
  std::set<std::string> seen;
  for (const auto& point : grid_points(axes)) {
    auto overrides = a.overrides;
    for (const auto& [k, v] : point)
      overrides[k] = v;
    naming_sets(overrides, axes,
                [&] { add_point_configs(a, axes, point, overrides, configs, seen); });
  }
  return configs;
}

// Per-worker batch sizes the configurations of K workers will run, to calibrate around them.
std::vector<int> batches_for(const std::vector<Config>& configs, int k, long long largest) {
  std::set<int> b;
  for (const Config& c : configs) {
    if (c.workers != k) continue;
    if (c.micro_batch > 0) b.insert(std::max(1, static_cast<int>(c.micro_batch)));
    if (model::strategy(c.strategy).splits_batch()) {
      const double share = c.slow > 1 ? (1.0 / c.slow) / (k - 1 + 1.0 / c.slow) : 1.0 / k;
      b.insert(std::max(1, static_cast<int>(std::floor(c.batch * share))));
      b.insert(std::max(1, static_cast<int>(std::ceil(c.batch / k))));
      if (c.slow > 1)
        b.insert(std::max(1, static_cast<int>(std::ceil(c.batch / (k - 1 + 1.0 / c.slow)))));
    } else {
      b.insert(std::max(1, static_cast<int>(c.batch)));
    }
  }
  if (b.empty()) return {};
  const int lo = *b.begin(), hi = *b.rbegin();
  b.insert(std::max(1, lo / 2));
  b.insert(static_cast<int>(std::min<long long>(2LL * hi, largest)));
  std::vector<int> out;
  for (int v : b)
    if (v <= largest) out.push_back(v);
  return out;
}

/// The stem of the file a configuration's calibration is kept in for reuse: K<K>,
/// K<K>-async-b<b> for an asynchronous one (its network is fitted to messages sent after a step
/// of its batch, and its server works), and K<K>-g<g> for a layout (its network is its all-reduce
/// over groups of g ranks).
std::string calibration_stem(const Config& c) {
  if (c.allreduce_group >= 2) return fmt::format("K{}-g{}", c.workers, c.allreduce_group);
  if (!asynchronous(c.strategy)) return fmt::format("K{}", c.workers);
  return fmt::format("K{}-async-b{:g}", c.workers, c.batch);
}

// The calibrations of an earlier validate (DIR/<stem>.xml for every stem the configurations
// need), each checked by `tauplan calibrate --check` (a broken file is its one-line error, exit 2).
std::map<std::string, model::Calibration> load_calibrations(const ValidateRequest& a,
                                                            const std::map<std::string, int>& stems,
                                                            const fs::path& out_dir) {
  std::map<std::string, model::Calibration> calibrations;
  for (const auto& [stem, k] : stems) {
    const fs::path file = fs::path(a.calibration_dir) / (stem + ".xml");
    if (!fs::exists(file))
      throw InputError("command line", "--calibration",
                       "a folder holding " + file.filename().string() +
                           ", a calibration of K=" + std::to_string(k) + " workers" +
                           (stem.find("async") != std::string::npos ? ", asynchronous" : "") +
                           " (written by an earlier tauplan validate)",
                       "no " + file.string());
    const std::string err = (out_dir / ("check-" + stem + ".err")).string();
    const std::string res = (out_dir / ("check-" + stem + ".json")).string();
    int status = 0;
    child::run_all({{{"calibrate", "--check", file.string(), "--json"}, res, err}}, 1,
                   [&](size_t, int st) { status = st; });
    if (status != 0) throw passed_on_error(last_line(read_text(err)));
    model::Calibration c = model::calibration_from_json(json::parse(read_text(res)));
    c.hosts = k;       // the configurations' K
    c.slowdowns = {};  // each configuration says which worker is slow
    calibrations[stem] = c;
    fs::remove(err);
    fs::remove(res);
  }
  return calibrations;
}

/// The MLP exec trains for the job, checked to be the workload the calibration describes.
struct Machine {
  model::Workload workload;
  exec::MlpShape shape;
  const exec::Dataset* data = nullptr;
};

Machine machine_of(const model::Job& job) {
  const exec::ExecSettings settings = exec::exec_settings(job);
  Machine m;
  m.workload = load_job_workload(job);
  static const exec::Dataset data = exec::load_dataset(settings.data);
  m.data = &data;
  m.shape = exec::mlp_shape(settings.hidden, data);
  if (m.workload.name != "fashion-mlp" ||
      std::fabs(m.workload.parameters - static_cast<double>(m.shape.parameters())) >
          0.01 * m.workload.parameters)
    throw InputError(job.file, "workload",
                     "fashion-mlp with hidden: [256, 128] (the MLP exec trains; its catalog "
                     "flop per sample converts the calibrated step into a speed)",
                     m.workload.name + " with an MLP of " + std::to_string(m.shape.parameters()) +
                         " parameters");
  return m;
}

/// One calibration's measurements: the workers' steps and combines, and for an asynchronous
/// configuration its exchange with the server (exec/exchange_calibration.hpp).
struct Measured {
  exec::CalibrationMeasurements cpu;
  exec::ExchangeMeasurements exchange;
  std::vector<exec::AllReducePoint> allreduce;  ///< a layout's group all-reduce (its network)
};

/// Micro-measurements of K = config.workers workers, now, around the per-worker batches of the
/// configurations with that K: in lockstep, or stepping at once for a configuration measured on
/// the wall clock; and the exchange of an asynchronous one.
Measured measure_now(const ValidateRequest& a, const model::Job& job, const Machine& m,
                     const std::vector<Config>& configs, const Config& config) {
  const int k = config.workers;
  exec::CalibrationRequest request;
  request.batches = batches_for(configs, k, m.data->train_size());
  request.replicas = k;
  request.steps = std::max(a.calibration_steps, 8 * k);
  const double n = static_cast<double>(m.shape.parameters());
  request.floats = {n / 4, n / 2, n};
  request.seed = static_cast<std::uint64_t>(job.integer("seed"));
  exec::CalibrationMeasurements measured = exec::measure_cpu_calibration(request, *m.data, m.shape);
  // An asynchronous run or a layout is timed on the wall clock with its workers at once: so is
  // its step.
  // A layout's rank steps its micro-batches' passes and then updates once: a step of that many
  // passes of its micro-batch beside them gives a pass's own fixed cost.
  // Its steps are timed with the layout trainer's own code.
  request.layout_code = model::strategy(config.strategy).splits_model();
  if (config.micro_batches > 1 && config.micro_batch >= 1) {
    request.micro_batches = config.micro_batches;
    request.micro_batch = static_cast<int>(config.micro_batch);
  }
  if (wall_clock(config.strategy)) {
    const exec::ConcurrentSteps steps = exec::measure_concurrent_steps(request, *m.data, m.shape);
    measured.steps = steps.steps;
    measured.micro_batches = steps.micro_batches;
    measured.micro_step = steps.micro_step;
  }
  // An asynchronous worker's exchange is two messages and the server's apply, not a combine;
  // each message is sent after a step's time, as the run sends it (the step of the batch size
  // nearest the configuration's).
  exec::ExchangeMeasurements exchange;
  if (asynchronous(config.strategy)) {
    double step_s = 0, nearest = HUGE_VAL;
    for (const exec::StepPoint& p : measured.steps)
      if (std::abs(p.batch - config.batch) < nearest) {
        nearest = std::abs(p.batch - config.batch);
        step_s = p.seconds;
      }
    exchange = exec::measure_thread_exchange(m.shape.parameters(), 15, std::min(step_s, 1.0));
  }
  // A layout's network is its all-reduces, timed as its ranks run them: every group at once, from
  // a tensor group's activations (n / 256 here: a few thousand floats) to a replica's gradient.
  std::vector<exec::AllReducePoint> allreduce;
  if (config.allreduce_group >= 2) {
    const std::size_t p = static_cast<std::size_t>(m.shape.parameters());
    allreduce = exec::measure_thread_allreduce(
        k, config.allreduce_group, {std::max<std::size_t>(16, p / 256), p / 32, p / 4, p}, 15);
  }
  return {measured, exchange, allreduce};
}

/// Point by point, the faster of two calibrations. Contention from outside (a virtual machine's
/// host, another tenant on the core's sibling) only ever adds time, so the faster of a
/// calibration taken just before a measurement and one taken just after it is the machine's own
/// cost: a slow spell during one of them does not become the prediction.
Measured faster_of(const Measured& before, const Measured& after_measurement,
                   bool wall_clock_steps) {
  const exec::CalibrationMeasurements& x = before.cpu;
  const exec::CalibrationMeasurements& y = after_measurement.cpu;
  exec::CalibrationMeasurements out = x;
  // Wall-clock steps (asynchronous runs) count the load other processes put on the cores, which
  // the measurement between the two calibrations bears too: their mean, not the faster.
  for (std::size_t i = 0; i < out.steps.size() && i < y.steps.size(); ++i)
    if (y.steps[i].batch == out.steps[i].batch)
      out.steps[i].seconds = wall_clock_steps ? 0.5 * (out.steps[i].seconds + y.steps[i].seconds)
                                              : std::min(out.steps[i].seconds, y.steps[i].seconds);
  if (out.micro_batches > 1 && y.micro_batches == out.micro_batches &&
      y.micro_step.batch == out.micro_step.batch)  // wall clock, as the steps above
    out.micro_step.seconds = 0.5 * (out.micro_step.seconds + y.micro_step.seconds);
  for (std::size_t i = 0; i < out.combines.size() && i < y.combines.size(); ++i)
    if (y.combines[i].floats == out.combines[i].floats)
      out.combines[i].seconds = std::min(out.combines[i].seconds, y.combines[i].seconds);
  // The exchange and a layout's all-reduce are timed on the wall clock too, under the load the run
  // bears: the mean.
  std::vector<exec::AllReducePoint> allreduce = before.allreduce;
  for (std::size_t i = 0; i < allreduce.size() && i < after_measurement.allreduce.size(); ++i)
    if (after_measurement.allreduce[i].bytes == allreduce[i].bytes)
      allreduce[i].seconds = 0.5 * (allreduce[i].seconds + after_measurement.allreduce[i].seconds);
  return {out, exec::mean_of(before.exchange, after_measurement.exchange), allreduce};
}

/// A layout's all-reduce points fitted to latency + bytes / bandwidth (least squares of the
/// relative residuals: the sizes span two decades) into `cal`'s peer_* fields (its worker links);
/// returns the fit's report. A fit without a positive slope leaves the links as they were and
/// says so.
json fit_peer_allreduce(const std::vector<exec::AllReducePoint>& points, int group,
                        model::Calibration& cal, const std::string& config_name, bool quiet) {
  std::vector<double> bytes, seconds;
  json measured = json::array();
  for (const exec::AllReducePoint& p : points) {
    bytes.push_back(p.bytes);
    seconds.push_back(p.seconds);
    measured.push_back({{"bytes", p.bytes}, {"seconds", p.seconds}});
  }
  const model::LinearFit fit = model::fit_line(bytes, seconds, "<validate calibration>", true);
  json report = {{"group", group},
                 {"points", measured},
                 {"r2", fit.r2},
                 {"max_relative_residual", fit.max_relative_residual}};
  if (!(fit.slope > 0)) {
    if (!quiet)
      std::cerr << "validate: " << config_name << ": the all-reduce over groups of " << group
                << " threads did not grow with its size; the links keep the combine's fit\n";
    return report;
  }
  cal.peer_group = group;
  cal.peer_latency_s = std::max(fit.intercept, 0.0);
  cal.peer_bandwidth_Bps = 1 / fit.slope;
  cal.calibrated_from += fmt::format(
      "; a layout's network: the all-reduce over groups of {} threads, every group at once "
      "(exec/compute_calibration.hpp), mean of before and after the measurement",
      group);
  report["latency_s"] = cal.peer_latency_s;
  report["bandwidth_Bps"] = cal.peer_bandwidth_Bps;
  return report;
}

/// What a configuration's calibration measured, in words (its calibrated_from; a layout's
/// network is added by fit_peer_allreduce).
std::string calibration_source(const Machine& m, const Config& config, const Measured& measured) {
  const int k = config.workers;
  if (model::strategy(config.strategy).splits_model())
    return fmt::format(
        "validate: {} on cpu, {} ranks stepping at once with the layout trainer's "
        "code (wall clock), and a step of {} passes of its micro-batch, mean of "
        "before and after the measurement",
        m.shape.to_string(), k, measured.cpu.micro_batches);
  if (measured.exchange.empty())
    return fmt::format(
        "validate: {} on cpu, lockstep sync rounds of {} replicas (step and threads "
        "combine), faster of before and after the measurement, thread CPU time",
        m.shape.to_string(), k);
  return fmt::format(
      "validate: {} on cpu, {} replicas stepping at once (wall clock); network: "
      "one-way messages between two threads, and the server's apply "
      "(exec/exchange_calibration.hpp), mean of before and after the measurement",
      m.shape.to_string(), k);
}

/// Fits a calibration of the configuration's K from measurements; `report` gets its numbers.
model::Calibration fit_now(const Machine& m, const Config& config, const Measured& measured,
                           json& report, bool quiet = false) {
  const int k = config.workers;
  exec::CpuCalibration cal =
      exec::fit_cpu_calibration(measured.cpu, m.workload, k,
                                calibration_source(m, config, measured), model::utc_now_iso8601());
  json exchange;
  if (!measured.exchange.empty())
    exchange = exec::exchange_json(
        measured.exchange,
        exec::apply_exchange_fit(measured.exchange, model::server_apply_flop(m.workload),
                                 cal.calibration));
  // An exchange-calibrated network does not use the combine's fit: its warnings are not said.
  if (!quiet)
    for (const std::string& w : cal.warnings)
      if (exchange.is_null() || w.rfind("combine", 0) != 0)
        std::cerr << "validate: " << config.name << ": " << w << "\n";
  report = {{"config", config.name},
            {"workers", k},
            {"step_intercept_s", cal.calibration.step_intercept_s},
            {"pass_overhead_s", cal.calibration.pass_overhead_s},
            {"per_sample_s", cal.calibration.per_sample_s},
            {"r2_compute", cal.compute.r2},
            {"step_max_relative_residual", cal.compute.max_relative_residual},
            {"alpha_s", cal.calibration.alpha_s},
            {"beta_Bps", cal.calibration.beta_Bps},
            {"r2_comm", cal.comm.r2},
            {"comm_max_relative_residual", cal.comm.max_relative_residual},
            {"steps", exec::steps_json(cal.measured)},
            {"combines", exec::combines_json(cal.measured)}};
  if (!exchange.is_null()) {  // the network's fit is the messages'
    report["r2_comm"] = exchange["r2_message"];
    report["comm_max_relative_residual"] = exchange["message_max_relative_residual"];
    report["exchange"] = exchange;
  }
  if (measured.cpu.micro_batches > 1)
    report["micro_step"] = {{"micro_batches", measured.cpu.micro_batches},
                            {"batch", measured.cpu.micro_step.batch},
                            {"seconds", measured.cpu.micro_step.seconds}};
  if (!measured.allreduce.empty())
    report["peer_allreduce"] = fit_peer_allreduce(measured.allreduce, config.allreduce_group,
                                                  cal.calibration, config.name, quiet);
  return cal.calibration;
}

/// Writes the platform of one configuration: the calibration, with worker h0 slowed if asked.
std::string write_platform(const Config& config, model::Calibration cal, const fs::path& path) {
  if (config.slow > 1) {
    cal.slowdowns.assign(static_cast<std::size_t>(config.workers), 1.0);
    cal.slowdowns[0] = config.slow;
  }
  write_text(path, model::calibration_xml(cal));
  return path.string();
}

/// The child task that runs `engine` on one configuration.
/// The platform of a configuration calibrated before or after its measurement alone.
std::string variant_platform(const Config& c, const std::string& which) {
  return (fs::path(c.platform).parent_path() /
          (fs::path(c.platform).stem().string() + "-" + which + ".xml"))
      .string();
}

/// The child task that runs `engine` on one configuration (on `platform` when given, else the
/// configuration's calibrated platform; `suffix` tells the output files apart).
child::Task engine_child(const ValidateRequest& a, const Config& c, const model::Engine& engine,
                         const std::string& stem, const std::string& platform = "",
                         const std::string& suffix = "") {
  // One value per key: the job flags, then the swept keys, then what validate fixes.
  std::map<std::string, std::string> keys = a.overrides;
  for (const auto& [key, value] : c.extra)
    keys[key] = value;
  const std::map<std::string, std::string> fixed = {
      {"platform", platform.empty() ? c.platform : platform},
      {"strategies", c.strategy},
      {"workers", std::to_string(c.workers)},
      {"tau", std::to_string(c.tau)},
      {"split", c.split},
      {"collective", validation::machine_collective(c.strategy, c.workers)},
      {"servers", "1"},
      {"communicator", "threads"}};
  for (const auto& [key, value] : fixed)
    keys[key] = value;
  // A job that sweeps layouts beside data-parallel strategies: theirs run at the default layout
  // (a data-parallel strategy refuses layout keys that differ from it).
  if (!model::strategy(c.strategy).uses("tensor_parallel"))
    for (const model::KeySpec& spec : model::layout_job_keys())
      if (spec.name != "micro_batches" && !spec.default_value.empty())
        keys[spec.name] = spec.default_value;
  // An asynchronous strategy or a layout is measured with its workers running at once, on the
  // wall clock.
  if (wall_clock(c.strategy)) keys["timing"] = "concurrent";
  // An engine that takes a network model is the simulator: it runs a few rounds of the plan.
  if (!engine.capabilities().network_models.empty())
    keys["sim_rounds"] = validation::simulated_rounds(c.strategy);
  const std::string name = stem + "-" + engine.verb() + suffix;
  return engine_task(engine, a.job_file, keys, name + ".json", name + ".err");
}

/// What a validation on this machine checks, said in every output (README,
/// experiments/validation/README.md): the measured round is rebuilt from per-op CPU times by the
/// same longest-path rule the analytic engine uses, on a platform calibrated from the same ops.
constexpr const char* kRepeatabilityLabel =
    "repeatability check of the timing model, not a validation of the model: the measured "
    "round is reconstructed in lockstep from per-op thread CPU times by the same longest-path "
    "rule the analytic engine uses, on a platform calibrated from the same ops at the same "
    "sizes; a validation needs workers running concurrently on the wall clock across a real "
    "network (tauplan validate --testbed, experiments/testbed/). Asynchronous strategies and "
    "layouts (mesh) are measured with "
    "their threads running at once on the wall clock, on this machine, without a network";

/// {"measured", each engine's value, "error_<engine>" each}, null where not finite.
json errors_json(double measured, const std::vector<double>& predicted) {
  auto num = [](double v) { return std::isfinite(v) ? json(v) : json(nullptr); };
  json out = {{"measured", num(measured)}};
  for (size_t e = 0; e < predicted.size(); ++e) {
    const std::string& label = validate_engines()[e].label;
    out[label] = num(predicted[e]);
    out["error_" + label] = num(model::relative_error(predicted[e], measured));
  }
  return out;
}

std::string scatter_script(double lo, double hi) {
  std::string body = fmt::format(
      "set title 'tauplan validate: predicted against measured (this machine, lockstep)'\n"
      "set xlabel 'measured (s)'\nset ylabel 'predicted (s)'\n"
      "set logscale xy\nset xrange [{0}:{1}]\nset yrange [{0}:{1}]\n"
      "set key top left\nset grid\n"
      "plot x title 'y = x' with lines lc rgb '#888888'",
      lo, hi);
  // Each engine's round, then each engine's time to target, in validation.csv.
  std::size_t series = 0;
  for (const char* quantity : {"round", "time"})
    for (const Predictor& e : validate_engines()) {
      const bool round = std::string(quantity) == "round";
      body += fmt::format(
          ", \\\n  'validation.csv' using '{0}_measured_s':'{0}_{1}_s' title '{2}, {1}{3}' "
          "with points {4}",
          quantity, e.label, round ? "round" : "time to target", round ? "" : " (LOO)",
          point_style(series++));
    }
  return two_terminals("validate", "scatter", "900,700", body);
}

// Checks the command line: the --slow-worker factors, --calibration-steps, and the keys that
// may not vary (--set) or may not be given at all (validate sets them).
void check_request(const ValidateRequest& a, const std::vector<Axis>& axes) {
  for (double f : a.slow)
    if (!(f >= 1) || !std::isfinite(f))
      throw InputError("command line", "--slow-worker", "factors >= 1", fmt::format("{:g}", f));
  if (a.calibration_steps < 1)
    throw InputError("command line", "--calibration-steps", "a whole number >= 1",
                     std::to_string(a.calibration_steps));
  // What the calibration describes cannot vary between configurations, and what validate sets
  // itself (the calibrated platform and its reducer) cannot be given.
  static const std::set<std::string> fixed_keys = {"workload", "hidden",         "device",
                                                   "timing",   "communicator",   "combine",
                                                   "data_dir", "allow_synthetic"};
  static const std::set<std::string> set_by_validate = {"platform", "collective",  "servers",
                                                        "hosts",    "single_host", "sim_rounds"};
  for (const Axis& axis : axes) {
    if (std::find(unmeasured_keys().begin(), unmeasured_keys().end(), axis.key) !=
        unmeasured_keys().end())
      throw InputError("command line --set", axis.key, unmeasured_expected());
    if (fixed_keys.count(axis.key) || set_by_validate.count(axis.key))
      throw InputError("command line --set", axis.key,
                       "a key that may vary between configurations (the calibration is of one "
                       "workload, MLP, device, timing and combine)");
  }
  for (const auto& [key, value] : a.overrides)
    if (set_by_validate.count(key))
      throw InputError("command line", "--" + key,
                       "no value (validate sets it: the calibrated platform, collective ps, "
                       "servers 1)",
                       value);
}

// Checks that the job runs what validate calibrates: CPU workers in lockstep, the mean combine
// over threads, and a target to reach.
void check_job(const model::Job& job) {
  const exec::ExecSettings settings = exec::exec_settings(job);
  if (settings.device != exec::Device::Cpu)
    throw InputError(job.origin_of("device"), "cpu (validate calibrates CPU workers only so far)",
                     "cuda");
  if (settings.train.timing != exec::Timing::Lockstep)
    throw InputError(job.origin_of("timing"),
                     "lockstep (the calibration times steps as the lockstep clock does)",
                     exec::to_string(settings.train.timing));
  if (settings.train.combine != exec::CombineRule::Mean)
    throw InputError(job.origin_of("combine"), "mean (only the mean combine is calibrated)",
                     exec::to_string(settings.train.combine));
  if (settings.communicator != "auto" && settings.communicator != "threads")
    throw InputError(job.origin_of("communicator"),
                     "threads or auto (only the threads combine is calibrated)",
                     settings.communicator);
  if (!(settings.train.target_accuracy > 0))
    throw InputError(job.origin_of("target_accuracy"), "a target (time to target is validated)");
  for (const std::string& key : unmeasured_keys())
    if (job.has(key) && !job.list(key).empty())
      throw InputError(job.origin_of(key), unmeasured_expected(),
                       fmt::format("{}", fmt::join(job.list(key), ",")));
}

/// What the steps of one validate run share.
struct ValidateRun {
  const ValidateRequest& a;
  model::Job job;
  std::vector<Config> configs;
  fs::path out_dir;
  fs::path cal_dir;                         ///< DIR/calibration: the configurations' platforms
  std::vector<std::string> measured;        ///< each configuration's `measure` output
  json calibration_report = json::array();  ///< each calibration's fit (none when reused)
  int lockstep_cpu = -1;  ///< the CPU lockstep phases were pinned to (-1: none ran, or not pinned)
  /// Whether validate calibrates (before and after each measurement) rather than reusing.
  bool both_calibrations() const { return a.calibration_dir.empty(); }
  /// The file stem of configuration i's runs.
  std::string stem(size_t i) const { return (out_dir / "runs" / fmt::format("{:02}", i)).string(); }
};

// Checks the request and the job, makes the configurations and the output folders.
ValidateRun start_validate(const ValidateRequest& a) {
  const std::vector<model::KeySpec> specs = all_job_keys();
  const std::vector<Axis> axes = parse_sets(a.sets, specs);
  check_request(a, axes);
  ValidateRun run{a, model::load_job(a.job_file, specs, a.overrides), {}, a.out, {}, {}};
  check_job(run.job);
  run.configs = make_configs(a, axes);
  if (run.configs.empty())
    throw InputError(run.job.file, "strategies", "at least one configuration");
  make_folder((run.out_dir / "runs").string(), "--out");
  run.cal_dir = run.out_dir / "calibration";
  make_folder(run.cal_dir.string(), "--out");
  return run;
}

// Calibrates, measures, calibrates again: writes the platform from the faster of the two
// calibrations (the mean for what is timed on the wall clock; each alone beside it, and
// K<K>.xml or K<K>-async-b<b>.xml for reuse); returns the measurement.
std::string measure_between_calibrations(ValidateRun& run, const Machine& machine,
                                         const Config& config, const child::Task& task,
                                         const fs::path& platform) {
  // (The measurement reads only the worker speeds of the platform, the slow worker: no network
  // fit of the exchange, which could only fail there.)
  const Measured before = measure_now(run.a, run.job, machine, run.configs, config);
  json unused;
  write_platform(config, fit_now(machine, config, {before.cpu, {}, {}}, unused, true), platform);
  std::string measured = run_children({task}, 1, "")[0];
  const Measured after = measure_now(run.a, run.job, machine, run.configs, config);
  json report;
  const model::Calibration cal =
      fit_now(machine, config, faster_of(before, after, wall_clock(config.strategy)), report);
  write_platform(config, cal, platform);
  // Both calibrations are kept, so that the error against each can be reported too.
  json unused_before, unused_after;
  write_platform(config, fit_now(machine, config, before, unused_before, true),
                 variant_platform(config, "before"));
  write_platform(config, fit_now(machine, config, after, unused_after, true),
                 variant_platform(config, "after"));
  // Kept for reuse with --calibration: the latest calibration of each K (async: and batch).
  write_text((run.cal_dir / (calibration_stem(config) + ".xml")).string(),
             model::calibration_xml(cal));
  run.calibration_report.push_back(report);
  return measured;
}

// Calibrate (unless reusing), then measure, one configuration at a time: each measurement
// follows its own calibration, so both see the machine in the same state (a virtual machine's
// host takes more or less time away from one minute to the next).
void calibrate_and_measure(ValidateRun& run) {
  const ValidateRequest& a = run.a;
  std::map<std::string, int> stems;
  for (const Config& c : run.configs)
    stems[calibration_stem(c)] = c.workers;
  const std::map<std::string, model::Calibration> reused =
      a.calibration_dir.empty() ? std::map<std::string, model::Calibration>{}
                                : load_calibrations(a, stems, run.out_dir);
  run.measured.assign(run.configs.size(), std::string());
  const Machine machine = machine_of(run.job);
  for (const auto& [stem, cal] : reused)
    if (cal.workload != machine.workload.name)
      throw InputError((fs::path(a.calibration_dir) / (stem + ".xml")).string(), "workload",
                       "the job's workload " + machine.workload.name, cal.workload);
  child::Progress progress("validate: calibrate and measure", run.configs.size(), 0, true);
  for (size_t i = 0; i < run.configs.size(); ++i) {
    Config& config = run.configs[i];
    const fs::path platform = run.cal_dir / fmt::format("{:02}.xml", i);
    config.platform = platform.string();
    const child::Task task = engine_child(a, config, engine("exec"), run.stem(i));
    // Lockstep phases compare thread CPU times taken apart: all on one CPU (cpu_affinity.hpp).
    // Concurrent runs need their cores, and take their calibration the same way.
    std::optional<OneCpu> pinned;
    if (!wall_clock(config.strategy)) {
      pinned.emplace();
      if (run.lockstep_cpu < 0) run.lockstep_cpu = pinned->cpu();
    }
    if (!a.calibration_dir.empty()) {
      write_platform(config, reused.at(calibration_stem(config)), platform);
      run.measured[i] = run_children({task}, 1, "")[0];
    } else {
      run.measured[i] = measure_between_calibrations(run, machine, config, task, platform);
    }
    progress.advance();
  }
  progress.finish();
}

// Predicts and simulates every configuration on its calibrated platform, in parallel (and the
// analytic engine on each calibration alone); returns the outputs, per_config(run) each.
std::vector<std::string> predict_all(const ValidateRun& run) {
  std::vector<child::Task> predict_tasks;
  for (size_t i = 0; i < run.configs.size(); ++i) {
    const std::string stem = run.stem(i);
    for (const Predictor& e : validate_engines())
      predict_tasks.push_back(engine_child(run.a, run.configs[i], *e.engine, stem));
    if (run.both_calibrations())
      for (const char* which : {"before", "after"})
        predict_tasks.push_back(
            engine_child(run.a, run.configs[i], *validate_engines()[closed_form_engine()].engine,
                         stem, variant_platform(run.configs[i], which), std::string("-") + which));
  }
  const int jobs = run.a.jobs > 0 ? run.a.jobs : std::max(1u, std::thread::hardware_concurrency());
  return run_children(predict_tasks, jobs, "predict and simulate");
}

// Reads each configuration's measurement and predictions into its outcome.
std::vector<Outcome> collect_outcomes(const ValidateRun& run,
                                      const std::vector<std::string>& predicted) {
  const std::vector<Predictor>& engines = validate_engines();
  const size_t per_config = engines.size() + (run.both_calibrations() ? 2 : 0);
  std::vector<Outcome> outcomes;
  for (size_t i = 0; i < run.configs.size(); ++i) {
    Outcome o;
    o.config = run.configs[i];
    o.measured = parse_row(run.measured[i], "measure " + run.configs[i].name);
    // A pipeline's critical path runs through every stage: the slowest rank's own compute and
    // waits (what measure reports) do not split it as the engines' critical path does, so only
    // its round is compared.
    if (run.configs[i].pipeline > 1) o.measured.compute_s = o.measured.comm_s = kNaN;
    for (size_t e = 0; e < engines.size(); ++e)
      o.predicted.push_back(
          parse_row(predicted[per_config * i + e],
                    std::string(engines[e].engine->verb()) + " " + o.config.name));
    if (run.both_calibrations()) {
      const size_t at = per_config * i + engines.size();
      o.analytic_before = parse_row(predicted[at], "predict (before) " + o.config.name);
      o.analytic_after = parse_row(predicted[at + 1], "predict (after) " + o.config.name);
    }
    outcomes.push_back(o);
  }
  return outcomes;
}

// Convergence: fits to the configurations that reached the target and predicts each left out
// (rounds_loo, rounds_group, rounds_fit); returns the fit's report.
json fit_rounds(std::vector<Outcome>& outcomes) {
  std::vector<validation::ConvergenceRow> convergence;
  for (const Outcome& o : outcomes) {
    validation::ConvergenceRow row;
    const model::Strategy& strategy = model::strategy(o.config.strategy);
    row.asynchronous = strategy.asynchronous();
    row.counts_rounds = strategy.counts_rounds();
    row.batch = o.config.batch;
    row.workers = o.config.workers;
    row.tau = o.config.tau;
    row.reached = o.measured.reached;
    row.rounds = o.measured.rounds;
    row.local_steps = o.measured.local_steps;
    row.staleness = o.measured.staleness;
    row.predicted_staleness = o.predicted[closed_form_engine()].staleness;
    convergence.push_back(row);
  }
  const json fit_report = validation::fit_convergence(convergence);
  for (size_t i = 0; i < outcomes.size(); ++i) {
    outcomes[i].rounds_loo = convergence[i].rounds_loo;
    outcomes[i].rounds_group = convergence[i].rounds_group;
    outcomes[i].rounds_fit = convergence[i].rounds_fit;
  }
  return fit_report;
}

// Time to target with the leave-one-out (and leave-group-out) count; speedup against single.
void times_and_speedups(std::vector<Outcome>& outcomes) {
  for (Outcome& o : outcomes)
    for (const EngineRow& p : o.predicted) {
      o.time_loo.push_back(o.rounds_loo * p.round_s);
      o.time_group.push_back(o.rounds_group * p.round_s);
      o.speedup.push_back(kNaN);
    }
  for (Outcome& o : outcomes) {
    // Against single with the same other swept keys (batch, learning rate, ...; a layout's own
    // keys left out).
    const Outcome* single = nullptr;
    for (const Outcome& s1 : outcomes)
      if (model::strategy(s1.config.strategy).is_baseline() &&
          s1.config.extra == keys_of(s1.config.strategy, o.config.extra))
        single = &s1;
    if (!single || !o.measured.reached || !single->measured.reached) continue;
    o.speedup_measured = single->measured.total_s / o.measured.total_s;
    for (size_t e = 0; e < o.time_loo.size(); ++e)
      o.speedup[e] = single->time_loo[e] / o.time_loo[e];
  }
}

/// The relative errors of the configurations, one entry each: each engine's (the testbed's
/// schema, validate_support.hpp; comm NaN at K = 1), by validate_engines(), the convergence
/// fit's and the closed form's on each calibration alone; speedup_a (the closed form's) only
/// those that are not single.
struct Errors {
  std::vector<validation::EngineSeries> engines = [] {
    std::vector<validation::EngineSeries> series;
    for (const Predictor& e : validate_engines())
      series.push_back({e.label, {}, {}, {}, {}, {}, {}});
    return series;
  }();
  std::vector<double> speedup_a, rounds_loo, rounds_group, rounds_fit, round_before, round_after;
};

// The measured time to target, NaN when the target was not reached.
double time_measured(const Outcome& o) {
  return o.measured.reached ? o.measured.total_s : kNaN;
}

// The measured rounds to target, NaN when the target was not reached.
double rounds_measured(const Outcome& o) {
  return o.measured.reached ? o.measured.rounds : kNaN;
}

// Appends one configuration's relative errors; returns its engines' entries.
json add_errors(Errors& e, const Outcome& o) {
  json engines = json::object();
  // No configuration here is contended: one machine, no network.
  for (size_t k = 0; k < e.engines.size(); ++k)
    engines[e.engines[k].label] =
        e.engines[k].add(o.predicted[k], o.measured, o.rounds_loo, o.rounds_group, time_measured(o),
                         false, o.config.workers > 1);
  e.round_before.push_back(model::relative_error(o.analytic_before.round_s, o.measured.round_s));
  e.round_after.push_back(model::relative_error(o.analytic_after.round_s, o.measured.round_s));
  if (!model::strategy(o.config.strategy).is_baseline())  // 0 against itself, by construction
    e.speedup_a.push_back(
        model::relative_error(o.speedup[closed_form_engine()], o.speedup_measured));
  e.rounds_loo.push_back(model::relative_error(o.rounds_loo, rounds_measured(o)));
  e.rounds_group.push_back(model::relative_error(o.rounds_group, rounds_measured(o)));
  e.rounds_fit.push_back(model::relative_error(o.rounds_fit, rounds_measured(o)));
  return engines;
}

// A number, or null when it is not finite.
json finite_or_null(double v) {
  return std::isfinite(v) ? json(v) : json(nullptr);
}

// The JSON row of one configuration, given its errors (the last ones added to `e`) and its
// engines' entries.
json result_row(const Outcome& o, const Errors& e, const json& engines) {
  const double rounds = rounds_measured(o), time = time_measured(o);
  return {{"config", o.config.name},
          {"strategy", o.config.strategy},
          {"workers", o.config.workers},
          {"tau", o.config.tau},
          {"batch", o.config.batch},
          {"split", o.config.split},
          {"slow_worker", o.config.slow},
          {"platform", o.config.platform},
          {"reached_target", o.measured.reached},
          {"staleness_mean_measured", finite_or_null(o.measured.staleness)},
          {"local_steps_measured", o.measured.local_steps},
          {"measured",
           {{"compute_s", finite_or_null(o.measured.compute_s)},
            {"comm_s", finite_or_null(o.measured.comm_s)},
            {"round_s", finite_or_null(o.measured.round_s)},
            {"rounds", finite_or_null(rounds)},
            {"time_to_target_s", finite_or_null(time)}}},
          {"engines", engines},
          {"round_s_by_calibration",
           {{"analytic_before", number_or_null(o.analytic_before.round_s)},
            {"analytic_after", number_or_null(o.analytic_after.round_s)},
            {"error_analytic_before", number_or_null(e.round_before.back())},
            {"error_analytic_after", number_or_null(e.round_after.back())}}},
          {"rounds",
           {{"measured", finite_or_null(rounds)},
            {"leave_one_out", finite_or_null(o.rounds_loo)},
            {"leave_group_out", finite_or_null(o.rounds_group)},
            {"fitted", finite_or_null(o.rounds_fit)},
            {"error_leave_one_out", finite_or_null(e.rounds_loo.back())}}},
          {"speedup", errors_json(o.speedup_measured, o.speedup)}};
}

// validation.csv's header: each quantity measured, then by each of validate_engines().
std::string csv_header() {
  std::string header = "config,strategy,workers,tau,batch,split,slow,reached";
  auto by_engine = [&header](const std::string& measured, const std::string& prefix,
                             const std::string& suffix) {
    if (!measured.empty()) header += "," + measured;
    for (const Predictor& e : validate_engines())
      header += "," + prefix + e.label + suffix;
  };
  by_engine("round_measured_s", "round_", "_s");
  by_engine("compute_measured_s", "compute_", "_s");
  by_engine("comm_measured_s", "comm_", "_s");
  header += ",rounds_measured,rounds_loo,rounds_group_out,rounds_fit";
  by_engine("time_measured_s", "time_", "_s");
  by_engine("", "time_group_out_", "_s");
  by_engine("speedup_measured", "speedup_", "");
  return header + "\n";
}

// The CSV line of one configuration (an empty field for a number that is not finite).
std::string csv_line(const Outcome& o) {
  auto c = [](double v) { return std::isfinite(v) ? fmt::format("{:.9g}", v) : std::string(); };
  std::string line = fmt::format("\"{}\",{},{},{},{:g},{},{:g},{}", o.config.name,
                                 o.config.strategy, o.config.workers, o.config.tau, o.config.batch,
                                 o.config.split, o.config.slow, o.measured.reached ? 1 : 0);
  auto by_engine = [&](double measured, bool with_measured, auto value) {
    if (with_measured) line += "," + c(measured);
    for (size_t e = 0; e < o.predicted.size(); ++e)
      line += "," + c(value(e));
  };
  by_engine(o.measured.round_s, true, [&](size_t e) { return o.predicted[e].round_s; });
  by_engine(o.measured.compute_s, true, [&](size_t e) { return o.predicted[e].compute_s; });
  by_engine(o.measured.comm_s, true, [&](size_t e) { return o.predicted[e].comm_s; });
  line += fmt::format(",{},{},{},{}", c(rounds_measured(o)), c(o.rounds_loo), c(o.rounds_group),
                      c(o.rounds_fit));
  by_engine(time_measured(o), true, [&](size_t e) { return o.time_loo[e]; });
  by_engine(kNaN, false, [&](size_t e) { return o.time_group[e]; });
  by_engine(o.speedup_measured, true, [&](size_t e) { return o.speedup[e]; });
  return line + "\n";
}

/// Every configuration's errors, JSON row and CSV line.
struct Table {
  Errors errors;
  json rows = json::array();
  std::string csv = csv_header();
};

// Tabulates the outcomes: errors, JSON rows and validation.csv's text.
Table tabulate(const std::vector<Outcome>& outcomes) {
  Table t;
  for (const Outcome& o : outcomes) {
    const json engines = add_errors(t.errors, o);
    t.rows.push_back(result_row(o, t.errors, engines));
    t.csv += csv_line(o);
  }
  return t;
}

// The medians of the errors over the matrix: each engine's (validate_support.hpp's schema, as
// the testbed's), the convergence fit's, the analytic engine's on each calibration alone.
json summary_json(size_t configurations, const Errors& e) {
  auto med = validation::median_abs_or_null;
  json summary = {{"configurations", configurations},
                  {"median_abs_error_round_analytic_before", med(e.round_before)},
                  {"median_abs_error_round_analytic_after", med(e.round_after)},
                  {"median_abs_error_speedup_analytic", med(e.speedup_a)},
                  {"median_abs_error_rounds_loo", med(e.rounds_loo)},
                  {"median_abs_error_rounds_group_out", med(e.rounds_group)},
                  {"median_abs_error_rounds_fit", med(e.rounds_fit)}};
  for (const validation::EngineSeries& series : e.engines)
    summary[series.label] = series.summary_json();
  return summary;
}

// The same medians for each strategy on its own (asynchronous and time-budget runs differ
// from the synchronous ones in what is measured: wall clock, real per-worker steps).
json by_strategy_json(const std::vector<Outcome>& outcomes, const Errors& e) {
  json by_strategy = json::object();
  for (const Outcome& o : outcomes) {
    const std::string& name = o.config.strategy;
    if (by_strategy.contains(name)) continue;
    std::vector<size_t> members;
    for (size_t i = 0; i < outcomes.size(); ++i)
      if (outcomes[i].config.strategy == name) members.push_back(i);
    auto med = validation::median_abs_or_null;
    auto median_of = [&](const std::vector<double>& errors) {
      std::vector<double> picked;
      for (size_t i : members)
        picked.push_back(errors[i]);
      return med(picked);
    };
    json entry = {{"configurations", members.size()},
                  {"median_abs_error_rounds_loo", median_of(e.rounds_loo)}};
    for (const validation::EngineSeries& series : e.engines)
      entry[series.label] = {{"median_abs_error_round", median_of(series.round)},
                             {"median_abs_error_time_to_target_loo", median_of(series.time_loo)}};
    by_strategy[name] = entry;
  }
  return by_strategy;
}

// The measurement and the engines that predict it.
json engines_json() {
  json names = {"exec-cpu (lockstep, thread CPU time)"};
  for (const Predictor& e : validate_engines())
    names.push_back(e.label);
  return names;
}

// What was run, on what, and what kind of check it is.
json validate_context(const ValidateRun& run) {
  return {{"verb", "validate"},
          {"job_file", run.job.file},
          {"engines", engines_json()},
          {"network_model",
           "calibrated threads combine as a parameter server with one reducer "
           "(collective ps, servers 1; one synchronous worker: ring, which moves nothing, as "
           "the threads communicator combines nothing); async-ps: messages between threads and "
           "the server's apply, calibrated (exec/exchange_calibration.hpp); simgrid CM02"},
          {"platforms", (run.out_dir / "calibration").string()},
          {"seed", run.job.integer("seed")},
          {"commit", model::tauplan_git_commit()},
          {"date", model::utc_now_iso8601()},
          {"timing",
           "lockstep: measured time is reconstructed (virtual clock), not "
           "concurrent, its calibrations and measurement on one CPU (lockstep_cpu; null: "
           "not pinned); "
           "asynchronous strategies (async-ps) and layouts (mesh): "
           "concurrent threads, wall clock, evaluation left out"},
          {"lockstep_cpu", run.lockstep_cpu >= 0 ? json(run.lockstep_cpu) : json(nullptr)},
          {"kind", kRepeatabilityLabel}};
}

// Draws predicted against measured (DIR/scatter.gp, .png, .svg) unless --no-plot; returns the
// notes (gnuplot missing ...).
std::vector<std::string> plot_scatter(const ValidateRun& run,
                                      const std::vector<Outcome>& outcomes) {
  std::vector<std::string> notes;
  if (run.a.no_plot) return notes;
  double lo = HUGE_VAL, hi = 0;
  for (const Outcome& o : outcomes) {
    std::vector<double> values = {o.measured.round_s, o.measured.total_s};
    for (size_t e = 0; e < o.predicted.size(); ++e) {
      values.push_back(o.predicted[e].round_s);
      values.push_back(o.time_loo[e]);
    }
    for (double v : values)
      if (std::isfinite(v) && v > 0) lo = std::min(lo, v), hi = std::max(hi, v);
  }
  if (hi > 0) {
    write_text((run.out_dir / "scatter.gp").string(), scatter_script(lo / 1.5, hi * 1.5));
    run_gnuplot(run.out_dir, "scatter.gp", notes);
  }
  return notes;
}

// The table printed: one line per configuration, measured against predicted.
std::string table_text(const std::vector<Outcome>& outcomes, const Errors& e) {
  std::string out = fmt::format("note: {}\n", kRepeatabilityLabel);
  out += fmt::format("{:<28} {:>9}", "configuration", "round ms");
  for (const validation::EngineSeries& series : e.engines)
    out += fmt::format(" {:>9} {:>8}", series.label, "err");
  out += fmt::format(" {:>6} {:>7} {:>8} {:>9}", "rounds", "LOO", "err", "time s");
  // The time to target's error by engine, headed by the engine's initial ("err a", "err s").
  for (const validation::EngineSeries& series : e.engines)
    out += fmt::format(" {:>8}", "err " + series.label.substr(0, 1));
  out += fmt::format(" {:>8}\n", "speedup");
  for (size_t i = 0; i < outcomes.size(); ++i) {
    const Outcome& o = outcomes[i];
    out += fmt::format("{:<28} {:>9}", o.config.name, ms(o.measured.round_s));
    for (size_t k = 0; k < e.engines.size(); ++k)
      out +=
          fmt::format(" {:>9} {:>8}", ms(o.predicted[k].round_s), pct_text(e.engines[k].round[i]));
    out += fmt::format(" {:>6} {:>7} {:>8} {:>9}",
                       o.measured.reached ? fmt::format("{:g}", o.measured.rounds) : "-",
                       std::isfinite(o.rounds_loo) ? fmt::format("{:.0f}", o.rounds_loo) : "n/a",
                       pct_text(e.rounds_loo[i]),
                       o.measured.reached ? fmt::format("{:.3f}", o.measured.total_s) : "-");
    for (const validation::EngineSeries& series : e.engines)
      out += fmt::format(" {:>8}", pct_text(series.time_loo[i]));
    out += fmt::format(" {:>8}\n", std::isfinite(o.speedup_measured)
                                       ? fmt::format("{:.2f}", o.speedup_measured)
                                       : "-");
  }
  return out;
}

// The medians printed under the table.
std::string medians_text(size_t configurations, const json& summary) {
  const auto m = validation::pct_or_na;
  // "analytic 2.6%, simgrid 2.6%": one summary key, each engine's.
  auto each = [&summary, &m](const char* key) {
    std::string text;
    for (const Predictor& e : validate_engines())
      text += (text.empty() ? "" : ", ") + e.label + " " + m(summary[e.label][key]);
    return text;
  };
  const json& closed_form = summary[validate_engines()[closed_form_engine()].label];
  std::string out = fmt::format(
      "median |error| over {} configurations: round time {}; time to target (leave-one-out) {}, "
      "(leave-group-out) {}; speedup {}; rounds leave-one-out {}, leave-group-out {}, "
      "in-sample fit {}\n",
      configurations, each("median_abs_error_round"), each("median_abs_error_time_to_target_loo"),
      each("median_abs_error_time_to_target_group_out"),
      m(summary["median_abs_error_speedup_analytic"]), m(summary["median_abs_error_rounds_loo"]),
      m(summary["median_abs_error_rounds_group_out"]), m(summary["median_abs_error_rounds_fit"]));
  out += fmt::format(
      "median |error| of compute per step: {}; of comm per round: {}; round time on the "
      "calibration taken before the measurement {}, after it {}, the faster of the two (above) "
      "{}\n",
      each("median_abs_error_compute"), each("median_abs_error_comm"),
      m(summary["median_abs_error_round_analytic_before"]),
      m(summary["median_abs_error_round_analytic_after"]),
      m(closed_form["median_abs_error_round"]));
  return out;
}

// With --max-round-error, the first median round-time error beyond it ("" when none).
std::string exceeded_bound(const ValidateRequest& a, const json& summary) {
  if (a.max_round_error < 0) return "";
  for (const Predictor& p : validate_engines()) {
    const std::string& engine = p.label;
    const json& v = summary[engine]["median_abs_error_round"];
    if (!v.is_number() || 100 * v.get<double>() > a.max_round_error)
      return fmt::format(
          "{}'s median |round error| = {} exceeds --max-round-error {}%", engine,
          v.is_number() ? fmt::format("{:.2f}%", 100 * v.get<double>()) : std::string("n/a"),
          a.max_round_error);
  }
  return "";
}

}  // namespace

const std::vector<std::string>& unmeasured_keys() {
  static const std::vector<std::string> keys = {"stragglers", "failures", "beside_hosts"};
  return keys;
}

std::string unmeasured_expected() {
  return "none (the measured runs have none to compare with; --slow-worker slows a measured "
         "worker and its prediction alike)";
}

ValidateOutcome run_validate(const ValidateRequest& a) {
  ValidateRun run = start_validate(a);
  // Calibrate and measure one configuration at a time; then predict and simulate every
  // configuration on its calibrated platform, in parallel.
  calibrate_and_measure(run);
  std::vector<Outcome> outcomes = collect_outcomes(run, predict_all(run));
  const json fit_report = fit_rounds(outcomes);
  times_and_speedups(outcomes);

  const Table table = tabulate(outcomes);
  const json summary = summary_json(outcomes.size(), table.errors);
  const json by_strategy = by_strategy_json(outcomes, table.errors);
  const json report = {
      {"context", validate_context(run)},   {"calibration", run.calibration_report},
      {"convergence_fit", fit_report},      {"summary", summary},
      {"summary_by_strategy", by_strategy}, {"results", table.rows}};
  write_text((run.out_dir / "validation.json").string(), report.dump(2) + "\n");
  write_text((run.out_dir / "validation.csv").string(), table.csv);

  ValidateOutcome outcome;
  outcome.report = report;
  outcome.notes = plot_scatter(run, outcomes);
  outcome.text = table_text(outcomes, table.errors) + medians_text(outcomes.size(), summary);
  outcome.notes.insert(outcome.notes.begin(), "wrote " +
                                                  (run.out_dir / "validation.json").string() +
                                                  ", " + (run.out_dir / "validation.csv").string() +
                                                  (a.no_plot ? "" : " and scatter.png/.svg"));
  outcome.exceeded = exceeded_bound(a, summary);
  return outcome;
}

}  // namespace tauplan::study
